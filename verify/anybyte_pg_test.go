package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	tamperdb "flrh.dev/flrh/internal/tamper"
	"pgregory.net/rapid"
)

// The PostgreSQL store reads a record through readers of its own (a tick's
// events in one row, bulk reads of attempts and grants). Any one cell of
// any of its tables changed, to any value its type takes, leaves verify
// and its slow oracle failing alike or reporting alike for every run,
// CheckMany reporting what Run and Replay report one run at a time, and
// nothing panicking. Each draw changes a cell behind the store's back (its
// triggers off for that connection) and puts it back before the next.
func TestAnyCellChangedIsCheckedAlikeOnPostgres(t *testing.T) { checkPostgresCells(t, nil) }

// pgEvidence names, table by table, the columns of a finished run's
// evidence in the PostgreSQL store and which rows of the table are
// evidence (SQL over the table's own columns), as evidenceCells does for
// SQLite: a tick's events (their bodies, kinds and hashes, each an array
// element), the latest checkpoint, the intents, receipts and grants.
var pgEvidence = map[string]struct {
	where string
	cols  []string
}{
	"events":      {"true", []string{"bodies", "kinds", "digest_sums", "digests", "prev_sum", "prev_hash", "chain_sums", "chain_hashes"}},
	"checkpoints": {"n = (SELECT max(n) FROM %s.checkpoints c WHERE c.run_id = t.run_id)", []string{"body", "digest"}},
	"intents":     {"true", []string{"body", "digest", "idempotency_key", "effect_type"}},
	"receipts":    {"true", []string{"body", "digest", "outcome"}},
	"approvals":   {"true", []string{"body", "digest", "request_digest", "status"}},
}

// Any one byte of a finished run's evidence in the PostgreSQL store
// changed (or the value emptied) is found: verify reports it for that run
// or cannot read the run, and every other run verifies as before.
func TestAnyByteOfEvidenceChangedIsFoundOnPostgres(t *testing.T) { checkPostgresCells(t, pgEvidence) }

// checkPostgresCells draws cells of a recorded PostgreSQL store to change:
// any cell of any table (evidence nil), checked for agreement, or a cell
// of evidence, which must also be found.
func checkPostgresCells(t *testing.T, evidence map[string]struct {
	where string
	cols  []string
}) {
	t.Helper()
	if testing.Short() {
		t.Skip("a recorded store and a verification per draw")
	}
	st, schema := postgresStore(t)
	wf, ids := recordMany(t, st, 5)
	pool := st.Pool()
	// A column of an array of texts or byte strings (a tick's events are
	// kept in one row, their bodies and hashes in arrays) is changed in one
	// element: its type is the element's.
	type column struct {
		table, col, typ string
		array           bool
		where           string // the rows drawn from
	}
	var cols []column
	rows, err := pool.Query(ctx, `SELECT table_name, column_name,
			CASE WHEN data_type = 'ARRAY' THEN ltrim(udt_name, '_') ELSE data_type END, data_type = 'ARRAY'
		FROM information_schema.columns
		WHERE table_schema = $1 AND (data_type IN ('bigint', 'integer', 'smallint', 'text', 'bytea', 'boolean')
			OR data_type = 'ARRAY' AND udt_name IN ('_text', '_bytea'))
		ORDER BY table_name, ordinal_position`, schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.col, &c.typ, &c.array); err != nil {
			t.Fatal(err)
		}
		c.where = "true"
		if evidence != nil {
			e, ok := evidence[c.table]
			if !ok || !slices.Contains(e.cols, c.col) {
				continue
			}
			c.where = e.where
			if strings.Contains(c.where, "%s") {
				c.where = fmt.Sprintf(c.where, schema)
			}
		}
		cols = append(cols, c)
	}
	rows.Close()
	want := 40
	if evidence != nil {
		want = 0
		for _, e := range evidence {
			want += len(e.cols)
		}
	}
	if len(cols) < want {
		t.Fatalf("only %d columns in %s, want %d", len(cols), schema, want)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Triggers fire in the origin role only: the append-only guards stay
	// on for every other connection.
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Skipf("cannot turn triggers off for a connection (needs a superuser): %v", err)
	}
	draws, changed := 0, 0
	tamperdb.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		c := rapid.SampledFrom(cols).Draw(rt, "column")
		table := schema + `.` + c.table
		expr := c.col // the cell changed: the column, or one element of it
		if c.array {
			var card []int
			rows, err := conn.Query(ctx, `SELECT coalesce(cardinality(`+c.col+`), 0) FROM `+table+` t WHERE `+c.where+` ORDER BY ctid`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var n int
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				card = append(card, n)
			}
			rows.Close()
			most := 0
			for _, n := range card {
				most = max(most, n)
			}
			if most == 0 {
				rt.Skipf("%s.%s holds no elements", c.table, c.col)
			}
			expr = c.col + `[` + strconv.Itoa(rapid.IntRange(1, most).Draw(rt, "element")) + `]`
		}
		q := `SELECT ctid::text, coalesce(to_jsonb(t)->>'run_id', ''), ` + expr + `::text IS NULL, coalesce(` + expr + `::text, '') FROM ` + table + ` t WHERE ` + c.where + ` ORDER BY ctid`
		if c.typ == "bytea" {
			q = `SELECT ctid::text, coalesce(to_jsonb(t)->>'run_id', ''), ` + expr + ` IS NULL, coalesce(encode(` + expr + `, 'hex'), '') FROM ` + table + ` t WHERE ` + c.where + ` ORDER BY ctid`
		}
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var tids, runs, vals []string
		var nulls []bool
		for rows.Next() {
			var tid, run, v string
			var null bool
			if err := rows.Scan(&tid, &run, &null, &v); err != nil {
				t.Fatal(err)
			}
			tids, runs, nulls, vals = append(tids, tid), append(runs, run), append(nulls, null), append(vals, v)
		}
		rows.Close()
		if len(tids) == 0 {
			rt.Skipf("%s has no rows", c.table)
		}
		i := rapid.IntRange(0, len(tids)-1).Draw(rt, "row")
		if nulls[i] {
			rt.Skipf("%s.%s is null there", c.table, expr)
		}
		if vals[i] == "" && evidence != nil && (c.typ == "text" || c.typ == "bytea") {
			rt.Skipf("%s.%s is empty there", c.table, expr)
		}
		// text takes valid UTF-8 without NUL only; others are refused below
		v := tamperdb.DrawPostgres(rt, c.typ, vals[i])
		var newTID string
		err = conn.QueryRow(ctx, `UPDATE `+table+` SET `+expr+` = $1::`+c.typ+` WHERE ctid = $2::tid RETURNING ctid::text`, v, tids[i]).Scan(&newTID)
		if err != nil {
			rt.Skipf("%s.%s = %v: %v", c.table, expr, v, err)
		}
		changed++
		defer func() {
			restore := `UPDATE ` + table + ` SET ` + expr + ` = $1::text::` + c.typ + ` WHERE ctid = $2::tid`
			if c.typ == "bytea" {
				restore = `UPDATE ` + table + ` SET ` + expr + ` = decode($1, 'hex') WHERE ctid = $2::tid`
			}
			if _, err := conn.Exec(ctx, restore, vals[i], newTID); err != nil {
				t.Fatalf("putting %s.%s back: %v", c.table, expr, err)
			}
		}()
		what := fmt.Sprintf("%s.%s of run %s = %v", c.table, expr, runs[i], v)
		checkedAlike(rt, st, wf, ids, what)
		if evidence != nil {
			for _, run := range ids {
				rep, err := Run(ctx, st, nil, run)
				if run == runs[i] && err == nil && rep.OK() {
					rt.Fatalf("%s (was %s): verify finds nothing", what, vals[i])
				}
				if run != runs[i] && (err != nil || !rep.OK()) {
					rt.Fatalf("%s: run %s: %v %+v", what, run, err, rep)
				}
			}
		}
	})
	// The record is put back after every draw: it verifies as recorded.
	for _, run := range ids {
		if rep, err := Run(ctx, st, nil, run); err != nil || !rep.OK() {
			t.Fatalf("%s after the draws: %v %+v", run, err, rep)
		}
	}
	t.Logf("%d draws, %d cells changed, over %d columns", draws, changed, len(cols))
}

// Removing any one row of a finished run's evidence from the PostgreSQL
// store (a tick's events, the latest checkpoint, an intent, outbox row,
// attempt, receipt, grant, the run's own row) is found for that run or
// leaves it unreadable, the checks agree, and every other run verifies as
// before. Each row is put back before the next is removed.
func TestAnyRowOfEvidenceRemovedIsFoundOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("a recorded store and a verification per row")
	}
	st, schema := postgresStore(t)
	wf, ids := recordMany(t, st, 5)
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Triggers, foreign keys' among them, fire in the origin role only.
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Skipf("cannot turn triggers off for a connection (needs a superuser): %v", err)
	}
	where := map[string]string{
		"runs": "true", "events": "true", "intents": "true", "outbox": "true", "attempts": "true", "receipts": "true", "approvals": "true",
		"checkpoints": "n = (SELECT max(n) FROM " + schema + ".checkpoints c WHERE c.run_id = t.run_id)",
	}
	type row struct{ table, tid, run string }
	var rows []row
	for table, w := range where {
		rs, err := conn.Query(ctx, `SELECT ctid::text, coalesce(to_jsonb(t)->>'run_id',
				(SELECT i.run_id FROM `+schema+`.intents i WHERE i.intent_id = to_jsonb(t)->>'intent_id'))
			FROM `+schema+`.`+table+` t WHERE `+w)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for rs.Next() {
			r := row{table: table}
			if err := rs.Scan(&r.tid, &r.run); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		rs.Close()
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.table+a.tid, b.table+b.tid) })
	found := map[string]int{}
	for _, r := range rows {
		what := fmt.Sprintf("%s row %s of run %s removed", r.table, r.tid, r.run)
		table := schema + "." + r.table
		if _, err := conn.Exec(ctx, `CREATE TEMP TABLE removed AS SELECT * FROM `+table+` WHERE ctid = $1::tid`, r.tid); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if tag, err := conn.Exec(ctx, `DELETE FROM `+table+` WHERE ctid = $1::tid`, r.tid); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v (%d rows)", what, err, tag.RowsAffected())
		}
		rep, err := Run(ctx, st, nil, r.run)
		switch {
		case err != nil:
			found["(unreadable)"]++
		case rep.OK():
			t.Errorf("%s: verify finds nothing", what)
		default:
			found[rep.Findings[0].Check]++
		}
		for _, other := range ids {
			if other == r.run {
				continue
			}
			if orep, err := Run(ctx, st, nil, other); err != nil || !orep.OK() {
				t.Errorf("%s: run %s: %v %+v", what, other, err, orep)
			}
		}
		checkedAlike(t, st, wf, ids, what)
		if _, err := conn.Exec(ctx, `INSERT INTO `+table+` OVERRIDING SYSTEM VALUE SELECT * FROM removed; DROP TABLE removed`); err != nil {
			t.Fatalf("putting back the %s: %v", what, err)
		}
	}
	for _, run := range ids {
		if rep, err := Run(ctx, st, nil, run); err != nil || !rep.OK() {
			t.Fatalf("%s after the rows were put back: %v %+v", run, err, rep)
		}
	}
	t.Logf("%d rows removed one at a time; the first finding of each: %v", len(rows), found)
}
