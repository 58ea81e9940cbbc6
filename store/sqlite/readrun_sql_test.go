package sqlite

import (
	"context"
	"database/sql/driver"

	"flrh.dev/flrh/store"
)

// The record reads as they ran through database/sql, the oracle the
// driver's own reads (readrun_raw.go) are held to: the statement run by
// read, each row scanned into Scanners that keep the driver's values.

// cell is a Scan destination that keeps the driver's value as it is.
type cell struct{ v any }

// Scan implements sql.Scanner.
func (c *cell) Scan(src any) error {
	c.v = src
	return nil
}

func (s *Store) queryRecordsSQL(ctx context.Context, query string, args []driver.NamedValue, c *cells, row rowFunc) bool {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	rows, err := s.read(ctx, query, vals...)
	if err != nil {
		return false
	}
	defer rows.Close()
	var kept [recordWidth]cell
	var dest [recordWidth]any
	for i := range dest {
		dest[i] = &kept[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest[:]...); err != nil {
			return false
		}
		for i := range kept {
			c.row[i] = kept[i].v
		}
		if !row(c) {
			return false
		}
	}
	return rows.Err() == nil
}

// ReadRunRecordInOneSQL is ReadRunRecordInOne read through database/sql.
func (s *Store) ReadRunRecordInOneSQL(ctx context.Context, runID string, all bool) (store.RunRecord, bool) {
	return s.readRunRecordBy(ctx, runID, all, s.queryRecordsSQL)
}

// ReadRunRecordsInOneSQL is ReadRunRecordsInOne read through database/sql.
func (s *Store) ReadRunRecordsInOneSQL(ctx context.Context, ids []string, all bool) ([]store.RunRecord, []bool) {
	recs := make([]store.RunRecord, len(ids))
	return recs, s.readRunRecordsBy(ctx, ids, all, recs, s.queryRecordsSQL)
}
