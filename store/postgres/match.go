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
	if scan > 0 {
		err := tx.QueryRow(ctx, matchBound, after, scan-1).Scan(&bound, &boundID)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, "", s.mapErr("match runs", "", err)
		}
	}
	rows, err := tx.Query(ctx, matchRuns, after, bound, f.State, f.WorkflowID, f.WorkflowVersion, limit, f.WorkflowIDs)
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
