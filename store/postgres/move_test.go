package postgres

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

// Runs move between PostgreSQL stores, and between the embedded store
// and PostgreSQL either way, reading back alike (the store the runs move
// from is the other's oracle).
func TestImportRuns(t *testing.T) {
	dsn(t)
	pg := func(t *testing.T, clock func() time.Time) store.Store { return openTest(t, Options{Clock: clock}) }
	lite := func(t *testing.T, clock func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("PostgresToPostgres", func(t *testing.T) { storetest.ImportRuns(t, pg, pg) })
	t.Run("SQLiteToPostgres", func(t *testing.T) { storetest.ImportRuns(t, lite, pg) })
	t.Run("PostgresToSQLite", func(t *testing.T) { storetest.ImportRuns(t, pg, lite) })
}
