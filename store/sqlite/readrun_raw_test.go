package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// The columns each arm of the record statements reads, by table; a run's
// rows of outbox and attempts are found through its intents.
var recordColumns = map[string][]string{
	"runs": {"workflow_id", "workflow_version", "state", "outcome", "head_seq", "head_hash", "lease_owner",
		"lease_generation", "lease_expires_at", "quarantine", "created_at", "updated_at", "workflow_digest"},
	"events":      {"seq", "kind", "body", "digest", "prev_hash", "chain_hash", "generation", "recorded_at"},
	"checkpoints": {"n", "seq", "format_version", "build_digest", "body", "digest"},
	"intents": {"seq", "effect_type", "idempotency_key", "content_digest", "approval_id", "body", "digest",
		"commit_order"},
	"outbox":    {"status", "route", "attempts"},
	"receipts":  {"outcome", "body", "digest", "commit_order"},
	"attempts":  {"n", "status", "generation", "detail", "started_at", "finished_at"},
	"approvals": {"request_digest", "nonce", "body", "digest", "expires_at", "status", "consumed_by"},
}

// A drawn value of any of SQLite's storage classes, near the values the
// record's columns hold.
func drawValue(t *rapid.T) any {
	switch rapid.IntRange(0, 5).Draw(t, "class") {
	case 0:
		return nil
	case 1:
		return rapid.SampledFrom([]int64{-1, 0, 1, 2, 3, 4, 7, 255, 256, 1 << 40, -1 << 62}).Draw(t, "int")
	case 2:
		return rapid.SampledFrom([]float64{0, 1.5, -2, 1e300}).Draw(t, "float")
	case 3:
		return rapid.SampledFrom([]string{"", "control", "accepted", "control.rejected", "1", "x",
			"sha256:" + strings.Repeat("ab", 32), "sha256:zz", "pending", "sent"}).Draw(t, "text")
	case 4:
		return rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "blob")
	default:
		return make([]byte, rapid.SampledFrom([]int{0, 31, 32, 33}).Draw(t, "zeros"))
	}
}

// fataler is what the checks below need of a test: a *testing.T or a
// *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// damaged opens a copy of the database image at path with column col of
// run's rows of table tb set to v (nothing changes when the table refuses
// v: STRICT, NOT NULL, a key).
func damaged(t fataler, image []byte, path, tb, col, run string, v any) *sqlite.Store {
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tb == "" {
		return st
	}
	where := `run_id = ?`
	if tb == "outbox" || tb == "attempts" {
		where = `intent_id IN (SELECT intent_id FROM intents WHERE run_id = ?)`
	}
	for _, tr := range []string{"events", "receipts", "intents", "checkpoints"} {
		st.DB().Exec(`DROP TRIGGER IF EXISTS ` + tr + `_no_update`)
	}
	st.DB().Exec(`UPDATE `+tb+` SET `+col+` = ? WHERE `+where, v, run)
	return st
}

// sameAsSQL fails unless the driver's reads of the runs list return what
// the same statements return through database/sql, and ReadRunRecords
// what the parts' own reads return, errors included; it returns how many
// of them, not absent, were read by parts.
func sameAsSQL(t fataler, st *sqlite.Store, list []string) (byParts int) {
	ctx := context.Background()
	for _, all := range []bool{true, false} {
		got, gok := st.ReadRunRecordsInOne(ctx, list, all)
		want, wok := st.ReadRunRecordsInOneSQL(ctx, list, all)
		for i, id := range list {
			if !wok[i] && id != "absent" {
				byParts++
			}
		}
		if !reflect.DeepEqual(gok, wok) || !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %v (all %v): read %v, through database/sql %v\n got %+v\nwant %+v", list, all, gok, wok, got, want)
		}
		if st.HeldRecordConns() == 0 {
			t.Fatal("the batch was not read on a held connection")
		}
		drv, dok := st.ReadRunRecordsInOneDriver(ctx, list, all)
		if !reflect.DeepEqual(dok, wok) || !reflect.DeepEqual(drv, want) {
			t.Fatalf("batch %v (all %v): through the driver %v, through database/sql %v\n got %+v\nwant %+v", list, all, dok, wok, drv, want)
		}
		for _, id := range list {
			got, gok := st.ReadRunRecordInOne(ctx, id, all)
			want, wok := st.ReadRunRecordInOneSQL(ctx, id, all)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("run %s (all %v): read %v, through database/sql %v\n got %+v\nwant %+v", id, all, gok, wok, got, want)
			}
			drv, dok := st.ReadRunRecordInOneDriver(ctx, id, all)
			if dok != wok || !reflect.DeepEqual(drv, want) {
				t.Fatalf("run %s (all %v): through the driver %v, through database/sql %v\n got %+v\nwant %+v", id, all, dok, wok, drv, want)
			}
		}
		recs, errs := st.ReadRunRecords(ctx, list, all)
		for i, id := range list {
			want, werr := store.ReadRunRecordByParts(ctx, st, id, all)
			if fmt.Sprint(errs[i]) != fmt.Sprint(werr) || store.CodeOf(errs[i]) != store.CodeOf(werr) || !reflect.DeepEqual(recs[i], want) {
				t.Fatalf("run %s (all %v): read %+v, %v; by parts %+v, %v", id, all, recs[i], errs[i], want, werr)
			}
		}
	}
	return byParts
}

// recordImage records the runs of recordRuns and returns their ids and
// the database's bytes.
func recordImage(t *testing.T, dir string) ([]string, []byte) {
	ctx := context.Background()
	base := filepath.Join(dir, "base.db")
	st, err := sqlite.Open(ctx, base, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := recordRuns(t, ctx, st, "", true)
	if _, err := st.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	image, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	return ids, image
}

// The reads of the runs' records on the held connections, through SQLite's
// own interface (ReadRunRecordInOne, ReadRunRecordsInOne), and through the
// driver's statements on the readers' pool, return what the same
// statements returned through database/sql, records and whether each run was read plainly, over
// recorded runs and over the same runs with a column of one run's rows set
// to a value of each storage class (a damaged hash, a kind of the wrong
// type, a NULL where a number belongs, ...), which the reads either take
// as the parts' own reads would or hand to those reads: every column each
// arm reads, with values near those the columns hold, and drawn values
// and lists of runs.
func TestReadRunRecordsRawIsTheSQLRead(t *testing.T) {
	dir := t.TempDir()
	ids, image := recordImage(t, dir)
	path := filepath.Join(dir, "copy.db")
	tables := make([]string, 0, len(recordColumns))
	for tb := range recordColumns {
		tables = append(tables, tb)
	}
	slices.Sort(tables)
	list := append([]string{"absent"}, ids[:min(len(ids), sqlite.RecordBatch-1)]...)
	values := []any{nil, int64(1 << 40), 1.5, "sha256:zz", make([]byte, 31)}
	byParts, k := 0, 0
	for _, tb := range tables {
		for _, col := range recordColumns[tb] {
			for _, v := range values {
				k++
				st := damaged(t, image, path, tb, col, list[1+k%(len(list)-1)], v)
				byParts += sameAsSQL(t, st, list)
				st.Close()
			}
		}
	}
	if byParts == 0 {
		t.Fatal("no damage made a run be read by parts")
	}
	t.Logf("%d damages, %d runs read by parts", k, byParts)
	rapid.Check(t, func(rt *rapid.T) {
		tb, col, run, v := drawDamage(rt, tables, ids)
		st := damaged(rt, image, path, tb, col, run, v)
		defer st.Close()
		sameAsSQL(rt, st, rapid.SliceOfN(rapid.SampledFrom(append([]string{"absent"}, ids...)), 1, sqlite.RecordBatch).Draw(rt, "ids"))
	})
}

// The bodies a read of many runs returns are each their own, though most
// are cut from shared chunks: after an append to every body, each still
// holds what it did, and a second read returns what the first did.
func TestRecordBodiesAreEachTheirOwn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ids, image := recordImage(t, dir)
	path := writeCopy(t, dir, image)
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids = ids[:min(len(ids), sqlite.RecordBatch)]
	bodiesOf := func(recs []store.RunRecord) [][]byte {
		var out [][]byte
		for _, r := range recs {
			for _, e := range r.Events {
				out = append(out, e.Body)
			}
			out = append(out, r.Checkpoint.Body)
			for _, in := range r.Intents {
				out = append(out, in.Body)
			}
			for _, rc := range r.Receipts {
				out = append(out, rc.Body)
			}
			for _, a := range r.Approvals {
				out = append(out, a.Body)
			}
		}
		return out
	}
	read := func() [][]byte {
		recs, ok := st.ReadRunRecordsInOne(ctx, ids, true)
		for i := range ok {
			if !ok[i] {
				t.Fatalf("run %s read by parts", ids[i])
			}
		}
		return bodiesOf(recs)
	}
	first := read()
	want := make([][]byte, len(first))
	for i, b := range first {
		want[i] = bytes.Clone(b)
	}
	for i := range first {
		first[i] = append(first[i], '!')
	}
	for i, b := range read() {
		if !bytes.Equal(b, want[i]) || !bytes.Equal(first[i][:len(first[i])-1], want[i]) {
			t.Fatalf("body %d changed by an append to another", i)
		}
	}
}

// drawDamage draws, one time in two, a cell to damage: a table of
// tables, one of its record columns, a run of ids and the value to write
// there; otherwise none (empty names, nil).
func drawDamage(rt *rapid.T, tables, ids []string) (tb, col, run string, v any) {
	if rapid.Bool().Draw(rt, "damage") {
		tb = rapid.SampledFrom(tables).Draw(rt, "table")
		col = rapid.SampledFrom(recordColumns[tb]).Draw(rt, "column")
		run = rapid.SampledFrom(ids).Draw(rt, "run")
		v = drawValue(rt)
	}
	return tb, col, run, v
}

// writeCopy writes a store's image to copy.db in dir and returns its
// path.
func writeCopy(t *testing.T, dir string, image []byte) string {
	t.Helper()
	path := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
