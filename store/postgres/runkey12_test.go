package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
)

// tickTables are the tables other than events that a tick inserts into
// with a run, each checked once per statement since migration 12.
var tickTables = []string{"checkpoints", "trace", "intents", "outbox", "receipts", "inbox"}

// tickInsert is SQL inserting, into table (any of tickTables, named
// through q), one row per run in runs, each with its own position or identifier from n on. Rows of
// outbox and receipts name intents, which it inserts first for run "via"
// (an existing run) in a statement of their own, so that only the row's
// own run can be missing.
func tickInsert(q func(string) string, table, via string, runs []string, n int) string {
	var pre string
	if table == "outbox" || table == "receipts" {
		ids := make([]string, len(runs))
		for i := range runs {
			ids[i] = fmt.Sprintf("t%d", n+i)
		}
		pre = intentRows(q("intents"), via, ids, n) + "; "
	}
	vals := make([]string, len(runs))
	for i, r := range runs {
		k := n + i
		switch table {
		case "checkpoints":
			vals[i] = fmt.Sprintf(`('%s', %d, 1, 1, 'b', '\x00', 'd', 1, 0)`, r, k)
		case "trace":
			vals[i] = fmt.Sprintf(`('%s', %d, %d, ARRAY['k'], ARRAY['\x00'::bytea], 0)`, r, k, k)
		case "intents":
			vals[i] = fmt.Sprintf(`('i%d', '%s', %d, 'e', 'key-i%d', 'c', '\x00', 'd', 1, 0)`, k, r, k, k)
		case "outbox":
			vals[i] = fmt.Sprintf(`('t%d', '%s', 'pending', 0)`, k, r)
		case "receipts":
			vals[i] = fmt.Sprintf(`('t%d', '%s', 'ok', '\x00', 'd', 1, 0)`, k, r)
		case "inbox":
			vals[i] = fmt.Sprintf(`('%s', %d, 'in%d', 'k', 'role', 'actor', 'cap', '\x00', 'd', 0)`, r, k, k)
		}
	}
	cols := map[string]string{
		"checkpoints": "run_id, n, seq, format_version, build_digest, body, digest, generation, recorded_at",
		"trace":       "run_id, seq, last_seq, kinds, bodies, recorded_at",
		"intents":     intentCols,
		"outbox":      "intent_id, run_id, status, updated_at",
		"receipts":    "intent_id, run_id, outcome, body, digest, generation, recorded_at",
		"inbox":       "run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at",
	}[table]
	return pre + `INSERT INTO ` + q(table) + ` (` + cols + `) VALUES ` + strings.Join(vals, ", ")
}

const intentCols = "intent_id, run_id, seq, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at"

// intentRows inserts into intents (already named) one intent per id for
// run.
func intentRows(intents, run string, ids []string, n int) string {
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = fmt.Sprintf(`('%s', '%s', %d, 'e', 'key-%s', 'c', '\x00', 'd', 1, 0)`, id, run, n+i, id)
	}
	return `INSERT INTO ` + intents + ` (` + intentCols + `) VALUES ` + strings.Join(vals, ", ")
}

// A row of any table a tick inserts into naming a run that does not exist
// is refused with the foreign key's SQLSTATE, naming the table and the
// run, which the store maps to NOT_FOUND, and nothing of the statement is
// stored; rows naming existing runs are stored. From the store's pool and
// from a session with another search_path alike.
func TestTickTablesRunChecked(t *testing.T) {
	s := openTest(t, Options{})
	l := setupRun(t, s, "r", "ap1")
	must(t, s.Commit(ctx, l, bigTick(0, "ap1", nil)))
	must(t, s.CreateRun(ctx, store.Run{ID: "q", WorkflowID: "wf", State: "S"}))
	before := state(t, s, "r")
	adm := admin(t)
	plain := func(table string) string { return table }
	qualified := func(table string) string { return pgx.Identifier{s.Schema(), table}.Sanitize() }
	for _, table := range tickTables {
		for _, tc := range []struct {
			name    string
			runs    []string
			missing string
		}{
			{"existing", []string{"r", "q", "r"}, ""},
			{"missing", []string{"nope"}, "nope"},
			{"missing after existing", []string{"r", "q", "gone"}, "gone"},
			{"missing before existing", []string{"gone", "r"}, "gone"},
			{"empty run id", []string{""}, `""`},
		} {
			for _, via := range []struct {
				name string
				exec func(string) error
				q    func(string) string
			}{
				{"store's pool", func(q string) error { _, err := s.pool.Exec(ctx, q); return err }, plain},
				{"other search_path", func(q string) error { _, err := adm.Exec(ctx, q); return err }, qualified},
			} {
				t.Run(table+" "+tc.name+" via "+via.name, func(t *testing.T) {
					err := via.exec("BEGIN; " + tickInsert(via.q, table, "r", tc.runs, 100) + "; ROLLBACK")
					if tc.missing == "" {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						return
					}
					via.exec("ROLLBACK")
					if pgCode(err) != pgForeignKeyViolation {
						t.Fatalf("err = %v, want SQLSTATE %s", err, pgForeignKeyViolation)
					}
					if !strings.Contains(err.Error(), `"`+table+`"`) || !strings.Contains(err.Error(), tc.missing) {
						t.Errorf("message %q names not the table and the run", err)
					}
					if got := store.CodeOf(mapErr("commit", "x", err)); got != store.CodeNotFound {
						t.Errorf("maps to %s, want %s", got, store.CodeNotFound)
					}
				})
			}
		}
	}
	// An outbox or inbox row is updated, but never its run; an update that
	// leaves the run as it is still works.
	for _, tc := range []struct{ q, code string }{
		{`UPDATE outbox SET run_id = 'q'`, pgAppendOnly},
		{`UPDATE outbox SET run_id = 'nope'`, pgAppendOnly},
		{`UPDATE inbox SET run_id = 'q' WHERE run_id = 'r'`, pgAppendOnly},
		{`UPDATE outbox SET run_id = run_id`, ""},
		{`UPDATE inbox SET run_id = run_id, consumed = consumed`, ""},
	} {
		_, err := s.pool.Exec(ctx, "BEGIN; "+tc.q+"; ROLLBACK")
		if err != nil {
			s.pool.Exec(ctx, "ROLLBACK")
		}
		if pgCode(err) != tc.code {
			t.Errorf("%s: err = %v, want SQLSTATE %q", tc.q, err, tc.code)
		}
		if tc.code == pgAppendOnly {
			if got := store.CodeOf(mapErr("x", "", err)); got != store.CodeInvalidTransition {
				t.Errorf("%s maps to %s", tc.q, got)
			}
		}
	}
	var n int
	must(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE run_id = 'r'`).Scan(&n))
	if n == 0 {
		t.Fatal("no outbox row for r: the update cases proved nothing")
	}
	if got := state(t, s, "r"); got != before {
		t.Fatalf("run changed: %s, was %s", got, before)
	}
}

// Each table's trigger refuses exactly what its foreign key refused: a
// statement of random rows naming existing and missing runs goes to a copy
// of the table with the key and to the table, and both store it or both
// refuse it with 23503.
func TestTickTablesRunCheckRefusesWhatTheKeyRefused(t *testing.T) {
	s := openTest(t, Options{})
	for _, r := range []string{"a", "b", "c"} {
		must(t, s.CreateRun(ctx, store.Run{ID: r, WorkflowID: "wf", State: "S"}))
	}
	for _, table := range tickTables {
		_, err := s.pool.Exec(ctx, `CREATE TABLE keyed_`+table+` (LIKE `+table+` INCLUDING ALL, FOREIGN KEY (run_id) REFERENCES runs(run_id))`)
		must(t, err)
	}
	outcome := func(sql string) string {
		_, err := s.pool.Exec(ctx, "BEGIN; "+sql+"; ROLLBACK")
		if err != nil {
			s.pool.Exec(ctx, "ROLLBACK")
		}
		return pgCode(err)
	}
	refused := map[bool]int{}
	rapid.Check(t, func(rt *rapid.T) {
		table := rapid.SampledFrom(tickTables).Draw(rt, "table")
		runs := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "x", "y"}), 1, 8).Draw(rt, "runs")
		keyed := func(t string) string {
			if t == table {
				return "keyed_" + t
			}
			return t
		}
		plain := func(t string) string { return t }
		was, is := outcome(tickInsert(keyed, table, "a", runs, 1)), outcome(tickInsert(plain, table, "a", runs, 1))
		if was != is || (is != "" && is != pgForeignKeyViolation) {
			rt.Fatalf("%s %v: the key %q, the trigger %q", table, runs, was, is)
		}
		refused[is != ""]++
	})
	if refused[true] == 0 || refused[false] == 0 {
		t.Fatalf("%d stored, %d refused: the test would prove nothing", refused[false], refused[true])
	}
}
