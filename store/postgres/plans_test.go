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
	plan := genericPlan(t, fenceAheadSQL)
	if strings.Contains(plan, "runs_live") || strings.Contains(plan, "Seq Scan on runs") || !strings.Contains(plan, "Update on runs") {
		t.Fatalf("the fence's plan reads more than its run:\n%s", plan)
	}
}

// The one-round-trip fence runs in as few plan nodes as its checks need:
// the update of the run's row found by its key, its checks and the tick's
// time in the scan's condition, and the guard as an aggregate over the
// update's rows. Every node is set up at every execution (two fences a
// governed step): no lock of its own before the update, no CTE for the
// time or the checks, no result node or subplan for the guard; the
// inbox-checking fence adds only the snapshot's count, once.
func TestFencePlanIsSmall(t *testing.T) {
	plan := genericPlan(t, fenceAheadSQL)
	if !strings.HasPrefix(plan, "Aggregate") || strings.Contains(plan, "InitPlan") || strings.Contains(plan, "Result") ||
		strings.Contains(plan, "LockRows") || strings.Count(plan, "CTE Scan") != 1 || strings.Count(plan, "->") != 3 ||
		!strings.Contains(plan, "Index Scan using runs_pkey on runs") {
		t.Fatalf("the fence's plan has more nodes than its checks need:\n%s", plan)
	}
	inbox := genericPlan(t, `WITH w AS (`+fenceAheadInboxWrite+` RETURNING `+fenceReturning+`) SELECT `+guardOne(`count(*)`, "fence")+` FROM w`)
	if strings.Count(inbox, "InitPlan") != 1 || strings.Count(inbox, "->") != 4 || strings.Contains(inbox, "runs_live") ||
		strings.Count(inbox, "Index Scan using runs_pkey on runs") != 2 {
		t.Fatalf("the inbox-checking fence's plan has more nodes than its checks need:\n%s", inbox)
	}
}

// The merged group's fence locks and updates its runs by their key too:
// its generic plan, made on a young database's small tables, reads the
// runs' rows through the primary key alone, never scanning the table (the
// lock's semi-join did) nor walking the live runs (its UPDATE did).
func TestMergedFenceUpdatesItsRunsByKey(t *testing.T) {
	plan := genericPlan(t, mergedFenceSQL)
	if strings.Contains(plan, "runs_live") || strings.Contains(plan, "Seq Scan on runs") ||
		strings.Count(plan, "Index Scan using runs_pkey on runs") != 2 || !strings.Contains(plan, "Update on runs") {
		t.Fatalf("the merged fence's plan reads more than its runs:\n%s", plan)
	}
}

// genericPlan is sql's generic plan as the store's sessions make it, on a
// young database of three runs.
func genericPlan(t *testing.T, sql string) string {
	t.Helper()
	ctx := context.Background()
	s := openTest(t, Options{})
	for _, r := range []string{"a", "b", "c"} {
		must(t, s.CreateRun(ctx, store.Run{ID: r, WorkflowID: "wf", State: "S"}))
	}
	conn, err := s.pool.Acquire(ctx)
	must(t, err)
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "plan", sql)
	must(t, err)
	args := strings.TrimSuffix(strings.Repeat("NULL, ", len(sd.ParamOIDs)), ", ")
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE plan(`+args+`)`)
	must(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return strings.Join(lines, "\n")
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

// The merged group's fence refuses the whole group whenever one run's row
// fails any of its conditions — another lease generation or owner, an
// expired lease, a quarantined or ended run, another head or head hash —
// and moves every run on when none does.
func TestMergedFenceRefusesEveryStaleCondition(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	tick := store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{}`)}}
	for i, change := range []string{
		"", "lease_generation = lease_generation + 1", "lease_owner = 'other'", "lease_expires_at = 1",
		"quarantine = 'q'", "outcome = 'done'", "head_seq = head_seq + 1", "head_hash = 'sha256:other'",
	} {
		var runs, owners, hashes, newHashes, states, outcomes []string
		var gens, heads, newHeads []int64
		for _, suffix := range []string{"a", "b", "c"} {
			run := fmt.Sprintf("m%d%s", i, suffix)
			l := setupRun(t, s, run)
			must(t, s.Commit(ctx, l, tick))
			var head int64
			var hash string
			must(t, s.pool.QueryRow(ctx, `SELECT head_seq, head_hash FROM runs WHERE run_id = $1`, run).Scan(&head, &hash))
			runs, owners, gens, heads, hashes = append(runs, run), append(owners, l.Owner), append(gens, l.Generation), append(heads, head), append(hashes, hash)
			newHeads, newHashes, states, outcomes = append(newHeads, head+1), append(newHashes, "sha256:next"), append(states, "NEXT"), append(outcomes, "")
		}
		if change != "" {
			_, err := s.pool.Exec(ctx, `UPDATE runs SET `+change+` WHERE run_id = $1`, runs[1])
			must(t, err)
		}
		tx, err := s.pool.Begin(ctx)
		must(t, err)
		_, err = tx.Exec(ctx, mergedFenceSQL, runs, owners, gens, heads, hashes, newHeads, newHashes, states, outcomes,
			[]*int64{nil, nil, nil}, false, int64(len(runs)), make([]int64, len(runs)))
		var moved int64
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE run_id = ANY($1) AND head_hash = 'sha256:next' AND state = 'NEXT'`, runs).Scan(&moved)
		}
		must(t, tx.Rollback(ctx))
		switch {
		case change == "" && (err != nil || moved != 3):
			t.Fatalf("the fence moved %d runs of 3 (%v)", moved, err)
		case change != "" && err == nil:
			t.Fatalf("%s: the merged fence let the group through", change)
		}
	}
}
