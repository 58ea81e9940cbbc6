package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// The fence's read of a run's row on the writing connection makes no
// string of a TEXT it read the same the time before (keptCell): read
// again, the row's state, head hash and lease owner cost no allocation,
// and are the row's. It fails when every TEXT is copied anew.
func TestFenceReadKeepsItsTexts(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "flrh.db"), nil)
	defer s.Close()
	l := leasedRun(t, s)
	if err := s.Commit(ctx, l, store.Tick{ExpectHead: 0, State: "RUNNING",
		Events: []store.Event{storetest.Ev("E", `{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	want, err := s.Run(ctx, l.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.withWriter(ctx, func(tx *wtx) {
		if tx.lc == nil {
			t.Fatal("not on SQLite's interface")
		}
		var state, hash, owner string
		read := func() {
			row := s.queryRow(ctx, tx, fenceTickQuery, l.RunID)
			err := row.check(10)
			err = row.str(err, 0, &state)
			err = row.str(err, 3, &hash)
			err = row.str(err, 4, &owner)
			if err != nil {
				t.Fatal(err)
			}
		}
		read()
		if n := testing.AllocsPerRun(20, read); n != 0 {
			t.Errorf("fence read again: %.1f allocations, want 0", n)
		}
		if state != want.State || hash != want.HeadHash || owner != want.Lease.Owner {
			t.Errorf("read %q %q %q, want %q %q %q", state, hash, owner, want.State, want.HeadHash, want.Lease.Owner)
		}
	}); err != nil {
		t.Fatal(err)
	}
}
