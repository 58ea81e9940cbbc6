package postgres

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
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
	// Sealed with another key in each store: each opens what it holds
	// with its own (the import seals anew).
	k7, err := sealed.New(bytes.Repeat([]byte{7}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	k9, err := sealed.New(bytes.Repeat([]byte{9}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	sealedPG := func(t *testing.T, clock func() time.Time) store.Store {
		return openTest(t, Options{Clock: clock, Sealer: k9})
	}
	sealedLite := func(t *testing.T, clock func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: clock, Sealer: k7})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("SealedSQLiteToSealedPostgres", func(t *testing.T) { storetest.ImportRuns(t, sealedLite, sealedPG) })
}

func TestImportRunsAnyRun(t *testing.T) {
	dsn(t)
	pg := func(t *testing.T, clock func() time.Time) store.Store { return openTest(t, Options{Clock: clock}) }
	storetest.ImportRunsAnyRun(t, pg, pg)
}
