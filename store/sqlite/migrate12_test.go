package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/packed"
	"flrh.dev/flrh/store/sqlite"
)

// checkpointForms counts the checkpoints stored packed and as they are.
func checkpointForms(t *testing.T, db *sql.DB) (packedN, plainN int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT COALESCE(SUM(substr(body, 1, length(?1)) = ?1), 0), COALESCE(SUM(substr(body, 1, length(?1)) <> ?1), 0) FROM checkpoints`,
		[]byte(packed.Prefix)).Scan(&packedN, &plainN); err != nil {
		t.Fatal(err)
	}
	return packedN, plainN
}

// A database written at schema version 9 (checkpoints' bodies as they
// are) holding real runs migrates to version 12 and later without a row
// rewritten: every run reads back exactly as before, from the store and
// from a read-only store, verifies, replays and goes on, its new
// checkpoints packed; the old and the new rows read side by side.
func TestMigrateFromVersion9RealRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcPath, v9Path := filepath.Join(dir, "src.db"), filepath.Join(dir, "v9.db")
	src, ids, want := recordedSource(t, ctx, srcPath)
	if p, plain := checkpointForms(t, src.DB()); p != 0 || plain < 10 {
		t.Fatalf("the version-9 source holds %d packed and %d plain checkpoints", p, plain)
	}
	writeVersion(t, srcPath, v9Path, 9)
	src.Close()

	st, db := openMigrated(t, v9Path, 12)
	more := runsGoOn(t, ctx, st, ids, want)
	p, plain := checkpointForms(t, db)
	if p < 3 || plain < 10 {
		t.Fatalf("after migration: %d packed and %d plain checkpoints", p, plain)
	}
	ro, err := sqlite.Open(ctx, v9Path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	all := append(ids, more...)
	for _, id := range all {
		got, w := readRun(t, ctx, ro, id), readRun(t, ctx, st, id)
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("run %s read-only:\n got %+v\nwant %+v", id, got, w)
		}
		cp, err := st.Checkpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if packed.Is(cp.Body) || cjson.Digest(cp.Body) != cp.Digest {
			t.Fatalf("run %s: a checkpoint read back not as written (%.20q, %s)", id, cp.Body, cp.Digest)
		}
		for _, s := range []*sqlite.Store{st, ro} {
			rec, err := s.ReadRunRecord(ctx, id, true)
			if err != nil || !bytes.Equal(rec.Checkpoint.Body, cp.Body) {
				t.Fatalf("run %s: the record's checkpoint differs (%v)", id, err)
			}
		}
		recs, errs := ro.ReadRunRecords(ctx, []string{id}, false)
		if errs[0] != nil || !bytes.Equal(recs[0].Checkpoint.Body, cp.Body) {
			t.Fatalf("run %s: the batch's checkpoint differs (%v)", id, errs[0])
		}
	}
	verifyRuns(t, ctx, ro, all)
}

// Versions 10 and 11 were released and withdrawn: a database at either
// is refused with SCHEMA_TOO_NEW, as before version 12, and left as it
// was.
func TestWithdrawnSchemaVersionsRefused(t *testing.T) {
	for _, v := range []int{10, 11} {
		path := filepath.Join(t.TempDir(), fmt.Sprint("v", v, ".db"))
		db := dbAtVersion(t, path, "_pragma=journal_mode(WAL)", 9)
		execOn(t, db)(fmt.Sprintf(`PRAGMA user_version = %d`, v))
		db.Close()
		for _, ro := range []bool{false, true} {
			_, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: ro})
			var se *store.Error
			if !errors.As(err, &se) || se.Code != store.CodeSchemaTooNew || !strings.Contains(err.Error(), "withdrawn") {
				t.Fatalf("version %d (read-only %v): %v", v, ro, err)
			}
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var have int
		db.QueryRow(`PRAGMA user_version`).Scan(&have)
		db.Close()
		if have != v {
			t.Fatalf("version %d left at %d", v, have)
		}
	}
}

// A packed checkpoint damaged at rest reads as CORRUPT from every path,
// never as other bytes and never as a panic; put back, it reads again.
func TestPackedCheckpointDamaged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := recordRuns(t, ctx, st, "", false)
	id := ids[0]
	cp, err := st.Checkpoint(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	db := st.DB()
	var n int64
	var stored []byte
	if err := db.QueryRow(`SELECT n, body FROM checkpoints WHERE run_id = ? ORDER BY n DESC LIMIT 1`, id).Scan(&n, &stored); err != nil {
		t.Fatal(err)
	}
	if !packed.Is(stored) {
		t.Fatalf("the checkpoint of %s is stored as it is", id)
	}
	set := func(b []byte) {
		t.Helper()
		execOn(t, db)(`DROP TRIGGER checkpoints_no_update`)
		execOn(t, db)(`UPDATE checkpoints SET body = ? WHERE run_id = ? AND n = ?`, b, id, n)
		execOn(t, db)(`CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT RAISE(ABORT, 'checkpoints are append-only'); END`)
	}
	damaged := [][]byte{
		stored[:len(stored)-3],
		append(bytes.Clone(stored[:len(packed.Prefix)]), 9),
		append(append(bytes.Clone(stored[:len(packed.Prefix)]), 0), 0xff, 0xff, 0xff, 0xff, 0x7f),
	}
	for i := len(packed.Prefix) + 1; i < len(stored); i += len(stored) / 7 {
		b := bytes.Clone(stored)
		b[i] ^= 0x20
		damaged = append(damaged, b)
	}
	for i, b := range damaged {
		set(b)
		got, err := st.Checkpoint(ctx, id)
		if err == nil {
			// A damaged literal unpacks to other bytes: the digest,
			// over the body's own bytes, tells.
			if cjson.Digest(got.Body) == cp.Digest {
				t.Fatalf("damage %d: read back as the checkpoint", i)
			}
			continue
		}
		if store.CodeOf(err) != store.CodeCorrupt {
			t.Fatalf("damage %d: %v", i, err)
		}
		if _, err := st.ReadRunRecord(ctx, id, true); store.CodeOf(err) != store.CodeCorrupt {
			t.Fatalf("damage %d: the run's record: %v", i, err)
		}
		if _, errs := st.ReadRunRecords(ctx, []string{id}, true); store.CodeOf(errs[0]) != store.CodeCorrupt {
			t.Fatalf("damage %d: the run's record in a batch: %v", i, errs[0])
		}
	}
	set(stored)
	if got, err := st.Checkpoint(ctx, id); err != nil || !bytes.Equal(got.Body, cp.Body) {
		t.Fatalf("put back: %v", err)
	}
}
