package postgres

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// skeleton is what a generated tick carries of each kind of row, and
// which of its hashes are canonical: everything the appended statement's
// text may depend on. tickOf fills it with drawn values.
type skeleton struct {
	intents      []bool // begun with their tick
	dupIntent    bool   // the last intent repeats the first one's id
	results      []bool // closed by their receipt in the tick
	receipts     int    // receipts of intents without a result in the tick
	beginOld     int    // begins of intents not new in the tick
	submit       int
	consume      int
	events       []bool // the event's digest is canonical
	headCanon    bool   // the run's head hash is canonical
	checkpoint   bool
	trace        int
	inboxEmpty   bool
	state        string
	withTime     bool // the tick's time is known (the two-round-trip path)
	head, cps, t int64
}

func drawSkeleton(t *rapid.T) skeleton {
	bools := func(label string, max int) []bool {
		return rapid.SliceOfN(rapid.Bool(), 0, max).Draw(t, label)
	}
	return skeleton{
		intents:    bools("intents", 3),
		dupIntent:  rapid.IntRange(0, 5).Draw(t, "dupIntent") == 0,
		results:    bools("results", 3),
		receipts:   rapid.IntRange(0, 1).Draw(t, "receipts"),
		beginOld:   rapid.IntRange(0, 1).Draw(t, "beginOld"),
		submit:     rapid.IntRange(0, 2).Draw(t, "submit"),
		consume:    rapid.IntRange(0, 1).Draw(t, "consume"),
		events:     bools("events", 3),
		headCanon:  rapid.Bool().Draw(t, "headCanon"),
		checkpoint: rapid.Bool().Draw(t, "checkpoint"),
		trace:      rapid.IntRange(0, 2).Draw(t, "trace"),
		inboxEmpty: rapid.Bool().Draw(t, "inboxEmpty"),
		state:      rapid.SampledFrom([]string{"", "waiting"}).Draw(t, "state"),
		withTime:   rapid.Bool().Draw(t, "withTime"),
		head:       rapid.Int64Range(0, 1000).Draw(t, "head"),
		cps:        rapid.Int64Range(0, 9).Draw(t, "cps"),
		t:          rapid.Int64Range(0, 99).Draw(t, "trace records"),
	}
}

// nextTo returns k with one of its parts drawn again.
func (k skeleton) nextTo(t *rapid.T) skeleton {
	o := drawSkeleton(t)
	flip := func(bs []bool) []bool {
		bs = append([]bool(nil), bs...)
		if len(bs) > 0 {
			i := rapid.IntRange(0, len(bs)-1).Draw(t, "flip")
			bs[i] = !bs[i]
		}
		return bs
	}
	switch rapid.IntRange(0, 9).Draw(t, "part") {
	case 0:
		k.intents = flip(k.intents)
	case 1:
		k.results = flip(k.results)
	case 2:
		k.events = flip(k.events)
	case 3:
		k.headCanon = !k.headCanon
	case 4:
		k.checkpoint = !k.checkpoint
	case 5:
		k.trace = o.trace
	case 6:
		k.inboxEmpty = !k.inboxEmpty
	case 7:
		k.submit = o.submit
	case 8:
		k.dupIntent = !k.dupIntent
	case 9:
		k.withTime, k.head, k.cps, k.t = o.withTime, o.head, o.cps, o.t
	}
	return k
}

// tickOf returns a tick of skeleton k with drawn ids, bodies and hashes,
// and what queueTick takes with it.
func tickOf(t *rapid.T, k skeleton, label string) (store.Tick, runHead, []int64, any) {
	str := func(what string) string { return rapid.StringMatching(`[a-z0-9:]{0,12}`).Draw(t, label+what) }
	body := func(what string) []byte { return rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, label+what) }
	hash := func(canonical bool, what string) string {
		if canonical {
			return hashPrefix + fmt.Sprintf("%064x", rapid.Uint64().Draw(t, label+what))
		}
		return "x" + str(what)
	}
	id := func(kind string, i int) string { return str("prefix") + "/" + kind + itoa(i) }
	var tick store.Tick
	var begin []int64
	for i, begun := range k.intents {
		in := store.Intent{ID: id("intent", i), EffectType: str("effect"), IdempotencyKey: str("key"), ContentDigest: str("content"),
			ApprovalID: rapid.SampledFrom([]string{"", "approval"}).Draw(t, label+"approval"), Body: body("intent body"), Digest: str("digest")}
		if k.dupIntent && i > 0 && i == len(k.intents)-1 {
			in.ID = tick.Intents[0].ID
		}
		tick.Intents = append(tick.Intents, in)
		if begun {
			tick.Begin = append(tick.Begin, in.ID)
			begin = append(begin, 1)
		}
	}
	for i := 0; i < k.beginOld; i++ {
		tick.Begin = append(tick.Begin, id("old", i))
		begin = append(begin, rapid.Int64Range(1, 5).Draw(t, label+"attempt"))
	}
	for i, closed := range k.results {
		r := store.AttemptResult{IntentID: id("result", i), N: rapid.Int64Range(1, 5).Draw(t, label+"n"),
			Status: store.AttemptStatus(str("status")), Detail: str("detail"), Outbox: store.OutboxStatus(str("outbox")), Route: str("route")}
		tick.Results = append(tick.Results, r)
		if closed {
			tick.Receipts = append(tick.Receipts, store.Receipt{IntentID: r.IntentID, Outcome: str("outcome"), Body: body("receipt body"), Digest: str("digest")})
		}
	}
	for i := 0; i < k.receipts; i++ {
		tick.Receipts = append(tick.Receipts, store.Receipt{IntentID: id("receipt", i), Outcome: str("outcome"), Body: body("receipt body"), Digest: str("digest")})
	}
	for i := 0; i < k.submit; i++ {
		in := store.Inbound{ID: id("inbound", i), Kind: str("kind"), ActorRole: str("role"), Actor: str("actor"), Capability: str("cap"), Body: body("inbound body"), Digest: str("digest")}
		tick.Submit = append(tick.Submit, in)
		tick.Consume = append(tick.Consume, in.ID)
	}
	for i := 0; i < k.consume; i++ {
		tick.Consume = append(tick.Consume, id("consume", i))
	}
	for _, canonical := range k.events {
		tick.Events = append(tick.Events, store.Event{Kind: str("kind"), Body: body("event body"), Digest: hash(canonical, "event digest")})
	}
	if k.checkpoint {
		tick.Checkpoint = &store.Checkpoint{FormatVersion: rapid.Int64Range(1, 3).Draw(t, label+"format"), BuildDigest: str("build"), Body: body("checkpoint body"), Digest: str("digest")}
	}
	for i := 0; i < k.trace; i++ {
		tick.Trace = append(tick.Trace, store.TraceRecord{Kind: str("trace kind"), Body: body("trace body")})
	}
	tick.ExpectInboxEmpty, tick.State = k.inboxEmpty, k.state
	h := runHead{head: k.head, hash: hash(k.headCanon, "head hash"), checkpoints: k.cps, trace: k.t}
	var ts any
	if k.withTime {
		ts = rapid.Int64().Draw(t, label+"time")
	}
	return tick, h, begin, ts
}

// queued returns what queueTick queues for tick on s.
func queued(t *rapid.T, s *Store, tick store.Tick, h runHead, begin []int64, ts any, state string) []*wtxQuery {
	tx := &wtx{}
	lease := store.Lease{RunID: "run", Owner: "owner", Generation: 3}
	if err := s.queueTick(tx, lease, tick, &h, chainOf(h.hash, h.head, tick.Events), state, begin, ts); err != nil {
		t.Fatalf("queueTick: %v", err)
	}
	var out []*wtxQuery
	for _, q := range tx.pending {
		out = append(out, &wtxQuery{sql: q.SQL, args: q.Arguments})
	}
	return out
}

type wtxQuery struct {
	sql  string
	args []any
}

// TestAppendsByShape: a store that has seen ticks of other shapes (and of
// the same one) queues, for a tick, byte-identical statements with the
// same parameters as a store that has seen nothing, which builds every
// text afresh; a tick of a shape seen reuses the text kept for it.
func TestAppendsByShape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		warm := &Store{}
		var k skeleton
		for i, n := 0, rapid.IntRange(1, 8).Draw(t, "ticks"); i < n; i++ {
			if i == 0 || rapid.Bool().Draw(t, "fresh") {
				k = drawSkeleton(t)
			} else {
				k = k.nextTo(t) // most likely the same shape or one next to it
			}
			tick, h, begin, ts := tickOf(t, k, fmt.Sprint("tick ", i, " "))
			state := ""
			if k.withTime {
				state = "running"
			}
			cold := queued(t, &Store{}, tick, h, begin, ts, state)
			seen := warm.shapes.len()
			got := queued(t, warm, tick, h, begin, ts, state)
			if len(got) != len(cold) {
				t.Fatalf("tick %d: %d statements from a store that has seen others, %d afresh", i, len(got), len(cold))
			}
			for j := range got {
				if got[j].sql != cold[j].sql {
					t.Fatalf("tick %d, statement %d:\n%s\nafresh:\n%s", i, j, got[j].sql, cold[j].sql)
				}
				if !reflect.DeepEqual(got[j].args, cold[j].args) {
					t.Fatalf("tick %d, statement %d: parameters %#v, afresh %#v", i, j, got[j].args, cold[j].args)
				}
			}
			// The same tick again takes the text kept for its shape.
			again := queued(t, warm, tick, h, begin, ts, state)
			if n := warm.shapes.len(); n > seen+1 {
				t.Fatalf("tick %d: %d shapes kept, was %d", i, n, seen)
			}
			for j := range again {
				if again[j].sql != got[j].sql {
					t.Fatalf("tick %d, statement %d differs when queued again", i, j)
				}
				// (A tick's one input alone is appended in the text
				// submitSQL has.)
				if again[j].sql != submitSQL || unsafe.StringData(again[j].sql) != unsafe.StringData(submitSQL) {
					if kept := keptText(warm, again[j].sql); kept != "" && unsafe.StringData(kept) != unsafe.StringData(again[j].sql) {
						t.Fatalf("tick %d, statement %d: text built again for a shape seen", i, j)
					}
				}
			}
		}
	})
}

// keptText returns the text warm keeps equal to sql, if any.
func keptText(s *Store, sql string) string {
	s.shapes.mu.RLock()
	defer s.shapes.mu.RUnlock()
	for _, kept := range s.shapes.m { //flrh:orderfree at most one text is equal
		if kept == sql {
			return kept
		}
	}
	return ""
}

// TestAppendsPastBound: past maxShapes a new shape is built each time,
// and its text is what a store that has seen nothing builds.
func TestAppendsPastBound(t *testing.T) {
	full := &Store{}
	for i := 0; i < maxShapes; i++ {
		full.shapes.put(shape{parts: uint16(1000 + i)}, "SELECT 'not this'")
	}
	rapid.Check(t, func(t *rapid.T) {
		k := drawSkeleton(t)
		tick, h, begin, ts := tickOf(t, k, "")
		cold := queued(t, &Store{}, tick, h, begin, ts, "")
		for round := 0; round < 2; round++ {
			got := queued(t, full, tick, h, begin, ts, "")
			if !reflect.DeepEqual(got, cold) {
				t.Fatalf("round %d: a store past its bound queued\n%v\nafresh\n%v", round, got, cold)
			}
		}
		if n := full.shapes.len(); n != maxShapes {
			t.Fatalf("%d shapes kept past the bound of %d", n, maxShapes)
		}
	})
}

// TestAppendsWide: a tick with more merged intents than a shape counts is
// built each time, never kept.
func TestAppendsWide(t *testing.T) {
	s := &Store{}
	var tick store.Tick
	for i := 0; i < maxMerged+2; i++ {
		tick.Intents = append(tick.Intents, store.Intent{ID: "intent" + itoa(i), IdempotencyKey: "key" + itoa(i)})
	}
	tick.Events = []store.Event{{Kind: "k", Digest: hashPrefix + strings.Repeat("0", 64)}}
	lease := store.Lease{RunID: "run", Owner: "owner", Generation: 1}
	var sqls []string
	for round := 0; round < 2; round++ {
		tx := &wtx{}
		h := runHead{hash: hashPrefix + strings.Repeat("1", 64)}
		if err := s.queueTick(tx, lease, tick, &h, chainOf(h.hash, 0, tick.Events), "", nil, nil); err != nil {
			t.Fatal(err)
		}
		if len(tx.pending) != 1 {
			t.Fatalf("%d statements, want the appended one", len(tx.pending))
		}
		sqls = append(sqls, tx.pending[0].SQL)
		if n := len(tx.pending[0].Arguments); n != 10*len(tick.Intents)+1+9 {
			t.Fatalf("%d parameters", n)
		}
	}
	if sqls[0] != sqls[1] || !strings.Contains(sqls[0], "i"+itoa(maxMerged+1)+" AS (INSERT INTO intents") {
		t.Fatalf("wide statement:\n%s", sqls[0])
	}
	if n := s.shapes.len(); n != 0 {
		t.Fatalf("%d shapes kept for a wide tick", n)
	}
}
