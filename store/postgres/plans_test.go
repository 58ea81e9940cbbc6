package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// The store's sessions run prepared statements on generic plans, unless
// the DSN says otherwise.
func TestGenericPlans(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ param, want string }{
		{"", "force_generic_plan"},
		{"plan_cache_mode=auto", "auto"},
	} {
		d := dsn(t)
		if c.param != "" {
			sep := "?"
			if strings.Contains(d, "?") {
				sep = "&"
			}
			if !strings.Contains(d, "://") {
				sep = " "
			}
			d += sep + c.param
		}
		s, err := Open(ctx, d, Options{Schema: freshSchema(t)})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = s.pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&got)
		s.Close()
		if err != nil || got != c.want {
			t.Fatalf("DSN %q: plan_cache_mode %q (%v), want %q", c.param, got, err, c.want)
		}
	}
}

// The one-round-trip fence updates its run by the run's key: its generic
// plan, made on a young database's small tables, reads the run's row
// through the primary key and never walks the live runs (runs_live) or
// scans the table, whose cost would grow with the runs.
func TestFenceUpdatesItsRunByKey(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	for _, r := range []string{"a", "b", "c"} {
		must(t, s.CreateRun(ctx, store.Run{ID: r, WorkflowID: "wf", State: "S"}))
	}
	conn, err := s.pool.Acquire(ctx)
	must(t, err)
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "fence_plan", fenceAheadSQL)
	must(t, err)
	args := strings.TrimSuffix(strings.Repeat("NULL, ", len(sd.ParamOIDs)), ", ")
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE fence_plan(`+args+`)`)
	must(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "runs_live") || strings.Contains(plan, "Seq Scan on runs") || !strings.Contains(plan, "Update on runs") {
		t.Fatalf("the fence's plan reads more than its run:\n%s", plan)
	}
}
