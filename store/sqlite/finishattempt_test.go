package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// finishAttemptByList is the statement finishAttempt replaced, kept as its
// oracle: the run checked with an IN over the run's intents.
const finishAttemptByList = `UPDATE attempts SET status = ?, detail = ?, finished_at = ?
WHERE intent_id = ? AND n = ? AND intent_id IN (SELECT intent_id FROM intents WHERE run_id = ?)`

// TestFinishAttemptMatchesListedIntents holds finishAttempt to the
// statement it replaced: over random intents of three runs, with random
// attempts, every result (of a known or unknown intent, attempt number and
// run) changes the same rows in the same way.
func TestFinishAttemptMatchesListedIntents(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	runs := []string{"r1", "r2", "r3"}
	ids := []string{"a", "b", "c", "d", "e"}
	rapid.Check(t, func(t *rapid.T) {
		owner := map[string]string{} // intent -> run; absent: no intent
		for _, id := range ids {
			if r := rapid.IntRange(0, len(runs)).Draw(t, "owner "+id); r < len(runs) {
				owner[id] = runs[r]
			}
		}
		attempts := map[string]int{}
		for id := range owner {
			attempts[id] = rapid.IntRange(0, 3).Draw(t, "attempts "+id)
		}
		intent := rapid.SampledFrom(append(ids, "z")).Draw(t, "intent")
		n := rapid.IntRange(0, 4).Draw(t, "n")
		run := rapid.SampledFrom(runs).Draw(t, "run")

		apply := func(stmt string) (int64, [][]any) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			for i, r := range runs {
				if _, err := tx.Exec(`INSERT INTO runs (run_id, workflow_id, workflow_version, state, head_hash, created_at, updated_at, created_order)
VALUES (?, 'wf', '1', 'S', 'h', 1, 1, ?)`, r, i+1); err != nil {
					t.Fatal(err)
				}
			}
			order := 0
			for _, id := range ids { // in a fixed order
				r, ok := owner[id]
				if !ok {
					continue
				}
				order++
				if _, err := tx.Exec(`INSERT INTO intents (intent_id, run_id, seq, commit_order, effect_type, idempotency_key, content_digest, body, digest, generation, recorded_at)
VALUES (?, ?, 1, ?, 'e', ?, 'c', x'00', 'd', 1, 1)`, id, r, order, "k-"+id); err != nil {
					t.Fatal(err)
				}
				for k := 1; k <= attempts[id]; k++ {
					if _, err := tx.Exec(`INSERT INTO attempts (intent_order, intent_id, n, status, generation, started_at) VALUES (?, ?, ?, 'started', 1, 1)`, order, id, k); err != nil {
						t.Fatal(err)
					}
				}
			}
			args := []any{"succeeded", "done", 7, intent, run, n}
			if stmt == finishAttemptByList {
				args = []any{"succeeded", "done", 7, intent, n, run}
			}
			res, err := tx.Exec(stmt, args...)
			if err != nil {
				t.Fatal(err)
			}
			changed, err := res.RowsAffected()
			if err != nil {
				t.Fatal(err)
			}
			return changed, dumpRows(t, tx, `SELECT intent_id, n, status, generation, detail, started_at, finished_at FROM attempts ORDER BY intent_id, n`)
		}
		wantN, want := apply(finishAttemptByList)
		gotN, got := apply(finishAttempt)
		if gotN != wantN || !reflect.DeepEqual(got, want) {
			t.Fatalf("finishAttempt changed %d rows to %v; the listed form %d to %v", gotN, got, wantN, want)
		}
	})
}

func dumpRows(t *rapid.T, tx *sql.Tx, q string) [][]any {
	out := queryRows(t.Fatal, tx, q)
	for _, vals := range out {
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = fmt.Sprintf("%x", b)
			}
		}
	}
	return out
}
