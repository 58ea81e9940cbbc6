package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"

	"flrh.dev/flrh/store"
)

// The filtered listing's two reads: the scan bound's run (the scan-th
// after the cursor), and the runs the filter selects up to it.
const (
	matchBound = `SELECT created_order, run_id FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = ?), 0)
ORDER BY created_order LIMIT 1 OFFSET ?`
	matchRuns = `SELECT ` + runColumns + ` FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = ?), 0) AND created_order <= ?
AND (? = '' OR state = ?) AND (? = '' OR workflow_id = ?) AND (? = '' OR workflow_version = ?)
AND (? = '' OR workflow_id IN (SELECT value FROM json_each(?)))
ORDER BY created_order LIMIT ?`
)

// MatchRuns implements store.RunMatcher. Its two reads share one read
// transaction.
func (s *Store) MatchRuns(ctx context.Context, after string, limit, scan int, f store.RunFilter) ([]store.Run, string, error) {
	if err := store.ValidateMatch(limit, scan); err != nil {
		return nil, "", err
	}
	s.settle(ctx)
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", mapErr("match runs", "", err)
	}
	defer tx.Rollback()
	bound, boundID := int64(math.MaxInt64), ""
	if scan > 0 {
		err := tx.QueryRowContext(ctx, matchBound, after, scan-1).Scan(&bound, &boundID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, "", mapErr("match runs", "", err)
		}
	}
	set := workflowSet(f.WorkflowIDs)
	rows, err := tx.QueryContext(ctx, matchRuns, after, bound, f.State, f.State, f.WorkflowID, f.WorkflowID, f.WorkflowVersion, f.WorkflowVersion, set, set, limit)
	if err != nil {
		return nil, "", mapErr("match runs", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", mapErr("match runs", "", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapErr("match runs", "", err)
	}
	return out, store.MatchNext(out, limit, boundID), nil
}

// workflowSet is a filter's set of workflows as the JSON array json_each
// reads, or "" for none given: any workflow.
func workflowSet(ids []string) string {
	if ids == nil {
		return ""
	}
	b, _ := json.Marshal(append([]string{}, ids...))
	return string(b)
}
