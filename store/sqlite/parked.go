package sqlite

import (
	"context"
	"database/sql"
	"time"

	"flrh.dev/flrh/store"
)

// ParkDelivery implements store.DeliveryParking: the delivery is written
// (or refused again) and the hook's oldest beyond keep dropped, in one
// transaction, committed to the disk as a tick is.
func (s *Store) ParkDelivery(ctx context.Context, d store.ParkedDelivery, keep int) error {
	const op = "park delivery"
	if err := store.ValidateParked(d, keep); err != nil {
		return err
	}
	body, err := store.SealBody(s.sealer, op, store.ParkedRef(d.Key), d.Body)
	if err != nil {
		return err
	}
	return s.write(ctx, op, "", func(ctx context.Context, tx *wtx, now time.Time) error {
		at := now.UnixNano()
		if _, err := s.exec(ctx, tx, `INSERT INTO parked_deliveries (key, hook, event, body, status, reason, first_at, last_at, times)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, 1)
ON CONFLICT (key) DO UPDATE SET event = excluded.event, body = excluded.body, status = excluded.status, reason = excluded.reason,
	last_at = max(excluded.last_at, parked_deliveries.last_at), times = parked_deliveries.times + 1`,
			d.Key, d.Hook, d.Event, body, d.Status, d.Reason, at); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `DELETE FROM parked_deliveries WHERE hook = ?1 AND key NOT IN
	(SELECT key FROM parked_deliveries WHERE hook = ?1 ORDER BY last_at DESC, key DESC LIMIT ?2)`, d.Hook, keep)
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
	rows, err := s.read(ctx, `SELECT `+parkedColumns+` FROM parked_deliveries WHERE hook = ? ORDER BY last_at DESC, key DESC LIMIT ?`, hook, limit)
	if err != nil {
		return nil, mapErr(op, "", err)
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
	return out, mapErr(op, "", rows.Err())
}

// ParkedDelivery implements store.DeliveryParking.
func (s *Store) ParkedDelivery(ctx context.Context, key string) (store.ParkedDelivery, error) {
	const op = "parked delivery"
	if err := store.ValidateParkedKey(op, key); err != nil {
		return store.ParkedDelivery{}, err
	}
	rows, err := s.read(ctx, `SELECT `+parkedColumns+` FROM parked_deliveries WHERE key = ?`, key)
	if err != nil {
		return store.ParkedDelivery{}, mapErr(op, "", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return store.ParkedDelivery{}, mapErr(op, "", err)
		}
		return store.ParkedDelivery{}, store.Errorf(store.CodeNotFound, op, "", nil, "no delivery %q is parked", key)
	}
	return s.scanParked(op, rows)
}

func (s *Store) scanParked(op string, rows *sql.Rows) (store.ParkedDelivery, error) {
	var d store.ParkedDelivery
	var first, last int64
	if err := rows.Scan(&d.Key, &d.Hook, &d.Event, &d.Body, &d.Status, &d.Reason, &first, &last, &d.Times); err != nil {
		return d, mapErr(op, "", err)
	}
	d.First, d.Last = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
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
	// write, and the write lock.
	rows, err := s.read(ctx, `SELECT 1 FROM parked_deliveries WHERE key = ?`, key)
	if err != nil {
		return false, mapErr(op, "", err)
	}
	parked := rows.Next()
	if err := rows.Close(); err != nil {
		return false, mapErr(op, "", err)
	}
	if !parked {
		return false, nil
	}
	dropped := false
	err = s.write(ctx, op, "", func(ctx context.Context, tx *wtx, _ time.Time) error {
		res, err := s.exec(ctx, tx, `DELETE FROM parked_deliveries WHERE key = ?`, key)
		dropped = err == nil && res.n > 0
		return err
	})
	return dropped, err
}

// ParkedCounts implements store.DeliveryParking.
func (s *Store) ParkedCounts(ctx context.Context) ([]store.ParkedCount, error) {
	const op = "parked counts"
	rows, err := s.read(ctx, `SELECT hook, count(*), min(first_at) FROM parked_deliveries GROUP BY hook ORDER BY hook`)
	if err != nil {
		return nil, mapErr(op, "", err)
	}
	defer rows.Close()
	var out []store.ParkedCount
	for rows.Next() {
		var c store.ParkedCount
		var oldest int64
		if err := rows.Scan(&c.Hook, &c.Count, &oldest); err != nil {
			return nil, mapErr(op, "", err)
		}
		c.Oldest = time.Unix(0, oldest).UTC()
		out = append(out, c)
	}
	return out, mapErr(op, "", rows.Err())
}
