package sqlite

import (
	"context"
	"time"

	"flrh.dev/flrh/store"
)

// The census's two reads: the counts, and the runs an operator must look
// at.
const (
	censusCounts = `SELECT count(*), count(*) FILTER (WHERE outcome <> ''),
	count(*) FILTER (WHERE outcome = '' AND quarantine = '') FROM runs`
	censusRuns = `SELECT ` + runColumns + ` FROM runs
WHERE outcome = '' AND (quarantine <> '' OR lease_owner <> '' AND lease_expires_at <= ?) ORDER BY created_order`
)

// Census implements store.CensusTaker. Its two reads share one read
// transaction, so the counts and the lists are of one moment.
func (s *Store) Census(ctx context.Context, expiredBy time.Time) (store.Census, error) {
	s.settle(ctx)
	var c store.Census
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return c, mapErr("census", "", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, censusCounts).Scan(&c.Runs, &c.Ended, &c.Live); err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	rows, err := tx.QueryContext(ctx, censusRuns, nanos(expiredBy))
	if err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return store.Census{}, mapErr("census", "", err)
		}
		if r.Quarantine != "" {
			c.Quarantined = append(c.Quarantined, r)
		} else {
			c.Expired = append(c.Expired, r)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	return c, nil
}
