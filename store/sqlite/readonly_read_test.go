package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

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
	path := writeCopy(t, dir, image)
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
	path := writeCopy(t, dir, image)
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

// interleavedImage is image with its events rewritten in the order of
// (seq, run_id): the same rows, no two events of a run neighbours, as
// runs recorded at once leave them at the most.
func interleavedImage(t *testing.T, dir string, image []byte) []byte {
	ctx := context.Background()
	path := filepath.Join(dir, "interleaved.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TRIGGER events_no_delete`,
		`CREATE TEMP TABLE mixed AS SELECT * FROM events ORDER BY seq, run_id`,
		`DELETE FROM events`,
		`INSERT INTO events SELECT * FROM mixed ORDER BY seq, run_id`,
		`DROP TABLE mixed`,
		`PRAGMA wal_checkpoint(TRUNCATE)`,
	} {
		if _, err := st.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The batched reads (ReadRunRecords, ReadRunRecordsReusing with memory
// lent again and again) return for every run exactly what the parts' own
// reads return, records, their rows' order and errors: over the runs as
// recorded and with their events interleaved, lists with runs that do
// not exist and runs named twice, and a column of one run's rows set to
// a drawn value (a damaged row), on a writable and on a read-only store.
func TestBatchedReadsAreThePartsReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ids, recorded := recordImage(t, dir)
	images := [][]byte{recorded, interleavedImage(t, dir, recorded)}
	path := filepath.Join(dir, "copy.db")
	tables := make([]string, 0, len(recordColumns))
	for tb := range recordColumns {
		tables = append(tables, tb)
	}
	slices.Sort(tables)
	var mem [][]byte
	rapid.Check(t, func(rt *rapid.T) {
		image := images[rapid.IntRange(0, 1).Draw(rt, "interleaved")]
		tb, col, run, v := drawDamage(rt, tables, ids)
		st := damaged(rt, image, path, tb, col, run, v)
		defer func() { st.Close() }() // the store read, which may be the read-only one below
		if rapid.Bool().Draw(rt, "read-only") {
			st.Close()
			ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
			if err != nil {
				rt.Fatal(err)
			}
			st = ro
		}
		list := rapid.SliceOfN(rapid.SampledFrom(append([]string{"absent"}, ids...)), 1, 2*sqlite.RecordBatch+3).Draw(rt, "ids")
		all := rapid.Bool().Draw(rt, "all")
		check := func(how string, recs []store.RunRecord, errs []error) {
			for i, id := range list {
				want, werr := store.ReadRunRecordByParts(ctx, st, id, all)
				if fmt.Sprint(errs[i]) != fmt.Sprint(werr) || store.CodeOf(errs[i]) != store.CodeOf(werr) || !reflect.DeepEqual(recs[i], want) {
					rt.Fatalf("%s, run %s (all %v): %+v, %v; by parts %+v, %v", how, id, all, recs[i], errs[i], want, werr)
				}
			}
		}
		recs, errs := st.ReadRunRecords(ctx, list, all)
		check("ReadRunRecords", recs, errs)
		recs, errs = st.ReadRunRecordsReusing(ctx, list, all, &mem)
		check("ReadRunRecordsReusing", recs, errs)
	})
}
