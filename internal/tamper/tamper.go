// Package tamper changes an embedded (SQLite) store's records behind the
// store's back, for tests that prove what the runtime makes of a record
// changed from outside: one cell of any table set to another value drawn
// for its type, or one row removed. Only tests import it.
package tamper

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"flrh.dev/flrh/store"
	"pgregory.net/rapid"
)

// Column is one column of one table.
type Column struct{ Table, Name string }

// Key is the SQL expression that names a row of table: its rowid or, for
// the tables without one, its primary key as text.
func Key(table string) string {
	switch table {
	case "attempts":
		return "intent_order || '/' || n"
	case "inbox":
		return "run_id || '/' || seq"
	case "pruned", "resealing":
		return "run_id"
	case "duties":
		return "name"
	case "run_labels":
		return "key || '=' || value || '/' || created_order"
	}
	return "rowid"
}

// Columns lists every column of every table of the database.
func Columns(db *sql.DB) ([]Column, error) {
	rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_schema m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' ORDER BY m.name, p.cid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		if err := rows.Scan(&c.Table, &c.Name); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// Cell is one value of a column: the key of its row (Key), SQLite's type
// of it (integer, text, blob, real or null) and its bytes (an integer's
// in decimal).
type Cell struct {
	Key, Type string
	Value     []byte
}

// Cells reads column c of the rows where holds (SQL over the table's own
// columns; "true" for all), in the order of their keys.
func Cells(db *sql.DB, c Column, where string) ([]Cell, error) {
	rows, err := db.Query(fmt.Sprintf(`SELECT %s, typeof(%s), CAST(%s AS BLOB) FROM %s WHERE %s ORDER BY 1`,
		Key(c.Table), c.Name, c.Name, c.Table, where))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Cell
	for rows.Next() {
		var x Cell
		if err := rows.Scan(&x.Key, &x.Type, &x.Value); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// Draw draws a new value for a cell of SQLite type typ holding old: an
// integer moved by one or two, zeroed, or any value in [lo, hi]; a text's
// or blob's bytes with one byte changed by an xor in [1, limit], or, one
// time in ten (always when old is empty), emptied. ok is false for a type
// it draws no value of (null, real).
func Draw(rt *rapid.T, typ string, old []byte, lo, hi int64, limit int) (v any, ok bool) {
	switch typ {
	case "integer":
		n, _ := strconv.ParseInt(string(old), 10, 64)
		switch rapid.IntRange(0, 2).Draw(rt, "how") {
		case 0:
			return n + int64(rapid.SampledFrom([]int{-2, -1, 1, 2}).Draw(rt, "step")), true
		case 1:
			return int64(0), true
		default:
			return rapid.Int64Range(lo, hi).Draw(rt, "value"), true
		}
	case "text", "blob":
		b := append([]byte(nil), old...)
		if len(b) == 0 || rapid.IntRange(0, 9).Draw(rt, "empty") == 0 {
			b = b[:0]
		} else {
			b[rapid.IntRange(0, len(b)-1).Draw(rt, "byte")] ^= byte(rapid.IntRange(1, limit).Draw(rt, "xor"))
		}
		if typ == "text" {
			return string(b), true
		}
		return b, true
	}
	return nil, false
}

// DrawPostgres is Draw for a PostgreSQL value of SQL type typ (bigint,
// integer, smallint, boolean, text or bytea) shown as text (a bytea in
// hex): an integer in 32 bits, a boolean flipped, a text's or bytea's
// bytes changed by an xor below 128 or emptied. It is nil for another type.
func DrawPostgres(rt *rapid.T, typ, shown string) any {
	var v any
	switch typ {
	case "bigint", "integer", "smallint":
		v, _ = Draw(rt, "integer", []byte(shown), -1<<31, 1<<31-1, 127)
	case "boolean":
		v = shown != "true"
	case "text":
		v, _ = Draw(rt, "text", []byte(shown), 0, 0, 127)
	case "bytea":
		old, _ := hex.DecodeString(shown)
		v, _ = Draw(rt, "blob", old, 0, 0, 127)
	}
	return v
}

// dropGuards drops, on conn, the triggers whose names end in suffix: those
// that keep the evidence tables append-only, as someone with the file
// could drop them.
func dropGuards(conn *sql.Conn, suffix string) error {
	rows, err := conn.QueryContext(context.Background(), `SELECT name FROM sqlite_schema WHERE type = 'trigger'`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		if strings.HasSuffix(n, suffix) {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		if _, err := conn.ExecContext(context.Background(), `DROP TRIGGER `+n); err != nil {
			return err
		}
	}
	return nil
}

// Set sets the cell of column c in the row key names to v, with the
// append-only guards dropped. Its error is the schema's refusal of v (a
// CHECK, NOT NULL or type), or that key names no single row.
func Set(db *sql.DB, c Column, key string, v any) error {
	return onOne(db, "_no_update", fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s = ?`, c.Table, c.Name, Key(c.Table)), v, key)
}

// Remove removes the row of table that key names, with the append-only
// guards dropped and the foreign keys off (for the connection that
// removes it alone).
func Remove(db *sql.DB, table, key string) error {
	return onOne(db, "_no_delete", fmt.Sprintf(`DELETE FROM %s WHERE %s = ?`, table, Key(table)), key)
}

// onOne runs stmt, which must change exactly one row, on one connection
// with the guards named by suffix dropped and the foreign keys off.
func onOne(db *sql.DB, suffix, stmt string, args ...any) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := dropGuards(conn, suffix); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	defer conn.ExecContext(ctx, `PRAGMA foreign_keys = ON`)
	res, err := conn.ExecContext(ctx, stmt, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("tamper: %d rows changed by %s", n, stmt)
	}
	return nil
}

// CutPoints are the cut points on a one-effect run's path where the resume
// properties stop it: before its intent is committed, after, and after the
// destination applied the effect but before its receipt.
var CutPoints = []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt"}

// Resumed classifies a one-effect run a fresh runner resumed after a
// change: how it stands (read is the run's row and readErr the error of
// reading it, runErr the runner's), given the mutations the destination
// applied for its one logical effect. Its error is a broken promise: more
// than one mutation, or a run that SUCCEEDED without exactly one.
func Resumed(run store.Run, readErr, runErr error, applied int) (string, error) {
	switch {
	case applied > 1:
		return "", fmt.Errorf("%d mutations at the destination for one logical effect", applied)
	case readErr != nil:
		return "unreadable", nil
	case run.State == "SUCCEEDED" && applied != 1:
		return "", fmt.Errorf("the run SUCCEEDED with %d mutations", applied)
	case run.Quarantine != "":
		return "quarantined", nil
	case runErr != nil:
		return "error", nil
	}
	return run.State, nil
}
