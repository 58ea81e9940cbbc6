package sqlite

import (
	"context"

	"flrh.dev/flrh/store"
)

// The runs an operator must look at, after the census's counts
// (store.CensusCounts).
const censusRuns = `SELECT ` + runColumns + ` FROM runs
WHERE outcome = '' AND (quarantine <> '' OR lease_owner <> '' AND lease_expires_at <= ?) ORDER BY created_order`

// Census implements store.CensusTaker. Its two reads share one read
// transaction, so the counts and the lists are of one moment.
func (s *Store) Census(ctx context.Context, q store.CensusQuery) (store.Census, error) {
	s.settle(ctx)
	var c store.Census
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return c, mapErr("census", "", err)
	}
	defer tx.Rollback()
	counts, err := tx.QueryContext(ctx, store.CensusCounts(q.ByState))
	if err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	defer counts.Close()
	for counts.Next() {
		var state string
		var n, ended, live int64
		if err := counts.Scan(&state, &n, &ended, &live); err != nil {
			return store.Census{}, mapErr("census", "", err)
		}
		c.Count(state, n, ended, live)
	}
	if err := counts.Err(); err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pruned`).Scan(&c.Pruned); err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	rows, err := tx.QueryContext(ctx, censusRuns, nanos(q.ExpiredBy))
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
			c.AddQuarantined(r)
		} else {
			c.Expired = append(c.Expired, r)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Census{}, mapErr("census", "", err)
	}
	return c, nil
}

var _ store.LiveHeadLister = (*Store)(nil)

// LiveHeadsIn implements store.LiveHeadLister, from the live runs' index
// as LiveIn.
func (s *Store) LiveHeadsIn(ctx context.Context, state string) ([]store.RunHead, error) {
	rows, err := s.read(ctx, `SELECT run_id, head_seq, head_hash, updated_at FROM runs INDEXED BY runs_live
WHERE outcome = '' AND quarantine = '' AND state = ? ORDER BY created_order`, state)
	if err != nil {
		return nil, mapErr("live heads in", "", err)
	}
	defer rows.Close()
	var out []store.RunHead
	for rows.Next() {
		var h store.RunHead
		var updated int64
		if err := rows.Scan(&h.ID, &h.Head, &h.HeadHash, &updated); err != nil {
			return nil, mapErr("live heads in", "", err)
		}
		h.UpdatedAt = fromNanos(updated)
		out = append(out, h)
	}
	return out, mapErr("live heads in", "", rows.Err())
}

// LiveIn implements store.CensusTaker, from the live runs' index (state,
// creation order, id).
func (s *Store) LiveIn(ctx context.Context, state string) ([]store.Run, error) {
	rows, err := s.read(ctx, `SELECT `+runColumns+` FROM runs INDEXED BY runs_live
WHERE outcome = '' AND quarantine = '' AND state = ? ORDER BY created_order`, state)
	if err != nil {
		return nil, mapErr("live in", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, mapErr("live in", "", err)
		}
		out = append(out, r)
	}
	return out, mapErr("live in", "", rows.Err())
}
