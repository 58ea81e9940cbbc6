package sqlite

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"strings"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The runs' records are read through SQLite's own interface.
//
// Through database/sql each statement of ReadRunRecords cost a Rows with
// its own lock and a fresh slice of column values, its arguments converted
// into a fresh slice, and each row a Scan of its fifteen columns through
// convertAssign's type switches into Scanners that only kept the value.
// Through the driver's own statements (decision 1193) each column still
// cost a heap value and, for a TEXT or BLOB, a copy made before the
// reader had looked at it; and every call into SQLite for a column (its
// type, its bytes, its length) took and released the connection's mutex,
// which the driver opens every connection with. So the held reading
// connections are opened through SQLite's interface itself (the driver's
// library, modernc.org/sqlite/lib), without a mutex (SQLITE_OPEN_NOMUTEX:
// each is used by one reader at a time), with the same URI and pragmas as
// the readers' pool, and each row's cells are read where SQLite holds
// them: an integer as it is, a TEXT or BLOB copied once into what the
// record keeps, an event's hash sums written as their text straight from
// SQLite's bytes. Any other value is made into the value the driver would
// have handed on (libValue) and read as before, so every check made of
// the cells is unchanged (decision 1710).
//
// The statements are prepared once per connection. At most heldReaders
// connections are held, for the store's life; a read beyond them, or on a
// connection that cannot be opened, runs the driver's statement on a
// connection from the readers' pool (queryRecordsDriver), as do the
// statements whose columns the driver would read as times.
const heldReaders = readers / 2

// libConn is a reading connection opened through SQLite's interface, with
// the record statements prepared on it.
type libConn struct {
	tls   *libc.TLS
	db    uintptr
	stmts map[string]*libStmt
}

// libStmt is a prepared record statement. asDriver is set where a
// column's declared type would make the driver read a value as a time:
// such a statement is run through the driver.
type libStmt struct {
	tls      *libc.TLS
	p        uintptr
	asDriver bool
	// texts are, on the writing connection, the last short TEXT read in
	// each column of the statement's rows (wconn.queryRow).
	texts []string
}

// recordConns are the held reading connections: free ones, and how many
// are held in all. dsn is the readers' pool's data source name.
type recordConns struct {
	mu     sync.Mutex
	dsn    string
	free   []*libConn
	held   int
	closed bool
}

// take returns a held connection, opening a new one if fewer than
// heldReaders are held; nil when all are busy or one cannot be opened.
func (rc *recordConns) take() *libConn {
	rc.mu.Lock()
	if n := len(rc.free); n > 0 {
		c := rc.free[n-1]
		rc.free = rc.free[:n-1]
		rc.mu.Unlock()
		return c
	}
	if rc.closed || rc.held >= heldReaders || rc.dsn == "" {
		rc.mu.Unlock()
		return nil
	}
	rc.held++
	dsn := rc.dsn
	rc.mu.Unlock()
	c, err := openLibConn(dsn)
	if err != nil {
		rc.drop(nil)
		return nil
	}
	return c
}

// give hands c back after a read.
func (rc *recordConns) give(c *libConn) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed {
		c.close()
		rc.held--
		return
	}
	rc.free = append(rc.free, c)
}

// drop closes c (nil: one that was never opened) and makes room for
// another.
func (rc *recordConns) drop(c *libConn) {
	if c != nil {
		c.close()
	}
	rc.mu.Lock()
	rc.held--
	rc.mu.Unlock()
}

// close finalizes the free connections' statements and closes them; one
// in use is closed as it is given back.
func (rc *recordConns) close() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.closed = true
	for _, c := range rc.free {
		c.close()
		rc.held--
	}
	rc.free = nil
}

// openLibConn opens a connection on dsn as the driver opens one, without
// its mutex, and runs the dsn's pragmas on it as the driver does.
func openLibConn(dsn string) (*libConn, error) {
	pragmas, err := dsnPragmas(dsn)
	if err != nil {
		return nil, err
	}
	c := &libConn{tls: libc.NewTLS(), stmts: map[string]*libStmt{}}
	name, err := libc.CString(dsn)
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	defer libc.Xfree(c.tls, name)
	pp := libc.Xmalloc(c.tls, 8)
	if pp == 0 {
		c.tls.Close()
		return nil, errLib
	}
	defer libc.Xfree(c.tls, pp)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, pp, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|
		sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	c.db = readPointer(pp)
	if rc != sqlite3.SQLITE_OK {
		c.close()
		return nil, errLib
	}
	for _, p := range pragmas {
		if err := c.exec("PRAGMA " + p); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// errLib is a failure of a call into SQLite on a held connection; the
// read it stops goes on by another way.
var errLib = errors.New("sqlite: a held reading connection's call failed")

// readPointer reads the pointer SQLite wrote at p.
func readPointer(p uintptr) uintptr {
	b := libc.GoBytes(p, bits.UintSize/8)
	if bits.UintSize == 32 {
		return uintptr(binary.NativeEndian.Uint32(b))
	}
	return uintptr(binary.NativeEndian.Uint64(b))
}

func (c *libConn) exec(query string) error {
	q, err := libc.CString(query)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, q)
	if sqlite3.Xsqlite3_exec(c.tls, c.db, q, 0, 0, 0) != sqlite3.SQLITE_OK {
		return errLib
	}
	return nil
}

// prepareLib prepares query's first statement on db through SQLite's
// interface, out being room for the statement's pointer: the statement (0
// when the text holds none) and SQLite's result code; err only when the
// text cannot be handed to C.
func prepareLib(tls *libc.TLS, db, out uintptr, query string) (p uintptr, rc int32, err error) {
	q, err := libc.CString(query)
	if err != nil {
		return 0, 0, err
	}
	defer libc.Xfree(tls, q)
	if rc = sqlite3.Xsqlite3_prepare_v2(tls, db, q, -1, out, 0); rc != sqlite3.SQLITE_OK {
		return 0, rc, nil
	}
	return readPointer(out), rc, nil
}

// prepare returns query's statement, preparing it the first time.
func (c *libConn) prepare(query string) (*libStmt, error) {
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	pp := libc.Xmalloc(c.tls, 8)
	if pp == 0 {
		return nil, errLib
	}
	defer libc.Xfree(c.tls, pp)
	p, rc, err := prepareLib(c.tls, c.db, pp, query)
	if err != nil {
		return nil, err
	}
	if rc != sqlite3.SQLITE_OK || p == 0 {
		return nil, errLib // refused, or no statement in the text
	}
	st := &libStmt{tls: c.tls, p: p}
	n := int32(sqlite3.Xsqlite3_column_count(c.tls, st.p))
	for i := range n {
		switch strings.ToUpper(libc.GoString(sqlite3.Xsqlite3_column_decltype(c.tls, st.p, i))) {
		case "DATE", "DATETIME", "TIMESTAMP":
			st.asDriver = true
		}
	}
	c.stmts[query] = st
	return st, nil
}

func (c *libConn) close() {
	for _, st := range c.stmts {
		sqlite3.Xsqlite3_finalize(c.tls, st.p)
	}
	c.stmts = nil
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	c.tls.Close()
}

// query runs st with args and hands each row to row in c. ok is as
// queryRecords' ok; failed is set where a call into SQLite failed (the
// connection is then closed rather than kept).
func (st *libStmt) query(ctx context.Context, args []driver.NamedValue, c *cells, row rowFunc) (ok, failed bool) {
	defer func() {
		sqlite3.Xsqlite3_reset(st.tls, st.p)
		sqlite3.Xsqlite3_clear_bindings(st.tls, st.p)
		c.st = nil
	}()
	for _, a := range args {
		switch v := a.Value.(type) {
		case nil:
			if sqlite3.Xsqlite3_bind_null(st.tls, st.p, int32(a.Ordinal)) != sqlite3.SQLITE_OK {
				return false, true
			}
		case string:
			p, err := libc.CString(v)
			if err != nil {
				return false, true
			}
			rc := sqlite3.Xsqlite3_bind_text(st.tls, st.p, int32(a.Ordinal), p, int32(len(v)), sqlite3.SQLITE_TRANSIENT)
			libc.Xfree(st.tls, p)
			if rc != sqlite3.SQLITE_OK {
				return false, true
			}
		default:
			return false, false // not an argument the record reads bind
		}
	}
	if sqlite3.Xsqlite3_column_count(st.tls, st.p) != recordWidth {
		return false, false
	}
	c.lib = libRow{st: st}
	c.st = &c.lib
	for n := 0; ; n++ {
		if n&63 == 0 && ctx.Err() != nil {
			return false, false
		}
		switch sqlite3.Xsqlite3_step(st.tls, st.p) {
		case sqlite3.SQLITE_ROW:
			c.lib.vals = [recordWidth]uintptr{}
		case sqlite3.SQLITE_DONE:
			return true, false
		default:
			return false, true
		}
		if !row(c) {
			return false, false
		}
	}
}

// The cells of the current row, read where SQLite holds them.

func (st *libStmt) typ(i int) int32 { return sqlite3.Xsqlite3_column_type(st.tls, st.p, int32(i)) }

func (st *libStmt) int64(i int) int64 { return sqlite3.Xsqlite3_column_int64(st.tls, st.p, int32(i)) }

// textBytes are the bytes of a TEXT cell, and blobBytes of a BLOB cell,
// where SQLite holds them until the statement steps on: to be copied
// before then.
func (st *libStmt) textBytes(i int) []byte {
	p := sqlite3.Xsqlite3_column_text(st.tls, st.p, int32(i))
	return cellBytes(p, sqlite3.Xsqlite3_column_bytes(st.tls, st.p, int32(i)))
}

func (st *libStmt) blobBytes(i int) []byte {
	p := sqlite3.Xsqlite3_column_blob(st.tls, st.p, int32(i))
	return cellBytes(p, sqlite3.Xsqlite3_column_bytes(st.tls, st.p, int32(i)))
}

// cellBytes are the n bytes SQLite holds at p for a cell (nil when there
// are none), until the statement steps on.
func cellBytes(p uintptr, n int32) []byte {
	if p == 0 || n <= 0 {
		return nil
	}
	return libc.GoBytes(p, int(n))
}

// libRow is the current row of a record statement on a held connection,
// its cells read through the values SQLite hands out for them
// (sqlite3_column_value), each looked up once a row. Each column_* call
// (libStmt's typ, int64, textBytes, blobBytes) looks the cell up again
// and then checks the statement for a failed allocation, and a cell read
// takes two or three of them; the value_* calls on the looked-up value
// are what those calls make after the look-up. An allocation that fails
// in a value_* call fails the statement's next step as it would after a
// column_* call, and the read goes on by parts.
type libRow struct {
	st   *libStmt
	vals [recordWidth]uintptr // the cells' values in this row; 0 until looked up
}

// val is cell i's value.
func (r *libRow) val(i int) uintptr {
	if v := r.vals[i]; v != 0 {
		return v
	}
	v := sqlite3.Xsqlite3_column_value(r.st.tls, r.st.p, int32(i))
	r.vals[i] = v
	return v
}

func (r *libRow) typ(i int) int32 { return sqlite3.Xsqlite3_value_type(r.st.tls, r.val(i)) }

func (r *libRow) int64(i int) int64 { return sqlite3.Xsqlite3_value_int64(r.st.tls, r.val(i)) }

// textBytes and blobBytes are libStmt's, read from the cell's value.
func (r *libRow) textBytes(i int) []byte {
	v := r.val(i)
	p := sqlite3.Xsqlite3_value_text(r.st.tls, v)
	return cellBytes(p, sqlite3.Xsqlite3_value_bytes(r.st.tls, v))
}

func (r *libRow) blobBytes(i int) []byte {
	v := r.val(i)
	p := sqlite3.Xsqlite3_value_blob(r.st.tls, v)
	return cellBytes(p, sqlite3.Xsqlite3_value_bytes(r.st.tls, v))
}

// value is cell i as the driver's Rows.Next hands it on for a column whose
// declared type is not a time's: an int64, a float64, a string, a []byte
// (nil when empty) or nil.
func (r *libRow) value(i int) driver.Value {
	switch r.typ(i) {
	case sqlite3.SQLITE_INTEGER:
		return r.int64(i)
	case sqlite3.SQLITE_FLOAT:
		return sqlite3.Xsqlite3_value_double(r.st.tls, r.val(i))
	case sqlite3.SQLITE_TEXT:
		return string(r.textBytes(i))
	case sqlite3.SQLITE_BLOB:
		if b := r.blobBytes(i); b != nil {
			return bytes.Clone(b)
		}
		return nil
	default:
		return nil
	}
}

// queryRecords runs query with args on a held reading connection, outside
// any transaction, and hands each row to row in c; ok is false where the
// statement fails or row stops it (the caller then reads by parts). A
// lagging batch's open transaction is committed first, as by read.
func (s *Store) queryRecords(ctx context.Context, query string, args []driver.NamedValue, c *cells, row rowFunc) bool {
	s.settle(ctx)
	lc := s.rrecs.take()
	if lc == nil {
		return s.queryRecordsDriver(ctx, query, args, c, row)
	}
	st, err := lc.prepare(query)
	if err != nil {
		s.rrecs.drop(lc)
		return s.queryRecordsDriver(ctx, query, args, c, row)
	}
	if st.asDriver {
		s.rrecs.give(lc)
		return s.queryRecordsDriver(ctx, query, args, c, row)
	}
	ok, failed := st.query(ctx, args, c, row)
	if failed {
		s.rrecs.drop(lc)
	} else {
		s.rrecs.give(lc)
	}
	return ok
}

// queryRecordsDriver is queryRecords through the driver's own statement,
// prepared for the read on a connection from the readers' pool, each row
// read by driver.Rows.Next into the one reused array of cells.
func (s *Store) queryRecordsDriver(ctx context.Context, query string, args []driver.NamedValue, c *cells, row rowFunc) bool {
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	ok := false
	err = conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		if len(rows.Columns()) != recordWidth {
			return nil
		}
		for {
			switch err := rows.Next(c.row[:]); {
			case err == io.EOF:
				ok = true
				return nil
			case err != nil:
				return err
			}
			if !row(c) {
				return nil
			}
		}
	})
	return ok && err == nil
}

// rowFunc reads the row in c; false stops the read.
type rowFunc func(c *cells) bool
