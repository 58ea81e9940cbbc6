package runner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"flrh.dev/flrh/store/sqlite"
	"pgregory.net/rapid"
)

// A run stopped at a cut point (as a SIGKILL would stop it) whose store
// then has any one cell of any table changed behind its back, to any value
// the schema takes, is resumed by a fresh runner without a panic, and
// whatever the runner makes of it, the destination applies the run's one
// logical effect at most once, and a run that ends SUCCEEDED had it
// applied. The change may leave the run quarantined, failed or waiting:
// a store changed from outside is not the runner's to repair, only never
// to turn into a second payment or a success without one.
func TestResumeAfterAnyCellChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("a store and a crashed run per draw")
	}
	points := []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"}
	draws := 0
	outcomes := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		point := rapid.SampledFrom(points).Draw(rt, "cut point")
		dir, err := os.MkdirTemp(t.TempDir(), "draw")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		clock := newFakeClock()
		s, err := sqlite.Open(ctx, filepath.Join(dir, "flrh.db"), sqlite.Options{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		h := &harness{t: t, store: s, dest: newDestination(), path: filepath.Join(dir, "flrh.db"), clock: clock}
		h.crashAt(point, "run", small)

		// One cell, drawn over every table's columns and rows.
		db := s.DB()
		type cell struct{ table, col string }
		var cols []cell
		rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_schema m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c cell
			if err := rows.Scan(&c.table, &c.col); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		rows.Close()
		c := rapid.SampledFrom(cols).Draw(rt, "column")
		key := "rowid"
		switch c.table { // the tables without a rowid, by their primary keys
		case "attempts":
			key = "intent_order || '/' || n"
		case "inbox":
			key = "run_id || '/' || seq"
		}
		var keys []string
		var types []string
		var vals [][]byte
		rows, err = db.Query(fmt.Sprintf(`SELECT %s, typeof(%s), CAST(%s AS BLOB) FROM %s ORDER BY 1`, key, c.col, c.col, c.table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			var typ string
			var v []byte
			if err := rows.Scan(&k, &typ, &v); err != nil {
				t.Fatal(err)
			}
			keys, types, vals = append(keys, k), append(types, typ), append(vals, v)
		}
		rows.Close()
		if len(keys) == 0 {
			rt.Skipf("%s has no rows", c.table)
		}
		i := rapid.IntRange(0, len(keys)-1).Draw(rt, "row")
		var v any
		switch types[i] {
		case "integer":
			old, _ := strconv.ParseInt(string(vals[i]), 10, 64)
			switch rapid.IntRange(0, 2).Draw(rt, "how") {
			case 0:
				v = old + int64(rapid.SampledFrom([]int{-2, -1, 1, 2}).Draw(rt, "step"))
			case 1:
				v = int64(0)
			default:
				v = rapid.Int64Range(math.MinInt64, math.MaxInt64).Draw(rt, "value")
			}
		case "text", "blob":
			b := append([]byte(nil), vals[i]...)
			if len(b) == 0 || rapid.IntRange(0, 9).Draw(rt, "empty") == 0 {
				b = b[:0]
			} else {
				b[rapid.IntRange(0, len(b)-1).Draw(rt, "byte")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
			}
			if types[i] == "text" {
				v = string(b)
			} else {
				v = b
			}
		default:
			rt.Skipf("%s.%s is %s", c.table, c.col, types[i])
		}
		for _, trig := range []string{"events", "receipts", "intents", "checkpoints", "trace"} {
			if _, err := db.Exec("DROP TRIGGER IF EXISTS " + trig + "_no_update"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s = ?`, c.table, c.col, key), v, keys[i]); err != nil {
			rt.Skipf("%s.%s = %v: %v", c.table, c.col, v, err)
		}
		what := fmt.Sprintf("cut at %s, %s.%s[%s] = %v", point, c.table, c.col, keys[i], v)

		h.r = h.runner(nil)
		var runErr error
		func() {
			defer func() {
				if p := recover(); p != nil {
					rt.Fatalf("%s: the resumed runner panicked: %v", what, p)
				}
			}()
			runErr = h.r.RunToIdle(ctx)
		}()
		if n := h.dest.count(); n > 1 {
			rt.Fatalf("%s: %d mutations at the destination for one logical effect", what, n)
		}
		run, err := s.Run(ctx, "run")
		switch {
		case err != nil:
			outcomes["unreadable"]++
		case run.State == "SUCCEEDED" && h.dest.count() != 1:
			rt.Fatalf("%s: the run SUCCEEDED with %d mutations", what, h.dest.count())
		case run.Quarantine != "":
			outcomes["quarantined"]++
		case runErr != nil:
			outcomes["error"]++
		default:
			outcomes[run.State]++
		}
	})
	t.Logf("%d draws; the run after each: %v", draws, outcomes)
}
