package withrunner

import (
	"os"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
)

// version19Events is what migration 20 replaced (see the file).
var version19Events = func() string {
	b, err := os.ReadFile("../testdata/version19-events.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// eventRows counts schema's events rows and the events they hold.
func eventRows(t *testing.T, st *postgres.Store) (rows, events int64) {
	t.Helper()
	must(t, st.Pool().QueryRow(ctx, `SELECT count(*), COALESCE(sum(last_seq - seq + 1), 0) FROM events`).Scan(&rows, &events))
	return rows, events
}

// Real runs written before migration 20 (a row per event) read back
// exactly as before after it, by parts and sixteen at a time, verify, and
// go on: each existing event becomes a row of its own, and every tick
// after the migration writes one row for its events. The runs include
// ones whose ticks appended several events, so that the rows migrated
// back to one per event chain them across rows. (The runs are recorded
// by this build, then the schema is taken back to version 19.)
func TestMigrateFromVersion19RealRuns(t *testing.T) {
	schema := freshSchema(t)
	old := openNamed(t, schema, "flrh-migrate19-old", postgres.Options{})
	ids := recordRuns(t, old, "", true)
	want := readRuns(t, old, ids)
	rows0, events0 := eventRows(t, old)
	if rows0 >= events0 {
		t.Fatalf("%d rows for %d events: no tick appended several, the test would prove little", rows0, events0)
	}
	old.Close()
	execInSchema(t, schema, version19Events)
	var perEvent int64
	conn, err := pgx.Connect(ctx, dsn(t))
	must(t, err)
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "events"}.Sanitize()).Scan(&perEvent))
	conn.Close(ctx)
	if perEvent != events0 {
		t.Fatalf("version 19's layout holds %d events, want %d", perEvent, events0)
	}

	st := openNamed(t, schema, "flrh-migrate19", postgres.Options{})
	migratedTo(t, st, 20)
	if rows, events := eventRows(t, st); rows != events0 || events != events0 {
		t.Fatalf("after migration 20: %d rows for %d events, want one row for each of %d", rows, events, events0)
	}
	sameRuns(t, st, ids, want)
	sameBatched(t, st, ids, want)
	verifyRuns(t, st, ids)
	more := recordRuns(t, st, "after-", false)
	verifyRuns(t, st, append(ids, more...))
	rows, events := eventRows(t, st)
	if rows-events0 >= events-events0 {
		t.Fatalf("the runs after the migration wrote %d rows for %d events", rows-events0, events-events0)
	}
}

// sameBatched fails unless the runs read sixteen at a time read as each
// run read by parts does, and their events as want holds them.
func sameBatched(t *testing.T, st *postgres.Store, ids []string, want map[string]runRecord) {
	t.Helper()
	recs, errs := st.ReadRunRecords(ctx, ids, true)
	for i, id := range ids {
		must(t, errs[i])
		byParts, err := store.ReadRunRecordByParts(ctx, st, id, true)
		must(t, err)
		if !reflect.DeepEqual(recs[i], byParts) {
			t.Fatalf("run %s read in a batch:\n got %+v\nwant %+v", id, recs[i], byParts)
		}
		if !reflect.DeepEqual(recs[i].Events, want[id].Events) {
			t.Fatalf("run %s's events read in a batch differ from before the migration", id)
		}
	}
}
