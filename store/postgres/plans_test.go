package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
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

// The one-round-trip fence refuses a tick whenever the run's row fails any
// of its conditions — another lease generation or owner, an expired lease,
// a quarantined or ended run, another head — and the tick leaves nothing
// (refused there, the store reads the run and refuses it in Go: what this
// catches is a fence that lets one through).
func TestFenceRefusesEveryStaleCondition(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	tick := func(head int64) store.Tick {
		return store.Tick{ExpectHead: head, State: "NEXT", Events: []store.Event{storetest.Ev("AUTH", `{"a":1}`)}}
	}
	for i, change := range []string{
		"", "lease_generation = lease_generation + 1", "lease_owner = 'other'", "lease_expires_at = 1",
		"quarantine = 'q'", "outcome = 'done'", "head_seq = head_seq + 1",
	} {
		run := fmt.Sprintf("r%d", i)
		l := setupRun(t, s, run)
		// The first tick leaves the store the run's head: the second
		// goes on the one-round-trip path.
		must(t, s.Commit(ctx, l, tick(0)))
		if change == "" {
			// The same tick on an untouched run commits: the refusals
			// below are the changes'.
			must(t, s.Commit(ctx, l, tick(1)))
			continue
		}
		_, err := s.pool.Exec(ctx, `UPDATE runs SET `+change+` WHERE run_id = $1`, run)
		must(t, err)
		before := state(t, s, run)
		if err := s.Commit(ctx, l, tick(1)); err == nil {
			t.Fatalf("%s: the tick committed", change)
		}
		if got := state(t, s, run); got != before {
			t.Fatalf("%s: the refused tick changed the run: %s, was %s", change, got, before)
		}
	}
}
