package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// eventInsert is one statement inserting a row of one event per run in
// runs, each at its own position, into table.
func eventInsert(table string, runs []string, seq int) string {
	vals := make([]string, len(runs))
	for i, r := range runs {
		vals[i] = fmt.Sprintf(`('%s', %d, %d, '{k}', '{"\\x00"}', '{NULL}', '{d}', NULL, 'p', '{NULL}', '{c}', 1, 0)`, r, seq+i, seq+i)
	}
	return `INSERT INTO ` + table + ` (run_id, seq, last_seq, kinds, bodies, digest_sums, digests, prev_sum, prev_hash, chain_sums, chain_hashes, generation, recorded_at) VALUES ` +
		strings.Join(vals, ", ")
}

// An event naming a run that does not exist is refused with the foreign
// key's SQLSTATE, which the store maps as before, and nothing of the
// statement is stored; one naming existing runs is stored. This holds for
// a session whose search_path is not the store's schema too.
func TestEventRunChecked(t *testing.T) {
	s := openTest(t, Options{})
	l := setupRun(t, s, "r", "ap1")
	must(t, s.Commit(ctx, l, bigTick(0, "ap1", nil)))
	must(t, s.CreateRun(ctx, store.Run{ID: "q", WorkflowID: "wf", State: "S"}))
	before := state(t, s, "r")
	adm := admin(t)
	qualified := pgx.Identifier{s.Schema(), "events"}.Sanitize()
	for _, tc := range []struct {
		name    string
		runs    []string
		missing string
	}{
		{"one existing", []string{"r"}, ""},
		{"two existing runs", []string{"r", "q", "r"}, ""},
		{"missing", []string{"nope"}, "nope"},
		{"missing after existing", []string{"r", "q", "gone"}, "gone"},
		{"missing before existing", []string{"gone", "r"}, "gone"},
		{"empty run id", []string{""}, `""`},
	} {
		for _, via := range []struct {
			name string
			exec func(string) error
			sql  string
		}{
			{"store's pool", func(q string) error { _, err := s.pool.Exec(ctx, q); return err }, "events"},
			{"other search_path", func(q string) error { _, err := adm.Exec(ctx, q); return err }, qualified},
		} {
			t.Run(tc.name+" via "+via.name, func(t *testing.T) {
				// Each in a transaction rolled back, so that a stored row
				// does not stay.
				q := "BEGIN; " + eventInsert(via.sql, tc.runs, 100) + "; ROLLBACK"
				err := via.exec(q)
				if tc.missing == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				if pgCode(err) != pgForeignKeyViolation {
					t.Fatalf("err = %v, want SQLSTATE %s", err, pgForeignKeyViolation)
				}
				if !strings.Contains(err.Error(), `"events"`) || !strings.Contains(err.Error(), tc.missing) {
					t.Errorf("message %q names neither the table nor the run", err)
				}
				if got := store.CodeOf(mapErr("commit", "x", err)); got != store.CodeNotFound {
					t.Errorf("maps to %s, want %s", got, store.CodeNotFound)
				}
				via.exec("ROLLBACK")
			})
		}
	}
	if got := state(t, s, "r"); got != before {
		t.Fatalf("run changed: %s, was %s", got, before)
	}
}

// The trigger refuses exactly what the foreign key it replaced refused: a
// statement of random rows naming existing and missing runs goes to a
// table with the key and to events, and both store it or both refuse it
// with 23503.
func TestEventRunCheckRefusesWhatTheKeyRefused(t *testing.T) {
	s := openTest(t, Options{})
	for _, r := range []string{"a", "b", "c"} {
		must(t, s.CreateRun(ctx, store.Run{ID: r, WorkflowID: "wf", State: "S"}))
	}
	_, err := s.pool.Exec(ctx, `CREATE TABLE keyed_events (LIKE events INCLUDING DEFAULTS, PRIMARY KEY (run_id, seq), FOREIGN KEY (run_id) REFERENCES runs(run_id))`)
	must(t, err)
	refused := map[bool]int{}
	rapid.Check(t, func(rt *rapid.T) {
		runs := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "x", "y"}), 0, 8).Draw(rt, "runs")
		if len(runs) == 0 {
			// An empty insert: INSERT ... SELECT of no rows.
			for _, table := range []string{"keyed_events", "events"} {
				if code := rolledBackCode(s, `INSERT INTO `+table+` SELECT * FROM events WHERE false`); code != "" {
					rt.Fatalf("empty insert into %s refused with %s", table, code)
				}
			}
			return
		}
		was, is := rolledBackCode(s, eventInsert("keyed_events", runs, 1)), rolledBackCode(s, eventInsert("events", runs, 1))
		if was != is || (is != "" && is != pgForeignKeyViolation) {
			rt.Fatalf("%v: the key %q, the trigger %q", runs, was, is)
		}
		refused[is != ""]++
	})
	if refused[true] == 0 || refused[false] == 0 {
		t.Fatalf("%d stored, %d refused: the test would prove nothing", refused[false], refused[true])
	}
}

// A run is never deleted, truncated or given another run_id, even by
// someone writing SQL by hand; updating anything else of it, or its run_id
// to the same value, still works.
func TestRunsKept(t *testing.T) {
	s := openTest(t, Options{})
	l := setupRun(t, s, "r", "ap1")
	must(t, s.Commit(ctx, l, bigTick(0, "ap1", nil)))
	must(t, s.CreateRun(ctx, store.Run{ID: "bare", WorkflowID: "wf", State: "S"}))
	before := state(t, s, "r")
	adm := admin(t)
	runs := pgx.Identifier{s.Schema(), "runs"}.Sanitize()
	// The bare run has no rows in the tables that still hold a foreign key
	// to runs: only the triggers stand in the way of deleting or renaming
	// it. TRUNCATE without CASCADE is refused by those keys before any
	// trigger runs.
	for _, tc := range []struct{ q, code string }{
		{`DELETE FROM runs WHERE run_id = 'bare'`, pgAppendOnly},
		{`DELETE FROM runs`, pgAppendOnly},
		{`TRUNCATE runs CASCADE`, pgAppendOnly},
		{`UPDATE runs SET run_id = 'other' WHERE run_id = 'bare'`, pgAppendOnly},
		{`TRUNCATE runs`, "0A000"},
		{`UPDATE runs SET run_id = run_id || 'x' WHERE run_id = 'r'`, pgAppendOnly},
	} {
		q := strings.Replace(tc.q, "runs", runs, 1)
		_, err := adm.Exec(ctx, q)
		if pgCode(err) != tc.code {
			t.Errorf("%s: err = %v, want SQLSTATE %s", q, err, tc.code)
			continue
		}
		if got := store.CodeOf(mapErr("x", "", err)); tc.code == pgAppendOnly && got != store.CodeInvalidTransition {
			t.Errorf("%s maps to %s", q, got)
		}
	}
	for _, q := range []string{`UPDATE runs SET run_id = run_id`, `UPDATE runs SET state = state WHERE run_id = 'bare'`} {
		if _, err := adm.Exec(ctx, strings.Replace(q, "runs", runs, 1)); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got := state(t, s, "r"); got != before {
		t.Fatalf("run changed: %s, was %s", got, before)
	}
	if _, err := s.Run(ctx, "bare"); err != nil {
		t.Fatalf("bare run: %v", err)
	}
}

// rolledBackCode runs sql in a transaction it rolls back and returns the
// SQLSTATE it failed with, or "" when it succeeded.
func rolledBackCode(s *Store, sql string) string {
	_, err := s.pool.Exec(ctx, "BEGIN; "+sql+"; ROLLBACK")
	if err != nil {
		s.pool.Exec(ctx, "ROLLBACK")
	}
	return pgCode(err)
}
