package bundle

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// Runs of a real workflow, written as a store in use writes them (ticks,
// intents, attempts, receipts, checkpoints, trace, inbox), then half of
// them pruned and the log emptied: no byte naming a pruned run's payee is
// left in the database or its log, with no compaction, and every kept
// run's is.
func TestPrunedRunsLeaveNoBytesBehind(t *testing.T) {
	h := newHarness(t, "refund-agent")
	payee := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf("erasedpayee%02dq7", i)
		}
		return fmt.Sprintf("keptpayee%02dz4", i)
	}
	const runs = 24
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		h.start(id, refund(fmt.Sprintf("rf-%02d", i), 40+i, payee(i), "damaged item"))
		h.paid(id)
	}
	st := h.st.(*sqlite.Store)
	var seq int
	var name, path string
	if err := st.DB().QueryRowContext(h.ctx, `PRAGMA database_list`).Scan(&seq, &name, &path); err != nil {
		t.Fatal(err)
	}
	holds := func(marker string) bool { return storetest.FilesHold(t, marker, path, path+"-wal") }
	if err := st.EmptyLog(h.ctx); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if !holds(payee(i)) {
			t.Fatalf("%s is not in the files before pruning: the test shows nothing", payee(i))
		}
	}
	for i := 0; i < runs; i += 2 {
		a, err := archive.Read(h.ctx, st, fmt.Sprintf("run-%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Prune(h.ctx, a.Pruning("")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.EmptyLog(h.ctx); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if got, want := holds(payee(i)), i%2 == 1; got != want {
			t.Errorf("%s in the files after pruning and emptying the log: %v, want %v", payee(i), got, want)
		}
	}
}
