package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
)

// ParkDelivery implements store.DeliveryParking: the delivery is written
// (or refused again) and the hook's oldest beyond keep dropped, in one
// transaction, at the database's clock.
func (s *Store) ParkDelivery(ctx context.Context, d store.ParkedDelivery, keep int) error {
	const op = "park delivery"
	if err := store.ValidateParked(d, keep); err != nil {
		return err
	}
	body, err := store.SealBody(s.sealer, op, store.ParkedRef(d.Key), d.Body)
	if err != nil {
		return err
	}
	return s.write(ctx, op, "", func(tx *wtx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO parked_deliveries (key, hook, event, body, status, reason, first_at, last_at, times)
VALUES ($1, $2, $3, $4, $5, $6, `+nowParam(7)+`, `+nowParam(7)+`, 1)
ON CONFLICT (key) DO UPDATE SET event = excluded.event, body = excluded.body, status = excluded.status, reason = excluded.reason,
	last_at = greatest(excluded.last_at, parked_deliveries.last_at), times = parked_deliveries.times + 1`,
			d.Key, d.Hook, d.Event, body, d.Status, d.Reason, s.injected()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM parked_deliveries WHERE hook = $1 AND key NOT IN
	(SELECT key FROM parked_deliveries WHERE hook = $1 ORDER BY last_at DESC, key DESC LIMIT $2)`, d.Hook, keep)
		return err
	})
}

const parkedColumns = `key, hook, event, body, status, reason, first_at, last_at, times`

// ParkedDeliveries implements store.DeliveryParking.
func (s *Store) ParkedDeliveries(ctx context.Context, hook string, limit int) ([]store.ParkedDelivery, error) {
	const op = "parked deliveries"
	if err := store.ValidateParkedList(hook, limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+parkedColumns+` FROM parked_deliveries WHERE hook = $1 ORDER BY last_at DESC, key DESC LIMIT $2`, hook, limit)
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	defer rows.Close()
	var out []store.ParkedDelivery
	for rows.Next() {
		d, err := s.scanParked(op, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(op, "", err)
	}
	return out, nil
}

// ParkedDelivery implements store.DeliveryParking.
func (s *Store) ParkedDelivery(ctx context.Context, key string) (store.ParkedDelivery, error) {
	const op = "parked delivery"
	if err := store.ValidateParkedKey(op, key); err != nil {
		return store.ParkedDelivery{}, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+parkedColumns+` FROM parked_deliveries WHERE key = $1`, key)
	if err != nil {
		return store.ParkedDelivery{}, s.mapErr(op, "", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.ParkedDelivery{}, s.mapErr(op, "", err)
		}
		return store.ParkedDelivery{}, store.Errorf(store.CodeNotFound, op, "", nil, "no delivery %q is parked", key)
	}
	return s.scanParked(op, rows)
}

func (s *Store) scanParked(op string, rows pgx.Rows) (store.ParkedDelivery, error) {
	var d store.ParkedDelivery
	var first, last int64
	var status, times int32
	if err := rows.Scan(&d.Key, &d.Hook, &d.Event, &d.Body, &status, &d.Reason, &first, &last, &times); err != nil {
		return d, s.mapErr(op, "", err)
	}
	d.Status, d.Times, d.First, d.Last = int(status), int(times), fromNanos(first), fromNanos(last)
	var err error
	d.Body, err = store.OpenBody(s.sealer, op, store.ParkedRef(d.Key), d.Body)
	return d, err
}

// UnparkDelivery implements store.DeliveryParking.
func (s *Store) UnparkDelivery(ctx context.Context, key string) (bool, error) {
	const op = "unpark delivery"
	if err := store.ValidateParkedKey(op, key); err != nil {
		return false, err
	}
	// Most deliveries taken were never parked: a read first spares them a
	// write transaction.
	var one int
	switch err := s.pool.QueryRow(ctx, `SELECT 1 FROM parked_deliveries WHERE key = $1`, key).Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.mapErr(op, "", err)
	}
	dropped := false
	err := s.write(ctx, op, "", func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM parked_deliveries WHERE key = $1`, key)
		dropped = err == nil && tag.RowsAffected() > 0
		return err
	})
	return dropped, err
}

// ParkedCounts implements store.DeliveryParking.
func (s *Store) ParkedCounts(ctx context.Context) ([]store.ParkedCount, error) {
	const op = "parked counts"
	rows, err := s.pool.Query(ctx, `SELECT hook, count(*), min(first_at) FROM parked_deliveries GROUP BY hook ORDER BY hook`)
	if err != nil {
		return nil, s.mapErr(op, "", err)
	}
	defer rows.Close()
	var out []store.ParkedCount
	for rows.Next() {
		var c store.ParkedCount
		var n, oldest int64
		if err := rows.Scan(&c.Hook, &n, &oldest); err != nil {
			return nil, s.mapErr(op, "", err)
		}
		c.Count, c.Oldest = int(n), fromNanos(oldest)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(op, "", err)
	}
	return out, nil
}
