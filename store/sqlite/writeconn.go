package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// The writing connection is opened through SQLite's interface.
//
// Through the driver every statement of a tick cost, besides SQLite's own
// work, a mutex taken and released around each call into SQLite (the
// driver opens every connection with SQLITE_OPEN_FULLMUTEX), a C copy of
// every TEXT and BLOB argument allocated and freed, the list of those
// copies, a result object, and every argument boxed into an interface the
// driver kept. So the store's one writing connection is opened as the
// held reading connections are (decision 1710): through the driver's
// library (modernc.org/sqlite/lib), with the same URI (so the log's VFS,
// decision 1701), the same pragmas run as the driver runs them (busy
// timeout first, then in order of their text), extended result codes on,
// as the driver sets them, and SQLITE_OPEN_NOMUTEX: it is used by one
// goroutine at a time, the batch's leader, which holds writer.mu for every
// call (withWriter, close). Statements are prepared once; an argument is
// bound from what the caller holds, a TEXT or BLOB copied into one C
// buffer the connection keeps (the driver's own copy, without its
// allocations) and bound SQLITE_STATIC: the buffer is written again only
// by the next statement's binding, after this one's reset, and no
// statement is stepped but right after every one of its parameters was
// bound anew (bind). The bindings are not cleared after the reset:
// sqlite3_clear_bindings marks a statement whose plan used a parameter's
// value as expired, and SQLite prepared it again at its next step. A failure
// is reported as the driver reports it (libError: the same text, the same
// code), so every error the store maps is the one it was (decision 1726).

// wconn is the writing connection opened through SQLite's interface.
type wconn struct {
	tls   *libc.TLS
	db    uintptr
	stmts map[string]*libStmt
	// buf is a C buffer of bufCap bytes the TEXT and BLOB arguments of
	// the statement being run are copied into; out is 8 bytes for the
	// library's out-parameters.
	buf    uintptr
	bufCap int
	out    uintptr
	main   uintptr // "main", the database file_control names
	// cells are the current row's values (queryRow), reused.
	cells []wcell
}

// libError is a failure SQLite reported on the writing connection, with
// the text and code the driver's *sqlite.Error would carry.
type libError struct {
	msg  string
	code int
}

func (e *libError) Error() string { return e.msg }

// Code is SQLite's (extended) result code.
func (e *libError) Code() int { return e.code }

// dsnPragmas returns the pragmas dsn's query names (_pragma), in the
// order the driver runs them: busy_timeout first, the rest by their text.
func dsnPragmas(dsn string) ([]string, error) {
	var pragmas []string
	if at := strings.IndexByte(dsn, '?'); at >= 0 {
		q, err := url.ParseQuery(dsn[at+1:])
		if err != nil {
			return nil, err
		}
		pragmas = q["_pragma"]
	}
	sort.SliceStable(pragmas, func(i, j int) bool {
		x, y := strings.TrimSpace(strings.ToLower(pragmas[i])), strings.TrimSpace(strings.ToLower(pragmas[j]))
		if strings.HasPrefix(x, "busy_timeout") {
			return true
		}
		if strings.HasPrefix(y, "busy_timeout") {
			return false
		}
		return x < y
	})
	return pragmas, nil
}

// openWConn opens dsn as the driver opens a connection, without its
// mutex, and runs the dsn's pragmas on it as the driver does.
func openWConn(dsn string) (*wconn, error) {
	pragmas, err := dsnPragmas(dsn)
	if err != nil {
		return nil, err
	}
	c := &wconn{tls: libc.NewTLS(), stmts: map[string]*libStmt{}}
	c.out = libc.Xmalloc(c.tls, 8)
	c.bufCap = 4 << 10
	c.buf = libc.Xmalloc(c.tls, types.Size_t(c.bufCap))
	c.main, _ = libc.CString("main")
	if c.out == 0 || c.buf == 0 || c.main == 0 {
		c.close()
		return nil, &libError{msg: "sqlite: cannot allocate the writer's buffers", code: sqlite3.SQLITE_NOMEM}
	}
	name, err := libc.CString(dsn)
	if err != nil {
		c.close()
		return nil, err
	}
	defer libc.Xfree(c.tls, name)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, c.out, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_CREATE|
		sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	c.db = readPointer(c.out)
	if rc != sqlite3.SQLITE_OK {
		err := c.errstr(rc)
		c.close()
		return nil, err
	}
	if rc := sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1); rc != sqlite3.SQLITE_OK {
		err := c.errstr(rc)
		c.close()
		return nil, err
	}
	for _, p := range pragmas {
		if _, err := c.once("pragma " + p); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// errstr is the error the driver makes of rc on this connection.
func (c *wconn) errstr(rc int32) error {
	str := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	var busy string
	if rc == sqlite3.SQLITE_BUSY {
		busy = " (SQLITE_BUSY)"
	}
	if c.db == 0 {
		return &libError{msg: fmt.Sprintf("%s (%v)%s", str, rc, busy), code: int(rc)}
	}
	if msg := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)); msg != str {
		return &libError{msg: fmt.Sprintf("%s: %s (%v)%s", str, msg, rc, busy), code: int(rc)}
	}
	return &libError{msg: fmt.Sprintf("%s (%v)%s", str, rc, busy), code: int(rc)}
}

func (c *wconn) close() {
	for _, st := range c.stmts {
		sqlite3.Xsqlite3_finalize(c.tls, st.p)
	}
	c.stmts = nil
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	if c.buf != 0 {
		libc.Xfree(c.tls, c.buf)
		c.buf = 0
	}
	for _, p := range []*uintptr{&c.out, &c.main} {
		if *p != 0 {
			libc.Xfree(c.tls, *p)
			*p = 0
		}
	}
	c.tls.Close()
}

// prepare returns query's statement, prepared the first time.
func (c *wconn) prepare(query string) (*libStmt, error) {
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	p, rc, err := prepareLib(c.tls, c.db, c.out, query)
	if err != nil {
		return nil, err
	}
	if rc != sqlite3.SQLITE_OK {
		return nil, c.errstr(rc)
	}
	st := &libStmt{tls: c.tls, p: p}
	if st.p == 0 {
		return nil, fmt.Errorf("sqlite: no statement in %q", query)
	}
	c.stmts[query] = st
	return st, nil
}

// bind binds args to st's parameters, numbered as database/sql numbers
// them: each converted as database/sql converts it for this driver
// (argValue), then bound as the driver binds that value. Nothing of args
// is kept: TEXTs and BLOBs are copied into c.buf.
func (c *wconn) bind(st *libStmt, args []any) error {
	n := int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, st.p))
	// The room the TEXTs and BLOBs take in c.buf.
	size := 0
	for _, a := range args {
		switch a := a.(type) {
		case string:
			size += len(a)
		case []byte:
			size += len(a)
		}
	}
	if err := c.room(size); err != nil {
		return err
	}
	at := c.buf
	for i := 1; i <= n; i++ {
		if i > len(args) {
			return fmt.Errorf("missing argument with index %d", i)
		}
		v, err := argValue(i, args[i-1])
		if err != nil {
			return err
		}
		var rc int32
		switch v.typ {
		case sqlite3.SQLITE_NULL:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, st.p, int32(i))
		case sqlite3.SQLITE_INTEGER:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, st.p, int32(i), v.i)
		case sqlite3.SQLITE_FLOAT:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, st.p, int32(i), v.f)
		case sqlite3.SQLITE_TEXT:
			rc = sqlite3.Xsqlite3_bind_text(c.tls, st.p, int32(i), put(&at, v.s), int32(len(v.s)), 0)
		case sqlite3.SQLITE_BLOB:
			rc = sqlite3.Xsqlite3_bind_blob(c.tls, st.p, int32(i), put(&at, v.b), int32(len(v.b)), 0)
		}
		if rc != sqlite3.SQLITE_OK {
			return c.errstr(rc)
		}
	}
	return nil
}

// room makes c.buf hold at least size bytes. What was bound from it
// before is not used again: every statement is bound anew before it runs.
func (c *wconn) room(size int) error {
	if size <= c.bufCap {
		return nil
	}
	fresh := max(size, 2*c.bufCap)
	p := libc.Xmalloc(c.tls, types.Size_t(fresh))
	if p == 0 {
		return &libError{msg: "sqlite: cannot allocate the writer's buffer", code: sqlite3.SQLITE_NOMEM}
	}
	libc.Xfree(c.tls, c.buf)
	c.buf, c.bufCap = p, fresh
	return nil
}

// binder binds a statement's parameters one after another, as bind
// binds the values argValue makes, each TEXT or BLOB copied into c.buf:
// for the writes that bind typed values rather than arguments boxed.
// The first failure is kept and reported by exec.
type binder struct {
	c   *wconn
	st  *libStmt
	at  uintptr
	i   int32
	err error
}

// binder prepares query and makes room for size bytes of TEXTs and BLOBs.
func (c *wconn) binder(query string, size int) (binder, error) {
	st, err := c.prepare(query)
	if err != nil {
		return binder{}, err
	}
	if err := c.room(size); err != nil {
		return binder{}, err
	}
	return binder{c: c, st: st, at: c.buf}, nil
}

func (b *binder) check(rc int32) {
	if rc != sqlite3.SQLITE_OK && b.err == nil {
		b.err = b.c.errstr(rc)
	}
}

func (b *binder) int64(v int64) {
	b.i++
	b.check(sqlite3.Xsqlite3_bind_int64(b.c.tls, b.st.p, b.i, v))
}

func (b *binder) text(s string) {
	b.i++
	b.check(sqlite3.Xsqlite3_bind_text(b.c.tls, b.st.p, b.i, put(&b.at, s), int32(len(s)), 0))
}

// textBytes binds p as a TEXT, as text binds string(p).
func (b *binder) textBytes(p []byte) {
	b.i++
	b.check(sqlite3.Xsqlite3_bind_text(b.c.tls, b.st.p, b.i, put(&b.at, p), int32(len(p)), 0))
}

// blob binds p as a BLOB, nil as NULL, as the driver binds a []byte.
func (b *binder) blob(p []byte) {
	b.i++
	if p == nil {
		b.check(sqlite3.Xsqlite3_bind_null(b.c.tls, b.st.p, b.i))
		return
	}
	b.check(sqlite3.Xsqlite3_bind_blob(b.c.tls, b.st.p, b.i, put(&b.at, p), int32(len(p)), 0))
}

// hash binds h as packHash stores it: the 32 bytes of a canonical sum's
// text (read through sum), any other text as it is.
func (b *binder) hash(sum *[32]byte, h string) {
	if unhexSum(sum, h) {
		b.blob(sum[:])
		return
	}
	b.text(h)
}

// exec runs the statement bound, as wconn.exec runs one; a statement
// with parameters left unbound is refused as bind refuses it.
func (b *binder) exec() (wres, error) {
	c, st := b.c, b.st
	err := b.err
	if n := sqlite3.Xsqlite3_bind_parameter_count(c.tls, st.p); err == nil && b.i < n {
		err = fmt.Errorf("missing argument with index %d", b.i+1)
	}
	return c.finish(st, err)
}

// put copies b into c.buf at *at, moving *at past it, and returns where:
// a pointer inside the buffer even for no bytes, so that an empty TEXT or
// BLOB is bound as one, not as NULL.
func put[T string | []byte](at *uintptr, b T) uintptr {
	p := *at
	if len(b) > 0 {
		copy(unsafe.Slice((*byte)(cptr(p)), len(b)), b)
		*at += uintptr(len(b))
	}
	return p
}

// argValue is a as database/sql hands it to this driver (which checks no
// named values) and the driver binds it: a driver value as it is (a bool
// as the integer 0 or 1, a nil []byte as NULL); a value of another type
// of those kinds as driver.DefaultParameterConverter converts it. Read
// through reflection and kept in a wcell, not an interface: nothing of a
// is kept, so the writer's callers box their arguments on their own
// stacks. A driver.Valuer or a pointer, which the store never binds, is
// refused.
func argValue(i int, a any) (wcell, error) {
	switch a := a.(type) {
	case nil:
		return wcell{typ: sqlite3.SQLITE_NULL}, nil
	case int64:
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: a}, nil
	case string:
		return wcell{typ: sqlite3.SQLITE_TEXT, s: a}, nil
	case []byte:
		if a == nil {
			return wcell{typ: sqlite3.SQLITE_NULL}, nil
		}
		return wcell{typ: sqlite3.SQLITE_BLOB, b: a}, nil
	case int:
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: int64(a)}, nil
	case bool:
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: int64(libc.Bool32(a))}, nil
	case float64:
		return wcell{typ: sqlite3.SQLITE_FLOAT, f: a}, nil
	}
	rv := reflect.ValueOf(a)
	t := rv.Type()
	if t.Implements(valuerType) || t.Kind() == reflect.Pointer {
		return wcell{}, fmt.Errorf("sql: converting argument $%d type: the writer binds no %s", i, t)
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: rv.Int()}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u >= 1<<63 {
			return wcell{}, fmt.Errorf("sql: converting argument $%d type: uint64 values with high bit set are not supported", i)
		}
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: int64(u)}, nil
	case reflect.Float32, reflect.Float64:
		return wcell{typ: sqlite3.SQLITE_FLOAT, f: rv.Float()}, nil
	case reflect.Bool:
		return wcell{typ: sqlite3.SQLITE_INTEGER, i: int64(libc.Bool32(rv.Bool()))}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if rv.IsNil() {
				return wcell{typ: sqlite3.SQLITE_NULL}, nil
			}
			return wcell{typ: sqlite3.SQLITE_BLOB, b: rv.Bytes()}, nil
		}
	case reflect.String:
		return wcell{typ: sqlite3.SQLITE_TEXT, s: rv.String()}, nil
	}
	return wcell{}, fmt.Errorf("sql: converting argument $%d type: unsupported type %s, a %s", i, t, t.Kind())
}

var valuerType = reflect.TypeFor[driver.Valuer]()

// wres is what a statement run by exec changed.
type wres struct{ n int64 }

// RowsAffected is the number of rows the statement changed.
func (r wres) RowsAffected() (int64, error) { return r.n, nil }

// exec runs query with args to completion, as the driver's Exec does.
func (c *wconn) exec(query string, args []any) (wres, error) {
	st, err := c.prepare(query)
	if err != nil {
		return wres{}, err
	}
	err = c.bind(st, args)
	return c.finish(st, err)
}

// finish runs st, whose arguments are bound unless err says why not, to
// its end and resets it: the rows it changed, or the first error of the
// binding, the steps and the reset.
func (c *wconn) finish(st *libStmt, err error) (wres, error) {
	if err == nil {
		err = c.stepDone(st)
	}
	var res wres
	if err == nil {
		res.n = int64(sqlite3.Xsqlite3_changes(c.tls, c.db))
	}
	if rc := sqlite3.Xsqlite3_reset(c.tls, st.p); rc != sqlite3.SQLITE_OK && err == nil {
		err = c.errstr(rc)
	}
	return res, err
}

// stepDone steps st until it is done.
func (c *wconn) stepDone(st *libStmt) error {
	for {
		switch rc := sqlite3.Xsqlite3_step(c.tls, st.p); rc {
		case sqlite3.SQLITE_DONE:
			return nil
		case sqlite3.SQLITE_ROW:
		default:
			return c.errstr(rc)
		}
	}
}

// wcell is a column of the row queryRow read: its storage class and its
// value, a TEXT copied into a string and a BLOB into a slice (nil when
// empty), as the driver hands them on.
type wcell struct {
	typ int32
	i   int64
	f   float64
	s   string
	b   []byte
}

// value is the cell as the driver's Rows.Next hands it on.
func (c *wcell) value() driver.Value {
	switch c.typ {
	case sqlite3.SQLITE_INTEGER:
		return c.i
	case sqlite3.SQLITE_FLOAT:
		return c.f
	case sqlite3.SQLITE_TEXT:
		return c.s
	case sqlite3.SQLITE_BLOB:
		return c.b // nil when empty, a nil []byte as the driver's
	}
	return nil
}

// queryRow runs a one-row query and reads its first row into r.
func (c *wconn) queryRow(query string, args []any, r *wrow) {
	st, err := c.prepare(query)
	if err != nil {
		r.err = err
		return
	}
	err = c.bind(st, args)
	if err == nil {
		switch rc := sqlite3.Xsqlite3_step(c.tls, st.p); rc {
		case sqlite3.SQLITE_ROW:
			n := int(sqlite3.Xsqlite3_column_count(c.tls, st.p))
			c.cells = c.cells[:0]
			for i := range n {
				c.cells = append(c.cells, st.keptCell(i, n))
			}
			r.cells, r.lib = c.cells, true
		case sqlite3.SQLITE_DONE:
			r.cells, r.lib = c.cells[:0], true
			r.err = sql.ErrNoRows
		default:
			err = c.errstr(rc)
		}
	}
	if rc := sqlite3.Xsqlite3_reset(c.tls, st.p); rc != sqlite3.SQLITE_OK && err == nil && r.err == nil {
		err = c.errstr(rc)
	}
	if err != nil {
		r.err = err
	}
}

// maxKeptText is the longest TEXT keptCell keeps: a run's state, its
// lease's owner, its head's hash.
const maxKeptText = 128

// keptCell is cell for a row of n columns read by queryRow: a TEXT equal,
// byte for byte, to the last one read in the same column of the
// statement's rows is that string again, not a copy. The fence reads a
// run's row tick after tick with the same state and lease owner; each was
// a string allocated at every read. A string is never written over, so
// handing the same one on to several callers is handing on its value.
func (st *libStmt) keptCell(i, n int) wcell {
	if st.typ(i) != sqlite3.SQLITE_TEXT {
		return st.cell(i)
	}
	if len(st.texts) != n {
		st.texts = make([]string, n)
	}
	b := st.textBytes(i)
	if k := st.texts[i]; k == string(b) {
		return wcell{typ: sqlite3.SQLITE_TEXT, s: k}
	}
	s := string(b)
	if len(s) <= maxKeptText {
		st.texts[i] = s
	}
	return wcell{typ: sqlite3.SQLITE_TEXT, s: s}
}

// cell reads column i of the current row.
func (st *libStmt) cell(i int) wcell {
	switch t := st.typ(i); t {
	case sqlite3.SQLITE_INTEGER:
		return wcell{typ: t, i: st.int64(i)}
	case sqlite3.SQLITE_FLOAT:
		return wcell{typ: t, f: sqlite3.Xsqlite3_column_double(st.tls, st.p, int32(i))}
	case sqlite3.SQLITE_TEXT:
		return wcell{typ: t, s: string(st.textBytes(i))}
	case sqlite3.SQLITE_BLOB:
		var b []byte
		if v := st.blobBytes(i); v != nil {
			b = append([]byte(nil), v...)
		}
		return wcell{typ: t, b: b}
	default:
		return wcell{typ: sqlite3.SQLITE_NULL}
	}
}

// dataVersion is the main database's data version
// (SQLITE_FCNTL_DATA_VERSION); false if it cannot be read.
func (c *wconn) dataVersion() (uint32, bool) {
	*(*uint32)(cptr(c.out)) = 0
	if sqlite3.Xsqlite3_file_control(c.tls, c.db, c.main, sqlite3.SQLITE_FCNTL_DATA_VERSION, c.out) != sqlite3.SQLITE_OK {
		return 0, false
	}
	return *(*uint32)(cptr(c.out)), true
}

// cacheWrites is SQLite's count of the pages the connection wrote
// (SQLITE_DBSTATUS_CACHE_WRITE), read and reset.
func (c *wconn) cacheWrites() (int, bool) {
	if sqlite3.Xsqlite3_db_status(c.tls, c.db, sqlite3.SQLITE_DBSTATUS_CACHE_WRITE, c.out, c.out+4, 1) != sqlite3.SQLITE_OK {
		return 0, false
	}
	return int(*(*int32)(cptr(c.out))), true
}

// once runs query, prepared for this run alone and not kept (a pragma
// takes effect when SQLite prepares it), and returns the first column of
// its first row as the driver hands it on (nil if none).
func (c *wconn) once(query string) (driver.Value, error) {
	p, rc, err := prepareLib(c.tls, c.db, c.out, query)
	if err != nil {
		return nil, err
	}
	if rc != sqlite3.SQLITE_OK {
		return nil, c.errstr(rc)
	}
	st := &libStmt{tls: c.tls, p: p}
	if st.p == 0 {
		return nil, nil
	}
	defer sqlite3.Xsqlite3_finalize(c.tls, st.p)
	var v driver.Value
	for {
		switch rc := sqlite3.Xsqlite3_step(c.tls, st.p); rc {
		case sqlite3.SQLITE_DONE:
			return v, nil
		case sqlite3.SQLITE_ROW:
			if v == nil && sqlite3.Xsqlite3_column_count(c.tls, st.p) > 0 {
				cl := st.cell(0)
				v = cl.value()
			}
		default:
			return nil, c.errstr(rc)
		}
	}
}
