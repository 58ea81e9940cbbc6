package workflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// Every test in this package runs with each cached state checked against
// the decoding of its document: the cache must hand Decide exactly the
// state a replay without it would decode.
func init() {
	verifyCachedState = func(w *Workflow, stateJSON []byte, st *state) error {
		want, err := decodeState(stateJSON)
		if err != nil {
			return fmt.Errorf("cached state: its document does not decode: %w", err)
		}
		// The flag only says the snapshot bytes are canonical, which a
		// decoded document does not assume: hold the cached state to
		// the claim, then compare the contents.
		if st.canonSnapshot {
			if c, ok := appendNested(nil, st.Snapshot); !ok || !bytes.Equal(c, st.Snapshot) {
				return fmt.Errorf("cached state: the snapshot is marked canonical and is not:\n%s", st.Snapshot)
			}
		}
		// The kernel snapshot kept with the state is the one its bytes
		// parse to.
		if st.parsed != nil {
			snap, err := kernel.ParseSnapshot(w.domain, st.Snapshot)
			if err != nil || !reflect.DeepEqual(snap, *st.parsed) {
				return fmt.Errorf("cached state: the kept kernel snapshot differs from its bytes' (%v):\n%#v\n%#v", err, *st.parsed, snap)
			}
		}
		// A machine kept with a pending request is the one deciding its
		// batch again with the grant gives.
		for _, pd := range st.Pending {
			if pd.approved == nil {
				continue
			}
			pd2 := pd
			pd2.approved = nil
			m, ok := w.approvedMachine(pd2)
			if !ok || !reflect.DeepEqual(m, *pd.approved) {
				return fmt.Errorf("cached state: the machine kept for %s differs from H's with the grant (%v):\n%#v\n%#v", pd.RequestID, ok, *pd.approved, m)
			}
		}
		// Bytes kept to hand the kernel are what the snapshot kept with
		// them encodes to.
		if st.kernelBytes {
			if st.parsed == nil {
				return fmt.Errorf("cached state: kernel bytes kept without their snapshot")
			}
			if b, err := st.parsed.MarshalJSON(); err != nil || !bytes.Equal(b, st.Snapshot) {
				return fmt.Errorf("cached state: the kept kernel bytes are not the snapshot's (%v):\n%s\n%s", err, st.Snapshot, b)
			}
		}
		// A digest kept with them is theirs.
		if st.snapDigest != "" {
			sum := sha256.Sum256(st.Snapshot)
			if !st.kernelBytes || st.snapDigest != "sha256:"+hex.EncodeToString(sum[:]) {
				return fmt.Errorf("cached state: the kept snapshot digest %s is not its bytes' (kernel bytes %v)", st.snapDigest, st.kernelBytes)
			}
		}
		// Each support's kept object is what it encodes to, cut from the
		// document it is cached under.
		for _, s := range st.Supports {
			if s.enc == nil {
				continue
			}
			if b, ok := appendSupport(nil, &s); !ok || !bytes.Equal(b, s.enc) {
				return fmt.Errorf("cached state: support %s keeps\n%s\nwhich is not its object\n%s", s.ID, s.enc, b)
			}
			if !bytes.Contains(stateJSON, s.enc) {
				return fmt.Errorf("cached state: support %s keeps bytes its document does not hold", s.ID)
			}
		}
		// The journey's kept entries are what the entries they keep
		// encode to, cut from the document, and those entries the
		// machine's.
		if st.journeyOf != nil {
			b, at, end, err := mrp.Machine{Journey: st.journeyOf}.AppendCanonicalKept(nil, nil, 0)
			if err != nil || !bytes.Equal(b[at:end], st.journeyKept) {
				return fmt.Errorf("cached state: the kept journey\n%s\nis not its entries'\n%s (%v)", st.journeyKept, b, err)
			}
			if !bytes.Contains(stateJSON, st.journeyKept) {
				return fmt.Errorf("cached state: kept journey bytes its document does not hold")
			}
			if !reflect.DeepEqual(st.journeyOf, st.Machine.Journey) {
				return fmt.Errorf("cached state: the kept journey's entries are not the machine's")
			}
		}
		// A kept aggregate id is one the state's snapshot holds, as an
		// interface value holding its string.
		if st.aggregateValue != nil {
			snap, err := kernel.ParseSnapshot(w.domain, st.Snapshot)
			if id, ok := st.aggregateValue.(string); err != nil || !ok || id != snap.AggregateID {
				return fmt.Errorf("cached state: the kept aggregate id %#v is not its snapshot's (%v)", st.aggregateValue, err)
			}
		}
		// A state that owns its supports' array holds it alone: no
		// other state cached holds any part of it (a tick appends to
		// it in place).
		if st.ownSupports && len(st.Supports) > 0 {
			if err := ownsSupportsAlone(w, st); err != nil {
				return err
			}
		}
		got := *st
		got.aggregateValue, got.ownSupports = nil, false
		got.canonSnapshot, got.parsed, got.kernelBytes, got.snapDigest, got.supportsEnd = false, nil, false, "", 0
		got.journeyKept, got.journeyOf, got.journeyAt, got.journeyEnd = nil, nil, 0, 0
		if st.Supports != nil {
			got.Supports = make([]support, len(st.Supports))
			for i, s := range st.Supports {
				s.enc, s.at = nil, 0
				got.Supports[i] = s
			}
		}
		if st.Pending != nil {
			got.Pending = make([]pending, len(st.Pending))
			for i, pd := range st.Pending {
				pd.approved = nil
				got.Pending[i] = pd
			}
		}
		if !reflect.DeepEqual(want, &got) {
			return fmt.Errorf("cached state differs from its decoded document:\n%#v\n%#v", st, want)
		}
		return nil
	}
}

// A tick leaves the state it encoded in the cache, and the next tick from
// that document takes it (and decides as without the cache: see
// TestCacheIsTransparent, which runs with the check above).
func TestStateCacheIsUsed(t *testing.T) {
	w := compileExample(t, "refund-agent")
	s0, err := w.Init("run-state-cache")
	if err != nil {
		t.Fatal(err)
	}
	r1, err := w.Decide(s0, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "late")})
	if err != nil || r1.Refusal != "" {
		t.Fatalf("first tick: %v %q", err, r1.Refusal)
	}
	key := string(r1.State)
	if e, ok := w.cache.m[key]; !ok || e.st == nil {
		t.Fatal("the first tick left no state in the cache")
	}
	r2, err := w.Decide(r1.State, Input{Seq: 2, Kind: KindInput, Body: refundInput("r-2", 50, "mallory", "goodwill")})
	if err != nil || r2.Refusal != "" {
		t.Fatalf("second tick: %v %q", err, r2.Refusal)
	}
	if _, ok := w.cache.m[key]; ok {
		t.Fatal("the second tick did not take the cached state and its materialization")
	}
	// Taken once: the same document again decodes, evaluates its
	// supports, and decides the same.
	r3, err := w.Decide(r1.State, Input{Seq: 2, Kind: KindInput, Body: refundInput("r-2", 50, "mallory", "goodwill")})
	if x, y := resultBytes(t, r2, nil), resultBytes(t, r3, err); !bytes.Equal(x, y) {
		t.Fatalf("deciding the same document again differs\n%s\n%s", x, y)
	}
}

// A tick that refuses its input before L leaves the materialization it
// took for the next input from the same state; the state itself, which
// the tick may have changed, is decoded again.
func TestRefusalKeepsMaterialization(t *testing.T) {
	w := compileExample(t, "refund-agent")
	s0, _ := w.Init("run-state-cache")
	r1, err := w.Decide(s0, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "late")})
	if err != nil || r1.Refusal != "" {
		t.Fatalf("first tick: %v %q", err, r1.Refusal)
	}
	key := string(r1.State)
	refused, err := w.Decide(r1.State, Input{Seq: 2, Kind: KindInput, Body: []byte(`{"type":"refund.requested/1"}`)})
	if err != nil || refused.Refusal == "" {
		t.Fatalf("a malformed input was not refused: %v", err)
	}
	if e, ok := w.cache.m[key]; !ok || e.st != nil || e.mat == nil {
		t.Fatal("the refusal did not leave the materialization (alone) in the cache")
	}
	in := Input{Seq: 2, Kind: KindInput, Body: refundInput("r-2", 50, "mallory", "goodwill")}
	r2, err := w.Decide(r1.State, in)
	plain := *w
	plain.cache, plain.empty = nil, nil
	r3, err3 := plain.Decide(r1.State, in)
	if x, y := resultBytes(t, r2, err), resultBytes(t, r3, err3); !bytes.Equal(x, y) {
		t.Fatalf("deciding from the kept materialization differs\n%s\n%s", x, y)
	}
}

// The cache's entries are values: a materialization handed back to a
// document whose entry was made again in the meantime (its state put
// there, none cached with it) is written into the entry, and the entry's
// state stays.
func TestPutBackFillsAnEntryWithoutOne(t *testing.T) {
	w := compileExample(t, "refund-agent")
	c := newMatCache()
	doc := []byte(`{"doc":1}`)
	st := &state{}
	c.put(doc, nil, st)
	key, got, mat := c.take(doc)
	if got != st || mat != nil || key != string(doc) {
		t.Fatal("take did not return the state put")
	}
	c.put(doc, nil, st)
	c.putBack(key, w.empty.Clone())
	if e, ok := c.m[key]; !ok || e.st != st || e.mat == nil || e.key != key {
		t.Fatalf("the entry after putBack: %+v", e)
	}
	if c.get(key) == nil {
		t.Fatal("no materialization to clone after putBack")
	}
	c.putBack("other", w.empty.Clone())
	if e, ok := c.m["other"]; !ok || e.st != nil || e.mat == nil {
		t.Fatalf("putBack of a document not there: %+v", e)
	}
}

// A run that is over leaves its materialization in the cache, and the
// next run's first tick copies the empty materialization into it: each
// decides byte for byte as a workflow without the cache.
func TestFinishedRunsMaterializationIsReused(t *testing.T) {
	w := compileExample(t, "refund-agent")
	plain := *w
	plain.cache, plain.empty = nil, nil
	for i := range 3 {
		id := fmt.Sprintf("run-spare-%d", i)
		in := Input{Seq: 1, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", i), int64(20+i), "alice", "late")}
		s0, _ := w.Init(id)
		r1, err := w.Decide(s0, in)
		if i > 0 && len(w.cache.husks) != 0 {
			t.Fatalf("run %d: the first tick left the finished run's materialization unused", i)
		}
		p0, _ := plain.Init(id)
		p1, perr := plain.Decide(p0, in)
		if x, y := resultBytes(t, r1, err), resultBytes(t, p1, perr); !bytes.Equal(x, y) {
			t.Fatalf("run %d: first tick differs\n%s\n%s", i, x, y)
		}
		if err != nil || r1.Refusal != "" || len(r1.Effects) != 1 {
			t.Fatalf("run %d: first tick %v %q", i, err, r1.Refusal)
		}
		rc := Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r1.Effects[0], protocol.OutcomeConfirmedSuccess)}
		r2, err := w.Decide(r1.State, rc)
		p2, perr := plain.Decide(p1.State, rc)
		if x, y := resultBytes(t, r2, err), resultBytes(t, p2, perr); !bytes.Equal(x, y) {
			t.Fatalf("run %d: receipt differs\n%s\n%s", i, x, y)
		}
		if r2.Completion != Complete || len(w.cache.husks) != 1 || len(w.cache.spares) != 0 {
			t.Fatalf("run %d: completion %v, %d materializations and %d scratches kept", i, r2.Completion, len(w.cache.husks), len(w.cache.spares))
		}
	}
}

// Runs decided at the same time on one workflow share its cache, the
// materializations of finished runs included: each decides as a workflow without
// the cache (run with -race, this also checks the cache's locking).
func TestConcurrentRunsShareTheCache(t *testing.T) {
	w := compileExample(t, "refund-agent")
	plain := *w
	plain.cache, plain.empty = nil, nil
	run := func(w *Workflow, i int) string {
		id := fmt.Sprintf("run-conc-%d", i)
		in := Input{Seq: 1, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", i), int64(10+i), "alice", "late")}
		s0, _ := w.Init(id)
		r1, err := w.Decide(s0, in)
		out := resultBytes(t, r1, err)
		if err != nil || len(r1.Effects) != 1 {
			return string(out)
		}
		r2, err := w.Decide(r1.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r1.Effects[0], protocol.OutcomeConfirmedSuccess)})
		return string(out) + string(resultBytes(t, r2, err))
	}
	const n = 24
	got := make([]string, n)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				got[i] = run(w, i)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if want := run(&plain, i); got[i] != want {
			t.Fatalf("run %d differs from the workflow without the cache", i)
		}
	}
}

// The cache keeps at most maxHusks materializations of finished runs; past
// them it keeps a finished run's update scratch, as it keeps the scratches
// of what it drops when it starts over.
func TestHusksAreBounded(t *testing.T) {
	w := compileExample(t, "refund-agent")
	c := newMatCache()
	for i := range maxHusks + 1 {
		m, err := w.rebuild(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.drop(m) // updated by Solve: it has a scratch
		if want, spares := min(i+1, maxHusks), max(i+1-maxHusks, 0); len(c.husks) != want || len(c.spares) != spares {
			t.Fatalf("%d dropped, %d kept and %d scratches, want %d and %d", i+1, len(c.husks), len(c.spares), want, spares)
		}
	}
	for range maxHusks {
		if c.husk() == nil {
			t.Fatal("a kept materialization not handed out")
		}
	}
	if c.husk() != nil {
		t.Fatal("a materialization handed out twice")
	}
}

// ownsSupportsAlone checks that no other state in w's cache has a
// supports list that shares st's array. Two slices of one array, each
// taken to its capacity, both end at the array's last element.
func ownsSupportsAlone(w *Workflow, st *state) error {
	if w.cache == nil {
		return nil
	}
	w.cache.mu.Lock()
	defer w.cache.mu.Unlock()
	mine := st.Supports[:cap(st.Supports)]
	for _, e := range w.cache.m { //flrh:orderfree any sharing entry is an error
		if e.st == nil || e.st == st || cap(e.st.Supports) == 0 {
			continue
		}
		theirs := e.st.Supports[:cap(e.st.Supports)]
		if &theirs[len(theirs)-1] == &mine[len(mine)-1] {
			return fmt.Errorf("cached state: the supports' array it owns is shared with another cached state")
		}
	}
	return nil
}

// Putting a document that is already cached replaces its entry, state
// and materialization both, as a state decided again leaves the newest
// decision's; and deciding the same state and input twice, then going on
// from it, decides byte for byte as a workflow without the cache
// (decision 0934).
func TestPutReplacesTheEntry(t *testing.T) {
	w := compileExample(t, "refund-agent")
	c := newMatCache()
	doc := []byte(`{"doc":1}`)
	first, second := &state{}, &state{}
	m1, m2 := w.empty.Clone(), w.empty.Clone()
	c.putResult(doc, m1, first)
	c.put(doc, m2, second)
	if len(c.m) != 1 {
		t.Fatalf("%d entries for one document", len(c.m))
	}
	if key, st, mat := c.take(doc); st != second || mat != m2 || key != string(doc) {
		t.Fatal("take did not return the state and materialization put last")
	}
	if _, st, _ := c.take(doc); st != nil {
		t.Fatal("the entry is still there after take")
	}

	cached, plain := cachedAndPlain(t)
	runID := "run-again"
	sc, err := cached.Init(runID)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := plain.Init(runID)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 50, "alice", "late")}
	for i := range 3 { // the same state and input decided again, as a replay does
		rc, errc := cached.Decide(sc, in)
		rp, errp := plain.Decide(sp, in)
		if got, want := resultBytes(t, rc, errc), resultBytes(t, rp, errp); string(got) != string(want) {
			t.Fatalf("decision %d differs from the plain workflow's:\n%s\n%s", i, got, want)
		}
		if i == 2 {
			sc, sp = rc.State, rp.State
		}
	}
	next := Input{Seq: 2, Kind: KindInput, Body: refundInput("r-2", 70, "alice", "late")}
	rc, errc := cached.Decide(sc, next)
	rp, errp := plain.Decide(sp, next)
	if got, want := resultBytes(t, rc, errc), resultBytes(t, rp, errp); string(got) != string(want) {
		t.Fatalf("the tick after differs from the plain workflow's:\n%s\n%s", got, want)
	}
}
