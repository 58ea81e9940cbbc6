package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A transaction's first four queued writes, and the list of them, cost no
// allocation of their own; past four each is queued as before. Every
// write keeps its text and arguments, in order, through a batch that
// takes them and the writes queued after it.
func TestQueueHoldsATicksWrites(t *testing.T) {
	args := []any{"a", int64(1)}
	tx := &wtx{}
	allocs := testing.AllocsPerRun(100, func() {
		tx.used, tx.pending = 0, nil
		for range 4 {
			tx.Queue("SELECT 1", args...)
		}
	})
	if allocs != 0 {
		t.Fatalf("four queued writes: %v allocations, want 0", allocs)
	}

	tx = &wtx{begun: true}
	var qs []*pgx.QueuedQuery
	for i := range 6 {
		qs = append(qs, tx.Queue(fmt.Sprint(i), i))
	}
	b := tx.batch(&pgx.Batch{})
	for i := range 3 {
		qs = append(qs, tx.Queue(fmt.Sprint(6+i), 6+i))
	}
	if len(b.QueuedQueries) != 6 || len(tx.pending) != 3 {
		t.Fatalf("%d writes in the batch, %d queued after it; want 6 and 3", len(b.QueuedQueries), len(tx.pending))
	}
	got := append(append([]*pgx.QueuedQuery{}, b.QueuedQueries...), tx.pending...)
	for i, q := range got {
		if q != qs[i] || q.SQL != fmt.Sprint(i) || len(q.Arguments) != 1 || q.Arguments[0] != i {
			t.Fatalf("write %d: %q %v, want %d", i, q.SQL, q.Arguments, i)
		}
	}
}
