package postgres

import (
	"strings"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// A tick's intents, or its results closed by their receipts, go in the
// appended statement only when no other write of the tick touches their
// rows, and only when there is an appended statement; otherwise each
// keeps its own statement.
func TestMergedWrites(t *testing.T) {
	in := func(id string) store.Intent {
		return store.Intent{ID: id, EffectType: "e", IdempotencyKey: "k-" + id, ContentDigest: "c", Body: []byte(`{}`), Digest: "d"}
	}
	res := func(id string) store.AttemptResult {
		return store.AttemptResult{IntentID: id, N: 1, Status: "succeeded", Outbox: store.OutboxDone}
	}
	rc := func(id string) store.Receipt {
		return store.Receipt{IntentID: id, Outcome: "confirmed_success", Body: []byte(`{}`), Digest: "d"}
	}
	evs := []store.Event{storetest.Ev("E", `{}`)}
	cp := &store.Checkpoint{Body: []byte(`{}`), Digest: "d"}
	for _, c := range []struct {
		name       string
		tick       store.Tick
		begin      []int64 // as the caller numbers tick.Begin
		statements int
		has        []string // in the last statement
	}{
		{"a begun intent with events", store.Tick{Intents: []store.Intent{in("a")}, Begin: []string{"a"}, Events: evs}, []int64{1}, 1,
			[]string{"i0 AS (INSERT INTO intents", "t0 AS (INSERT INTO attempts", "INSERT INTO events"}},
		{"two intents, a checkpoint", store.Tick{Intents: []store.Intent{in("a"), in("b")}, Begin: []string{"b"}, Checkpoint: cp}, []int64{1}, 1,
			[]string{"i0 AS", "o0 AS", "i1 AS", "t1 AS", "INSERT INTO checkpoints"}},
		{"an intent, nothing appended", store.Tick{Intents: []store.Intent{in("a")}}, nil, 1, []string{"WITH i AS (INSERT INTO intents"}},
		{"an intent begun twice", store.Tick{Intents: []store.Intent{in("a")}, Begin: []string{"a", "a"}, Events: evs}, []int64{1, 1}, 3, nil},
		{"an intent and an older intent begun", store.Tick{Intents: []store.Intent{in("a")}, Begin: []string{"x"}, Events: evs}, []int64{2}, 3, nil},
		{"an intent and another's receipt", store.Tick{Intents: []store.Intent{in("a")}, Receipts: []store.Receipt{rc("x")}, Events: evs}, nil, 3, nil},
		{"an intent and another's result", store.Tick{Intents: []store.Intent{in("a")}, Results: []store.AttemptResult{res("x")}, Events: evs}, nil, 3, nil},
		{"a closed result with events", store.Tick{Results: []store.AttemptResult{res("x")}, Receipts: []store.Receipt{rc("x")}, Events: evs}, nil, 1,
			[]string{"ra0 AS (UPDATE attempts", "rr0 AS (INSERT INTO receipts", "a0 AS (INSERT INTO events", "'attempt result'", "'receipt'"}},
		{"two closed results, the inbox left empty", store.Tick{Results: []store.AttemptResult{res("x"), res("y")}, Receipts: []store.Receipt{rc("y"), rc("x")}, ExpectInboxEmpty: true}, nil, 1,
			[]string{"ro1 AS", "'empty inbox'"}},
		{"a closed result, nothing appended", store.Tick{Results: []store.AttemptResult{res("x")}, Receipts: []store.Receipt{rc("x")}}, nil, 1, []string{"WITH a AS (UPDATE attempts"}},
		{"a result left open", store.Tick{Results: []store.AttemptResult{res("x"), res("y")}, Receipts: []store.Receipt{rc("x")}, Events: evs}, nil, 3, nil},
		{"a closed result and a begin", store.Tick{Results: []store.AttemptResult{res("x")}, Receipts: []store.Receipt{rc("x")}, Begin: []string{"y"}, Events: evs}, []int64{2}, 3, nil},
		{"the inbox left empty alone", store.Tick{ExpectInboxEmpty: true}, nil, 1, []string{"SELECT CASE WHEN EXISTS (SELECT 1 FROM inbox WHERE run_id = $1 AND NOT consumed) THEN flrh_expect_one(0, 'empty inbox') END"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Store{}
			tx := &wtx{}
			next := runHead{head: 3, hash: store.GenesisHash}
			chains := chainOf(next.hash, next.head, c.tick.Events)
			if err := s.queueTick(tx, store.Lease{RunID: "r", Owner: "w", Generation: 1}, c.tick, &next, chains, "", c.begin, nil); err != nil {
				t.Fatal(err)
			}
			if len(tx.pending) != c.statements {
				t.Fatalf("%d statements, want %d", len(tx.pending), c.statements)
			}
			last := tx.pending[len(tx.pending)-1]
			for _, h := range c.has {
				if !strings.Contains(last.SQL, h) {
					t.Fatalf("the last statement lacks %q:\n%s", h, last.SQL)
				}
			}
			if n := strings.Count(last.SQL, "$"); n > 0 && len(last.Arguments) == 0 {
				t.Fatalf("placeholders without arguments:\n%s", last.SQL)
			}
		})
	}
}
