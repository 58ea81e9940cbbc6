package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// referenceReady is the ready listing written the plain way: every run,
// looked at one by one.
const referenceReady = `SELECT run_id FROM runs r WHERE outcome = '' AND quarantine = '' AND (
	EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = r.run_id AND i.consumed = 0) OR %s) ORDER BY created_order`

// Differential: over random populations of runs (ended, quarantined,
// resting or busy, with pending and consumed inbox entries) the indexed
// listing names exactly the runs the plain query names, in the same order.
func TestReadyMatchesThePlainQuery(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	states := []string{"INGEST", "WAIT_APPROVAL", "HUMAN_RECONCILIATION", "EXECUTE", "PLAN", "SUCCEEDED"}
	round := 0
	rapid.Check(t, func(rt *rapid.T) {
		round++
		for _, table := range []string{"inbox", "runs"} {
			if _, err := s.db.ExecContext(ctx, `DELETE FROM `+table); err != nil {
				rt.Fatal(err)
			}
		}
		n := rapid.IntRange(0, 30).Draw(rt, "runs")
		for i := range n {
			id := fmt.Sprintf("r%d-%02d", round, i)
			state := rapid.SampledFrom(states).Draw(rt, "state")
			outcome := rapid.SampledFrom([]string{"", "", "success"}).Draw(rt, "outcome")
			quarantine := rapid.SampledFrom([]string{"", "", "", "parked"}).Draw(rt, "quarantine")
			created := rapid.IntRange(1, 1_000_000).Draw(rt, "created_order")
			if _, err := s.db.ExecContext(ctx, `INSERT INTO runs (run_id, workflow_id, workflow_version, state, outcome, head_hash, quarantine, created_at, updated_at, created_order)
VALUES (?, 'wf', '1', ?, ?, 'h', ?, 0, 0, ?)`, id, state, outcome, quarantine, created); err != nil {
				continue // a repeated creation order: draw on
			}
			for seq := range rapid.IntRange(0, 3).Draw(rt, "inbox") {
				consumed := rapid.IntRange(0, 1).Draw(rt, "consumed")
				if _, err := s.db.ExecContext(ctx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, consumed, recorded_at)
VALUES (?, ?, ?, 'input', 'r', 'a', 'c', x'7b7d', 'd', ?, 0)`, id, seq+1, fmt.Sprintf("in-%d", seq), consumed); err != nil {
					rt.Fatal(err)
				}
			}
		}
		resting := rapid.SliceOfDistinct(rapid.SampledFrom(states), rapid.ID[string]).Draw(rt, "resting")
		got, err := s.Ready(ctx, resting, time.Time{})
		if err != nil {
			rt.Fatal(err)
		}
		cond, args := `1`, []any{}
		if len(resting) > 0 {
			cond = `state NOT IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(resting)), ", ") + `)`
			for _, st := range resting {
				args = append(args, st)
			}
		}
		rows, err := s.db.QueryContext(ctx, fmt.Sprintf(referenceReady, cond), args...)
		if err != nil {
			rt.Fatal(err)
		}
		var want []string
		for rows.Next() {
			var id string
			rows.Scan(&id)
			want = append(want, id)
		}
		rows.Close()
		if !slices.Equal(got, want) {
			rt.Fatalf("resting %v: Ready = %v, plain query = %v", resting, got, want)
		}
	})
}

// The listing reads the two partial indexes, never a whole table: runs are
// searched by key from the pending inbox entries.
func TestReadyDoesNotScanEveryRun(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := queryPlan(t, s.db, readyQuery(1, true), "A", int64(5))
	text := strings.Join(plan, "\n")
	for _, want := range []string{"INDEX runs_live", "INDEX inbox_pending", "SEARCH r USING INDEX"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	for _, step := range plan {
		if strings.HasPrefix(step, "SCAN") && !strings.Contains(step, "runs_live") && !strings.Contains(step, "inbox_pending") {
			t.Errorf("plan scans a whole table (%s):\n%s", step, text)
		}
	}
}

// queryPlan returns the details of EXPLAIN QUERY PLAN for query with args,
// one step a line.
func queryPlan(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
