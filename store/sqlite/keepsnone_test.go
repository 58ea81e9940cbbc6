package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// The SQLite store keeps none of a tick's slices once Commit returns, a
// lagging tick's included, whose transaction stays open into the next
// write and may run again from the writer's copy of it.
func TestCommitKeepsNoneOfTheTick(t *testing.T) {
	storetest.RunKeepsNone(t, func(t *testing.T, clock func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
