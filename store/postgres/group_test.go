package postgres

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// groupScenario commits a second tick on each of six runs at once — four
// of them refused for four reasons — after a first tick on each, with
// other's help for the faults, and returns each tick's error by run.
// r1 is fenced out (its lease released and taken by another owner), r3's
// head moved under it (another store committed a tick with its lease), r5
// ends its run, and r0 and r4 commit the same idempotency key with other
// content: whichever commits first wins, the other is refused.
func groupScenario(t *testing.T, s, other *Store, concurrent bool) map[string]error {
	t.Helper()
	const n = 6
	leases := map[string]store.Lease{}
	for i := 0; i < n; i++ {
		run := fmt.Sprintf("r%d", i)
		must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
		l, err := s.AcquireLease(ctx, run, "w", time.Hour)
		must(t, err)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"i":0}`)}}))
		leases[run] = l
	}
	must(t, other.ReleaseLease(ctx, leases["r1"]))
	_, err := other.AcquireLease(ctx, "r1", "x", time.Hour)
	must(t, err)
	must(t, other.Commit(ctx, leases["r3"], store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{}`)}}))

	tick := func(run string) store.Tick {
		cp := []byte(`{"n":2}`)
		tk := store.Tick{ExpectHead: 1, State: "NEXT",
			Events:     []store.Event{storetest.Ev("A", `{"i":1}`), storetest.Ev("C", `{}`)},
			Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
			Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(`{}`)}}}
		switch run {
		case "r0", "r4":
			in := storetest.In("i-"+run, "shared-key", "refund "+run)
			tk.Intents, tk.Begin = []store.Intent{in}, []string{in.ID}
		case "r5":
			tk.Outcome = "SUCCEEDED"
		}
		return tk
	}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		run := fmt.Sprintf("r%d", i)
		commit := func() {
			err := s.Commit(ctx, leases[run], tick(run))
			mu.Lock()
			errs[run] = err
			mu.Unlock()
		}
		if !concurrent {
			commit()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); commit() }()
	}
	wg.Wait()
	return errs
}

// Ticks of several runs committed as one group keep each its own outcome:
// a fenced-out tick, one whose head moved and one that loses an
// idempotency key get the codes they get alone, their neighbours commit
// together without them, and every run ends as committing the same ticks
// one by one leaves it.
func TestGroupCommitKeepsEachTicksOutcome(t *testing.T) {
	seq := openTest(t, Options{CommitGroups: 1})
	seqOther := openTest(t, Options{Schema: seq.Schema(), CommitGroups: 1})
	want := groupScenario(t, seq, seqOther, false)

	s := openTest(t, Options{CommitGroups: 1})
	other := openTest(t, Options{Schema: s.Schema(), CommitGroups: 1})
	s.testGroupWait = 5
	var groups []string
	s.testGroup = func(n int, ok bool) { groups = append(groups, fmt.Sprintf("%d:%v", n, ok)) }
	var merged []string
	s.testMerged = func(n int, ok bool) { merged = append(merged, fmt.Sprintf("%d:%v", n, ok)) }
	got := groupScenario(t, s, other, true)
	// The six went first as one merged group, refused as a whole, and
	// then tick by tick.
	if fmt.Sprint(merged) != "[6:false]" {
		t.Errorf("merged groups %v, want [6:false]", merged)
	}

	for run, code := range map[string]store.Code{"r1": store.CodeFenced, "r3": store.CodeHeadMismatch} {
		mustCode(t, want[run], code)
		mustCode(t, got[run], code)
	}
	for _, run := range []string{"r2", "r5"} {
		must(t, want[run])
		must(t, got[run])
	}
	// r0 went first one by one; in the group either may.
	mustCode(t, want["r4"], store.CodeIdempotencyConflict)
	must(t, want["r0"])
	lost, won := "r4", "r0"
	if got["r4"] == nil {
		lost, won = "r0", "r4"
	}
	mustCode(t, got[lost], store.CodeIdempotencyConflict)
	must(t, got[won])
	// One group of six, refused three times, each time one tick fewer;
	// then the three left commit together.
	if fmt.Sprint(groups) != "[6:false 5:false 4:false 3:true]" {
		t.Errorf("groups %v, want [6:false 5:false 4:false 3:true]", groups)
	}
	for i := 0; i < 6; i++ {
		run := fmt.Sprintf("r%d", i)
		wrun := run
		if run == lost || run == won {
			wrun = map[string]string{lost: "r4", won: "r0"}[run]
		}
		w, g := state(t, seq, wrun), state(t, s, run)
		if w != g {
			t.Errorf("%s: one by one %s, in a group %s", run, w, g)
		}
	}
}

// A tick whose run's row another transaction holds does not hold up the
// ticks grouped with it: it leaves the group at once and waits alone.
func TestGroupCommitDoesNotWaitForAnotherRunsLock(t *testing.T) {
	if !strings.Contains(fenceGroupSQL, "FOR NO KEY UPDATE NOWAIT)") {
		t.Fatal("the group's fence waits for the run's row")
	}
	s := openTest(t, Options{CommitGroups: 1})
	leases := map[string]store.Lease{}
	for _, run := range []string{"a", "b", "c"} {
		must(t, s.CreateRun(ctx, store.Run{ID: run, WorkflowID: "wf", State: "S"}))
		l, err := s.AcquireLease(ctx, run, "w", time.Hour)
		must(t, err)
		must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}}))
		leases[run] = l
	}
	conn := admin(t)
	tx, err := conn.Begin(ctx)
	must(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{s.Schema(), "runs"}.Sanitize()+` WHERE run_id = 'b' FOR NO KEY UPDATE`)
	must(t, err)
	s.testGroupWait = 2
	var mu sync.Mutex
	var groups []string
	s.testGroup = func(n int, ok bool) { mu.Lock(); groups = append(groups, fmt.Sprintf("%d:%v", n, ok)); mu.Unlock() }
	done := make(chan string, 3)
	for _, run := range []string{"a", "b", "c"} {
		go func() {
			must(t, s.Commit(ctx, leases[run], store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{}`)}}))
			done <- run
		}()
	}
	got := []string{<-done, <-done}
	slices.Sort(got)
	if fmt.Sprint(got) != "[a c]" {
		t.Fatalf("committed first %v, want [a c]", got)
	}
	must(t, tx.Rollback(ctx))
	if run := <-done; run != "b" {
		t.Fatalf("committed last %s, want b", run)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(groups) != "[3:false 2:true]" {
		t.Errorf("groups %v, want [3:false 2:true]", groups)
	}
}
