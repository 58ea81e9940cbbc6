package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// A read-only store maps its database file on every connection it reads
// through (the readers' pool and the held reading connections); a
// writable store maps it on none, its writer's included.
func TestOnlyReadOnlyStoresMapTheirFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, image := recordImage(t, dir)
	path := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if ro {
			want = sqlite.ReadOnlyMmap
		}
		var pool int64
		if err := st.DB().QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&pool); err != nil {
			t.Fatal(err)
		}
		if held := st.HeldMmapSize(t); pool != want || held != want {
			t.Errorf("read-only %v: mmap_size %d on the store's connection, %d on a held one, want %d", ro, pool, held, want)
		}
		st.Close()
	}
}

// A read-only store, which reads its file where it is mapped, reads every
// run's record, alone and in batches, errors included, as the parts' own
// reads of a writable store over the same file read it.
func TestReadOnlyStoreReadsTheSameRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ids, image := recordImage(t, dir)
	ids = append(ids, "absent")
	path := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	rw, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, all := range []bool{true, false} {
		recs, errs := ro.ReadRunRecords(ctx, ids, all)
		for i, id := range ids {
			want, werr := store.ReadRunRecordByParts(ctx, rw, id, all)
			one, oerr := ro.ReadRunRecord(ctx, id, all)
			for _, got := range []struct {
				rec store.RunRecord
				err error
			}{{recs[i], errs[i]}, {one, oerr}} {
				if fmt.Sprint(got.err) != fmt.Sprint(werr) || store.CodeOf(got.err) != store.CodeOf(werr) || !reflect.DeepEqual(got.rec, want) {
					t.Fatalf("run %s (all %v): read-only %+v, %v; writable by parts %+v, %v", id, all, got.rec, got.err, want, werr)
				}
			}
		}
	}
}
