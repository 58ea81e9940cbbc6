package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// pgChecked is the SQLSTATE of the stand-in trigger functions below.
const pgChecked = "FLX01"

// checksRefuseAll replaces the events' and the trace rows' check
// functions in the store's schema with ones that refuse every row, so
// that a write succeeds only where the triggers do not fire.
func checksRefuseAll(t *testing.T, s *Store) {
	t.Helper()
	for _, fn := range []string{"flrh_events_checked", "flrh_trace_checked"} {
		_, err := s.pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+pgx.Identifier{s.Schema(), fn}.Sanitize()+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'checked on %', TG_TABLE_NAME USING ERRCODE = '`+pgChecked+`';
END
$$`)
		must(t, err)
	}
}

// A one-round-trip tick's events and trace row, written after its fence
// in the same transaction, are not checked again by the tables' triggers;
// rows written any other way are: by hand (with the fence's setting unset
// or empty), or by the two-round-trip tick the store sends after a
// refusal.
func TestFencedTickSkipsRowChecks(t *testing.T) {
	forBothTicks(t, func(t *testing.T) {
		s := openTest(t, Options{})
		l := oneEventRun(t, s)
		checksRefuseAll(t, s)

		// Two events, and two trace records in one row.
		tick := store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`), storetest.Ev("C", `{"n":3}`)},
			Trace: []store.TraceRecord{{Kind: "k", Body: []byte(`{"t":1}`)}, {Kind: "l", Body: []byte(`{"t":2}`)}}}
		must(t, s.Commit(ctx, l, tick))
		evs, err := s.Events(ctx, "r", 0)
		must(t, err)
		if len(evs) != 3 {
			t.Fatalf("events: %+v", evs)
		}
		// What the triggers would have checked holds for every row the
		// store wrote.
		var bad int
		must(t, s.pool.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM events e WHERE (e.digest_sum IS NULL) = (e.digest IS NULL) OR (e.prev_sum IS NULL) = (e.prev_hash IS NULL)
		OR (e.chain_sum IS NULL) = (e.chain_hash IS NULL) OR NOT EXISTS (SELECT FROM runs r WHERE r.run_id = e.run_id))
	+ (SELECT count(*) FROM trace x WHERE cardinality(x.kinds) <> x.last_seq - x.seq + 1 OR cardinality(x.bodies) <> x.last_seq - x.seq + 1
		OR NOT EXISTS (SELECT FROM runs r WHERE r.run_id = x.run_id))
	+ (SELECT CASE WHEN count(*) = 1 AND min(last_seq - seq) = 1 THEN 0 ELSE 1 END FROM trace)`).Scan(&bad))
		if bad != 0 {
			t.Fatalf("%d rows fail the checks the triggers skipped", bad)
		}

		for _, q := range []string{
			eventInsert("events", []string{"r"}, 100),
			`INSERT INTO trace (run_id, seq, last_seq, kinds, bodies, recorded_at) VALUES ('r', 100, 100, '{k}', '{"\\x00"}', 0)`,
		} {
			for _, set := range []string{"", "SELECT set_config('" + tickAt + "', '', true); "} {
				_, err := s.pool.Exec(ctx, "BEGIN; "+set+q+"; ROLLBACK")
				if pgCode(err) != pgChecked {
					t.Fatalf("%s%s: err = %v, want the check's %s", set, q, err, pgChecked)
				}
				s.pool.Exec(ctx, "ROLLBACK")
			}
		}

		// Refused, the store forgets the run's head: the next tick is the
		// two-round-trip one, without the fence's setting.
		mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("X", `{}`)}}), store.CodeHeadMismatch)
		if err := s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{storetest.Ev("D", `{"n":4}`)}}); err == nil {
			t.Fatalf("a two-round-trip tick's events were not checked")
		}
	})
}
