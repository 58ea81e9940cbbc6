package withrunner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/tamper"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/postgres"
	"pgregory.net/rapid"
)

// pgCrash is what a cut function panics with to stop a runner where it
// stands, as a SIGKILL would.
type pgCrash string

// On PostgreSQL as on SQLite (the runner's TestResumeAfterAnyCellChanged):
// a run stopped at a cut point, then any one cell of its rows changed
// behind the store's back (an array's cell one element), then resumed by
// a fresh runner: no panic, the destination applies the run's one logical
// effect at most once, and a run that ends SUCCEEDED had it applied. Each
// draw is a run of its own in one schema.
func TestResumeAfterAnyCellChangedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("a crashed run per draw")
	}
	schema := freshSchema(t)
	st := openNamed(t, schema, "flrh-tampered", postgres.Options{MaxConns: 4})
	conn, err := st.Pool().Acquire(ctx)
	must(t, err)
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Skipf("cannot turn triggers off for a connection (needs a superuser): %v", err)
	}
	sb, err := sandbox.New(sandbox.Options{})
	must(t, err)
	wf := demo.Refunds{AutoLimit: 100, Destination: "payments-sandbox"}
	newRunner := func(cut func(string)) *runner.Runner {
		reg := &effect.Registry{}
		must(t, reg.Register("refund.pay", "http/1", sb.Adapter()))
		r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "runner-1",
			Cut: cut, Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
		must(t, err)
		return r
	}
	type column struct {
		table, col, typ string
		array           bool
	}
	var cols []column
	rows, err := conn.Query(ctx, `SELECT c.table_name, c.column_name,
			CASE WHEN c.data_type = 'ARRAY' THEN ltrim(c.udt_name, '_') ELSE c.data_type END, c.data_type = 'ARRAY'
		FROM information_schema.columns c
		WHERE c.table_schema = $1 AND (c.data_type IN ('bigint', 'integer', 'text', 'bytea', 'boolean')
			OR c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_bytea'))
			AND EXISTS (SELECT FROM information_schema.columns k WHERE k.table_schema = $1 AND k.table_name = c.table_name
				AND k.column_name IN ('run_id', 'intent_id'))
		ORDER BY 1, 2`, schema)
	must(t, err)
	for rows.Next() {
		var c column
		must(t, rows.Scan(&c.table, &c.col, &c.typ, &c.array))
		cols = append(cols, c)
	}
	rows.Close()
	if len(cols) < 30 {
		t.Fatalf("only %d columns", len(cols))
	}
	var names []string
	for _, c := range cols {
		if n := pgxIdent(schema) + "." + pgxIdent(c.table); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	tables := strings.Join(names, ", ")
	draws := 0
	outcomes := map[string]int{}
	tamper.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		id, payee := fmt.Sprintf("run-%04d", draws), fmt.Sprintf("payee-%04d", draws)
		// Each draw starts from empty tables: a change can move a row to
		// any run, a later draw's among them.
		defer func() {
			if _, err := conn.Exec(ctx, `TRUNCATE `+tables+` CASCADE`); err != nil { // run_labels, keyed by the creation order, with runs
				t.Fatal(err)
			}
		}()
		// Mutations are counted from here: a change to the run's input
		// (its inbox body) may rename the payee, so the body cannot say
		// whose a mutation is, but draws run one after another.
		before := len(sb.Mutations())
		point := rapid.SampledFrom(tamper.CutPoints).Draw(rt, "cut point")
		crashed := newRunner(func(p string) {
			if p == point {
				panic(pgCrash(p))
			}
		})
		in := fmt.Sprintf(`{"refunds":[{"id":"r-%04d","amount":10,"payee":%q,"reason":"damaged item"}]}`, draws, payee)
		must(t, crashed.Start(ctx, id, wf.ID(), wf.Version(), []byte(in)))
		func() {
			defer func() {
				if p := recover(); p != pgCrash(point) {
					t.Fatalf("did not stop at %s: %v", point, p)
				}
			}()
			crashed.RunToIdle(ctx)
		}()

		// One cell of the run's own rows.
		c := rapid.SampledFrom(cols).Draw(rt, "column")
		table := pgxIdent(schema) + "." + pgxIdent(c.table)
		mine := `coalesce(to_jsonb(t)->>'run_id', (SELECT i.run_id FROM ` + pgxIdent(schema) + `.intents i WHERE i.intent_id = to_jsonb(t)->>'intent_id')) = $1`
		expr := c.col
		if c.array {
			var most int
			must(t, conn.QueryRow(ctx, `SELECT coalesce(max(cardinality(`+c.col+`)), 0) FROM `+table+` t WHERE `+mine, id).Scan(&most))
			if most == 0 {
				rt.Skipf("%s.%s holds no elements for the run", c.table, c.col)
			}
			expr = c.col + `[` + strconv.Itoa(rapid.IntRange(1, most).Draw(rt, "element")) + `]`
		}
		text := expr + `::text`
		if c.typ == "bytea" {
			text = `encode(` + expr + `, 'hex')`
		}
		var tids, vals []string
		rs, err := conn.Query(ctx, `SELECT ctid::text, coalesce(`+text+`, '') FROM `+table+` t WHERE `+mine+` AND `+expr+` IS NOT NULL ORDER BY ctid`, id)
		must(t, err)
		for rs.Next() {
			var tid, v string
			must(t, rs.Scan(&tid, &v))
			tids, vals = append(tids, tid), append(vals, v)
		}
		rs.Close()
		if len(tids) == 0 {
			rt.Skipf("%s has no rows of the run", c.table)
		}
		i := rapid.IntRange(0, len(tids)-1).Draw(rt, "row")
		v := tamper.DrawPostgres(rt, c.typ, vals[i])
		if _, err := conn.Exec(ctx, `UPDATE `+table+` SET `+expr+` = $1::`+c.typ+` WHERE ctid = $2::tid`, v, tids[i]); err != nil {
			rt.Skipf("%s.%s = %v: %v", c.table, expr, v, err)
		}
		what := fmt.Sprintf("cut at %s, %s.%s of %s = %v", point, c.table, expr, id, v)

		var runErr error
		func() {
			defer func() {
				if p := recover(); p != nil {
					rt.Fatalf("%s: the resumed runner panicked: %v", what, p)
				}
			}()
			runErr = newRunner(nil).RunToIdle(ctx)
		}()
		applied := len(sb.Mutations()) - before
		run, readErr := st.Run(ctx, id)
		outcome, broken := tamper.Resumed(run, readErr, runErr, applied)
		if broken != nil {
			rt.Fatalf("%s: %v", what, broken)
		}
		outcomes[outcome]++
	})
	t.Logf("%d draws; the run after each: %v", draws, outcomes)
}

// pgxIdent quotes an SQL identifier.
func pgxIdent(s string) string { return `"` + s + `"` }
