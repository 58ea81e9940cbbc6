package postgres

import (
	"context"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// The filtered listing's two reads: the scan bound's run (the scan-th
// after the cursor), and the runs the filter selects up to it.
const (
	matchBound = `SELECT created_order, run_id FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0)
ORDER BY created_order LIMIT 1 OFFSET $2`
	matchRuns = `SELECT ` + runColumns + ` FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0) AND created_order <= $2
AND ($3 = '' OR state = $3) AND ($4 = '' OR workflow_id = $4) AND ($5 = '' OR workflow_version = $5)
AND ($7::text[] IS NULL OR workflow_id = ANY($7::text[]))
ORDER BY created_order LIMIT $6`
)

// With labels in the filter, the same two reads are driven by run_labels:
// the filter's first label (in key order) found by the table's key, in
// creation order, and the others each by its key too. $1 is the cursor,
// $2 and $3 the first label, $4 every label as a JSON object.
const (
	labelledFrom = `FROM run_labels l JOIN runs ON runs.created_order = l.created_order
WHERE l.key = $2 AND l.value = $3
AND l.created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = $1), 0)
AND NOT EXISTS (SELECT 1 FROM jsonb_each_text($4::jsonb) j
	WHERE NOT EXISTS (SELECT 1 FROM run_labels x WHERE x.key = j.key AND x.value = j.value AND x.created_order = l.created_order))`
	matchBoundLabelled = `SELECT l.created_order, runs.run_id ` + labelledFrom + `
ORDER BY l.created_order LIMIT 1 OFFSET $5`
	matchRunsLabelled = `SELECT ` + runColumns + ` ` + labelledFrom + ` AND l.created_order <= $5
AND ($6 = '' OR state = $6) AND ($7 = '' OR workflow_id = $7) AND ($8 = '' OR workflow_version = $8)
AND ($10::text[] IS NULL OR workflow_id = ANY($10::text[]))
ORDER BY l.created_order LIMIT $9`
)

// MatchRuns implements store.RunMatcher. Its two reads share one
// read-only, repeatable-read transaction.
func (s *Store) MatchRuns(ctx context.Context, after string, limit, scan int, f store.RunFilter) ([]store.Run, string, error) {
	if err := store.ValidateMatch(limit, scan); err != nil {
		return nil, "", err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, "", s.mapErr("match runs", "", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	bound, boundID := int64(math.MaxInt64), ""
	key, value, all := f.IndexLabel()
	if scan > 0 {
		var row pgx.Row
		if all == "" {
			row = tx.QueryRow(ctx, matchBound, after, scan-1)
		} else {
			row = tx.QueryRow(ctx, matchBoundLabelled, after, key, value, all, scan-1)
		}
		if err := row.Scan(&bound, &boundID); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, "", s.mapErr("match runs", "", err)
		}
	}
	var rows pgx.Rows
	if all == "" {
		rows, err = tx.Query(ctx, matchRuns, after, bound, f.State, f.WorkflowID, f.WorkflowVersion, limit, f.WorkflowIDs)
	} else {
		rows, err = tx.Query(ctx, matchRunsLabelled, after, key, value, all, bound, f.State, f.WorkflowID, f.WorkflowVersion, limit, f.WorkflowIDs)
	}
	if err != nil {
		return nil, "", s.mapErr("match runs", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", s.mapErr("match runs", "", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.mapErr("match runs", "", err)
	}
	return out, store.MatchNext(out, limit, boundID), nil
}
