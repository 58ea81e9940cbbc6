package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"flrh.dev/flrh/store/packed"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/store"
)

// The writing connection.
//
// Every write runs in a batch led by one caller at a time (group.go), so
// the store keeps one connection for writing, held for its life, and runs
// a batch's statements on it through the driver's own prepared statements.
// Through database/sql each statement of a transaction was bound to the
// transaction anew (an allocation and a connection lookup), its arguments
// converted into a fresh slice, and each one-row read wrapped in a Rows
// with its own lock and close; a governed step runs some twenty statements
// in two transactions. The conversions kept are database/sql's own: an
// argument that is not already a driver value goes through
// driver.DefaultParameterConverter, as database/sql sends it to a driver
// without a NamedValueChecker (this one), and a scan that is not a plain
// copy goes through sql.Null's Scan, which is database/sql's conversion.

// writer is the store's writing connection and the statements prepared on
// it. A batch's leader holds mu for the batch (leaders follow one another,
// so it is never contended but by Close).
type writer struct {
	mu sync.Mutex
	// lc is the writing connection, opened through SQLite's interface on
	// dsn, the database's URI (writeconn.go).
	lc  *wconn
	dsn string
	// viaDriver runs the writer on a connection of the database's pool
	// through the driver's own statements instead (conn, stmts), as
	// before lc: the tests' reference.
	viaDriver bool
	conn      *sql.Conn
	stmts     map[string]driver.Stmt
	row       wrow // the row queryRow read last
	tx        wtx  // the batch's transaction on lc (withWriter)
	// Buffers reused from statement to statement and commit to commit:
	// what is bound is copied before a statement returns.
	args   []driver.NamedValue // via the driver
	evRows []eventRow          // a multi-row INSERT's events
	frame  []byte              // a tick's trace frame
	packer packed.Packer       // checkpoints' bodies packed
	closed bool                // Close ran
	// logSync: the connection is at synchronous=NORMAL in WAL mode and a
	// durable COMMIT is followed by a sync of the log (linger.go). Unset
	// (a database not in WAL mode) it stays at FULL and nothing lingers.
	logSync bool
	log     *os.File // the write-ahead log, opened for syncLog
	// A lagging batch's transaction left open (linger.go): whether one
	// is, the timer that commits it (made once, set again for each), the
	// runs whose ticks it holds, and the runs whose lagging ticks were
	// lost with a failed COMMIT.
	linger      bool
	lingerTimer *time.Timer
	lingerRuns  []string
	lingered    []lingered // the lagging ticks run in it, in order
	arena       []byte     // their bodies' copies
	tickArenas  tickArenas // their slices' copies
	lost        map[string]bool
	// known is the row of the run whose tick was the last write in the
	// open transaction, as that tick left it; handed to the next write
	// alone (runOne) and forgotten at every end of a transaction; a
	// COMMIT carries it to the next transaction begun on the connection,
	// if nothing is committed between (carried, begin).
	known knownRun
	// carried is the row the last write of the transaction committed
	// last left known, and carriedVersion the database's data version
	// read on this connection right after that COMMIT: the next
	// transaction begun on it takes the row as known if the version is
	// the same once its write lock is held (begin).
	carried        knownRun
	carriedVersion uint32
	// deferred is a lagging tick's write of its run's row, made before
	// the next statement or by the run's next tick (deferRunRow).
	deferred deferredRow
	// walFrames counts the log pages COMMITs wrote since the checkpointer
	// was last asked to run (walcheckpoint.go).
	walFrames int
	// logPages counts every log page the COMMITs wrote, for the
	// benchmarks' log-pages/op; atomic, as a benchmark reads it while the
	// writer runs.
	logPages atomic.Int64
}

// knownRun is a run's row as a tick committed in the open transaction
// left it: what fenceTick reads (the header's state, outcome, head, lease
// and quarantine, the counters) and, with pending, the number of the
// run's pending inbox entries. A zero knownRun (no run id) knows nothing.
type knownRun struct {
	run     store.Run
	c       runCounters
	pending bool
}

// wtx is a batch's transaction on the writing connection.
type wtx struct {
	lc        *wconn      // the writing connection; nil via the driver
	dc        driver.Conn // via the driver
	w         *writer
	open      bool // BEGIN ran and neither COMMIT nor ROLLBACK since
	committed bool // a COMMIT succeeded
	// known is the row the write before this one left known (writer.known),
	// for this write's fence.
	known knownRun
}

// withWriter runs f on the writing connection, opening it first if need
// be. A connection the driver reports broken is dropped with its
// statements; the next batch opens another.
func (s *Store) withWriter(ctx context.Context, f func(tx *wtx)) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.w.closed {
		return errWriterClosed
	}
	if !s.w.viaDriver {
		if s.w.lc == nil {
			lc, err := openWConn(s.w.dsn)
			if err != nil {
				return err
			}
			s.w.lc = lc
			if err := s.setSync(ctx, &wtx{lc: lc, w: &s.w}); err != nil {
				s.dropWriter()
				return err
			}
		}
		tx := &s.w.tx // the writer's: held by no one once f returns
		*tx = wtx{lc: s.w.lc, w: &s.w, open: s.w.linger}
		f(tx)
		return nil
	}
	if s.w.conn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		s.w.conn, s.w.stmts = c, map[string]driver.Stmt{}
		if err := c.Raw(func(dc any) error { return s.setSync(ctx, &wtx{dc: dc.(driver.Conn), w: &s.w}) }); err != nil {
			s.dropWriter()
			return err
		}
	}
	err := s.w.conn.Raw(func(dc any) error {
		tx := &wtx{dc: dc.(driver.Conn), w: &s.w, open: s.w.linger}
		f(tx)
		return nil
	})
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		s.dropWriter()
	}
	return err
}

// dropWriter closes the writing connection with its statements; a
// transaction left open on it is gone with it.
func (s *Store) dropWriter() {
	s.w.known, s.w.carried, s.w.deferred = knownRun{}, knownRun{}, deferredRow{}
	if s.w.lc != nil {
		s.w.lc.close()
		s.w.lc = nil
	} else {
		s.w.conn.Raw(func(any) error {
			for _, st := range s.w.stmts {
				st.Close()
			}
			return driver.ErrBadConn // not handed back to the pool
		})
		s.w.conn.Close()
		s.w.conn, s.w.stmts = nil, nil
	}
	s.endLinger(&s.w, false)
	s.w.closeLog()
	s.w.logSync = false
}

// setSync sets a new writing connection to synchronous=NORMAL if the
// database is in WAL mode: its durable COMMITs are followed by syncLog.
// The pragma takes effect when SQLite prepares it, so it is run once and
// never kept among the prepared statements.
func (s *Store) setSync(ctx context.Context, tx *wtx) error {
	mode, err := tx.pragma(ctx, `PRAGMA journal_mode`)
	if err != nil {
		return err
	}
	if m, _ := mode.(string); !strings.EqualFold(m, "wal") {
		return nil
	}
	pragmas := []string{`PRAGMA synchronous = NORMAL`, `PRAGMA temp_store = MEMORY`}
	if _, ok := tx.dc.(sqlite.DBStatus); ok || tx.lc != nil {
		// The log's checkpoints run on the checkpointer's connection;
		// this one's are the backstop (walcheckpoint.go).
		pragmas = append(pragmas, fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walBackstopFrames))
	}
	for _, p := range pragmas {
		if _, err := tx.pragma(ctx, p); err != nil {
			return err
		}
	}
	tx.w.logSync = true
	return nil
}

// pragma runs a pragma statement prepared for this run alone, not kept,
// and returns the first column of its first row (nil if none).
func (tx *wtx) pragma(ctx context.Context, query string) (driver.Value, error) {
	if tx.lc != nil {
		return tx.lc.once(query)
	}
	rows, err := tx.dc.(driver.QueryerContext).QueryContext(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if len(rows.Columns()) == 0 {
		return nil, nil
	}
	vals := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(vals); err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return vals[0], nil
}

// errWriterClosed refuses a write that comes after Close.
var errWriterClosed = errors.New("sqlite: store closed")

// close finalizes the writer's statements and gives its connection back,
// once the batch under way, if any, is done; no write runs after it.
func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.lc != nil {
		w.lc.close()
		w.lc = nil
		w.closeLog()
		return
	}
	if w.conn == nil {
		return
	}
	w.conn.Raw(func(any) error {
		for _, st := range w.stmts {
			st.Close()
		}
		return nil
	})
	w.conn.Close()
	w.conn, w.stmts = nil, nil
	w.closeLog()
}

func (tx *wtx) stmt(ctx context.Context, query string) (driver.Stmt, error) {
	if st, ok := tx.w.stmts[query]; ok {
		return st, nil
	}
	st, err := tx.dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	tx.w.stmts[query] = st
	return st, nil
}

// synchronous reads the connection's synchronous level (0 OFF, 1 NORMAL,
// 2 FULL, 3 EXTRA), prepared afresh for the same reason as pragma.
func (tx *wtx) synchronous(ctx context.Context) (int64, error) {
	v, err := tx.pragma(ctx, `PRAGMA synchronous`)
	if err != nil {
		return 0, err
	}
	level, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("PRAGMA synchronous answered %T", v)
	}
	return level, nil
}

// bind converts args as database/sql converts them for this driver
// (argValue), each value a copy: nothing of args is kept, so that the
// callers' arguments stay on their stacks on either path.
func (tx *wtx) bind(args []any) ([]driver.NamedValue, error) {
	nv := tx.w.args[:0]
	for i, a := range args {
		c, err := argValue(i+1, a)
		if err != nil {
			return nil, err
		}
		var v driver.Value
		switch c.typ {
		case sqlite3.SQLITE_INTEGER:
			v = c.i
		case sqlite3.SQLITE_FLOAT:
			v = c.f
		case sqlite3.SQLITE_TEXT:
			v = strings.Clone(c.s)
		case sqlite3.SQLITE_BLOB:
			v = bytes.Clone(c.b)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	tx.w.args = nv
	return nv, nil
}

// exec runs a statement inside tx, after the run's row a lagging tick
// left to write (flushRunRow).
func (s *Store) exec(ctx context.Context, tx *wtx, query string, args ...any) (wres, error) {
	if err := s.flushRunRow(ctx, tx); err != nil {
		return wres{}, err
	}
	if tx.lc != nil {
		return tx.lc.exec(query, args)
	}
	st, err := tx.stmt(ctx, query)
	if err != nil {
		return wres{}, err
	}
	nv, err := tx.bind(args)
	if err != nil {
		return wres{}, err
	}
	res, err := st.(driver.StmtExecContext).ExecContext(ctx, nv)
	if err != nil {
		return wres{}, err
	}
	n, err := res.RowsAffected()
	return wres{n}, err
}

// queryRow runs a one-row query inside tx. Its error, or sql.ErrNoRows,
// surfaces from Scan, as with database/sql's QueryRow.
//
// The row is the writer's, read again by the next queryRow: it is
// scanned before then.
func (s *Store) queryRow(ctx context.Context, tx *wtx, query string, args ...any) *wrow {
	r := &tx.w.row
	*r = wrow{}
	if err := s.flushRunRow(ctx, tx); err != nil {
		r.err = err
		return r
	}
	if tx.lc != nil {
		tx.lc.queryRow(query, args, r)
		return r
	}
	st, err := tx.stmt(ctx, query)
	if err != nil {
		r.err = err
		return r
	}
	nv, err := tx.bind(args)
	if err != nil {
		r.err = err
		return r
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, nv)
	if err != nil {
		r.err = err
		return r
	}
	// The statement is reused: its rows are read and closed here.
	vals := make([]driver.Value, len(rows.Columns()))
	err = rows.Next(vals)
	if cerr := rows.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == io.EOF {
		err = sql.ErrNoRows
	}
	r.vals, r.err = vals, err
	return r
}

// begin starts tx's IMMEDIATE transaction: the write lock is taken now,
// not at the first write.
//
// A run's row the last committed transaction left known is known to this
// one too if nothing was committed to the database since but by this
// connection: the data version SQLite keeps for the database changes
// with every transaction committed, by this connection or any other,
// another process's included, and it is compared once the write lock is
// held, when no other can commit until this transaction ends. So a
// governed step's lagging receipt tick, which begins a transaction after
// its input tick's COMMIT, takes the row as that tick left it, as a tick
// joining an open transaction does (decision 1188), instead of reading it.
func (s *Store) begin(ctx context.Context, tx *wtx) error {
	tx.forget()
	carried := tx.w.carried
	tx.w.carried = knownRun{}
	if _, err := s.exec(ctx, tx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	tx.open = true
	if carried.run.ID != "" {
		if v, ok := tx.dataVersion(); ok && v == tx.w.carriedVersion {
			tx.w.known = carried
		}
	}
	return nil
}

// dataVersion is the main database's data version on the writing
// connection (SQLITE_FCNTL_DATA_VERSION); false if it cannot be read.
func (tx *wtx) dataVersion() (uint32, bool) {
	if tx.lc != nil {
		return tx.lc.dataVersion()
	}
	fc, ok := tx.dc.(sqlite.FileControl)
	if !ok {
		return 0, false
	}
	v, err := fc.FileControlDataVersion("main")
	return v, err == nil
}

// cacheWrites is SQLite's count of the pages the writing connection
// wrote (SQLITE_DBSTATUS_CACHE_WRITE), read and reset.
func (tx *wtx) cacheWrites() (int, bool) {
	if tx.lc != nil {
		return tx.lc.cacheWrites()
	}
	st, ok := tx.dc.(sqlite.DBStatus)
	if !ok {
		return 0, false
	}
	n, _, err := st.Status(sqlite.DBStatusCacheWrite, true)
	return n, err == nil
}

// commit commits tx. A COMMIT that fails leaves the transaction open in
// some cases (a busy lock); it is rolled back then, so that the
// connection holds no transaction when the batch is done.
func (s *Store) commit(ctx context.Context, tx *wtx) error {
	last := tx.w.known
	tx.forget()
	tx.w.carried = knownRun{}
	if _, err := s.exec(ctx, tx, `COMMIT`); err != nil {
		s.rollback(tx)
		return err
	}
	tx.open = false
	if last.run.ID != "" {
		if v, ok := tx.dataVersion(); ok {
			tx.w.carried, tx.w.carriedVersion = last, v
		}
	}
	if tx.w.logSync {
		s.walFrames(tx)
	}
	return nil
}

// rollback rolls tx back if it is still open.
func (s *Store) rollback(tx *wtx) {
	tx.forget()
	tx.w.deferred = deferredRow{} // rolled back with the rest
	if tx.open {
		s.exec(context.Background(), tx, `ROLLBACK`) // "no transaction is active" after SQLite rolled back on its own
		tx.open = false
	}
}

// forget drops the run row a write left known: at every end of a
// transaction, and before each write, which takes it for its own fence.
func (tx *wtx) forget() {
	tx.known, tx.w.known = knownRun{}, knownRun{}
}

// wrow is one row read inside a write transaction: its cells on the
// writing connection (lib), its values via the driver.
type wrow struct {
	vals  []driver.Value
	cells []wcell
	lib   bool
	err   error
}

// Scan copies the row's columns into dest as database/sql's Row.Scan
// does.
func (r *wrow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if r.lib {
		return r.scanCells(dest)
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
		}
	}
	return nil
}

// check is Scan's first checks for n destinations: the row's error, and
// as many columns as destinations.
func (r *wrow) check(n int) error {
	if r.err != nil {
		return r.err
	}
	cols := len(r.vals)
	if r.lib {
		cols = len(r.cells)
	}
	if n != cols {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", cols, n)
	}
	return nil
}

// str and i64 are Scan of column i into a string or an int64, after err
// (returned as it is if set), without handing the destination on as an
// interface: a TEXT or an INTEGER as it is, any other value converted as
// Scan converts it (strAny, i64Any).
func (r *wrow) str(err error, i int, d *string) error {
	if err != nil {
		return err
	}
	if r.lib && r.cells[i].typ == sqlite3.SQLITE_TEXT {
		*d = r.cells[i].s
		return nil
	}
	v, err := strAny(r.value(i))
	if err != nil {
		return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
	}
	*d = v
	return nil
}

func (r *wrow) i64(err error, i int, d *int64) error {
	if err != nil {
		return err
	}
	if r.lib && r.cells[i].typ == sqlite3.SQLITE_INTEGER {
		*d = r.cells[i].i
		return nil
	}
	v, err := i64Any(r.value(i))
	if err != nil {
		return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
	}
	*d = v
	return nil
}

// value is column i as the driver hands it on.
func (r *wrow) value(i int) driver.Value {
	if r.lib {
		return r.cells[i].value()
	}
	return r.vals[i]
}

func strAny(v driver.Value) (string, error) {
	var s string
	err := assign(&s, v)
	return s, err
}

func i64Any(v driver.Value) (int64, error) {
	var n int64
	err := assign(&n, v)
	return n, err
}

// scanCells is Scan of the cells read on the writing connection: a TEXT
// into a string and an INTEGER into an int64 as they are, any other as
// the value the driver would have handed on.
func (r *wrow) scanCells(dest []any) error {
	if len(dest) != len(r.cells) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.cells), len(dest))
	}
	for i, d := range dest {
		c := &r.cells[i]
		switch d := d.(type) {
		case *string:
			if c.typ == sqlite3.SQLITE_TEXT {
				*d = c.s
				continue
			}
		case *int64:
			if c.typ == sqlite3.SQLITE_INTEGER {
				*d = c.i
				continue
			}
		}
		if err := assign(d, c.value()); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
		}
	}
	return nil
}

// assign stores src in dest. The copies database/sql makes for the types
// the store scans into are made directly; anything else converts through
// sql.Null's Scan (database/sql's own conversion), a NULL into a
// destination that cannot hold one being an error, as there.
func assign(dest any, src driver.Value) error {
	switch d := dest.(type) {
	case sql.Scanner:
		return d.Scan(src)
	case *string:
		if v, ok := src.(string); ok {
			*d = v
			return nil
		}
		return assignVia(d, src)
	case *int64:
		if v, ok := src.(int64); ok {
			*d = v
			return nil
		}
		return assignVia(d, src)
	case *int:
		return assignVia(d, src)
	case *bool:
		return assignVia(d, src)
	case *[]byte:
		switch v := src.(type) {
		case []byte:
			*d = bytes.Clone(v)
			return nil
		case nil:
			*d = nil
			return nil
		}
		return assignVia(d, src)
	case *any:
		if b, ok := src.([]byte); ok {
			*d = bytes.Clone(b)
		} else {
			*d = src
		}
		return nil
	}
	return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type %T", src, dest)
}

func assignVia[T any](d *T, src driver.Value) error {
	var n sql.Null[T]
	if err := n.Scan(src); err != nil {
		return err
	}
	if !n.Valid {
		return fmt.Errorf("converting NULL to %T is unsupported", *d)
	}
	*d = n.V
	return nil
}
