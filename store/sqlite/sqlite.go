// Package sqlite is flrh's embedded store: one SQLite file in WAL mode,
// every durable commit synced to disk before it returns, STRICT tables,
// foreign keys on, untrusted schema, and every write transaction begun
// IMMEDIATE so that the fence check and the writes it guards see one
// consistent database. Writes that arrive while another commits are
// committed together, one transaction and one sync, each in its own
// savepoint (group.go); a lagging tick's transaction waits for the next
// write's (linger.go).
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Clock is read inside transactions for lease expiry and approval
	// revalidation; nil means time.Now. Tests inject a fake.
	Clock func() time.Time
	// ReadOnly opens the database without write access (the verifier).
	ReadOnly bool
	// BusyTimeout bounds how long a writer waits for the write lock.
	BusyTimeout time.Duration
	// Sealer, when set, encrypts checkpoint and trace bodies at rest
	// (package store/sealed); nil stores them as they are.
	Sealer store.Sealer
}

// Store is a store.Store on one SQLite database file.
type Store struct {
	db     *sql.DB // writes, and reads inside write transactions
	rdb    *sql.DB // reads outside transactions; db itself when read-only
	clock  func() time.Time
	ro     bool
	w      writer      // the writing connection (writer.go)
	rstmts statements  // prepared on rdb
	rrecs  recordConns // reading connections held for the runs' records (readrun_raw.go)
	sealer store.Sealer
	group  group         // concurrent writes, batched into shared transactions
	ckpt   checkpointer  // the log's checkpoints, off the commit path (walcheckpoint.go)
	busy   time.Duration // the connections' busy timeout

	// Test hooks, nil outside this package's tests: testBatch sees each
	// batch's callers' contexts in the order they will run, before any of
	// them runs (held atomically: a lagging batch's timer may lead a
	// batch after the test that set the hook has moved on to set
	// another); testCommit, when it returns an error, fails the batch's
	// COMMIT with it instead of committing.
	testBatch  atomic.Pointer[func(reqs []context.Context)]
	testCommit func() error
	// testLogSync, when set, is called before each sync of the log.
	testLogSync func()
	// testSavepoints runs a write that joins a lagging batch's open
	// transaction alone in a savepoint, as one of several is, instead of
	// without one.
	testSavepoints bool
	// testNoZeroing has pruning and resealing leave what they remove in
	// the file's free space, as builds before secureDelete did.
	testNoZeroing bool
	// testNoKnown makes every tick read its run's row, as if no tick
	// before it in the transaction had left it known.
	testNoKnown bool
	// testUnpacked writes checkpoints' bodies as they are, as a build at
	// schema version 9 wrote them.
	testUnpacked bool
	// testRowRead, when set, is called when a tick reads its run's row.
	testRowRead func()

	path string // the database file; its log is path + "-wal"
	// A lagging batch's transaction left open (linger.go): lingerOpen
	// says one is, lingerFor bounds how long, closing that Close has
	// begun and no new one is left open.
	lingerOpen atomic.Bool
	lingerFor  time.Duration
	closing    atomic.Bool
}

// readers bounds the readers' pool. Every connection is kept open once
// made: opening one costs as much as dozens of small reads (pragmas and
// the schema are parsed again), which database/sql's default of two idle
// connections would pay on every burst of concurrent requests.
const readers = 8

var _ store.Store = (*Store)(nil)

// readOnlyMmap is the mmap_size of a read-only store's connections: the
// database file's pages are read where the operating system maps them
// instead of copied into each connection's page cache by a pread a page,
// which a verifier reading every run of a store larger than the cache
// (2 MB a connection) made for almost every page it read. SQLite reads
// pages beyond the mapping, and the log's, as before, and maps no more
// than the file holds. A writable store's connections map nothing
// (decision 1702's measurement: the writer's mapping follows a growing
// file, and paid more than it saved).
const readOnlyMmap = 1 << 30

// Open opens (creating if needed) the database at path and brings its
// schema up to date. A database written by a newer flrh is refused with
// store.CodeSchemaTooNew rather than risked.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, store.Errorf(store.CodeInvalidInput, "open", "", nil, "empty database path")
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "trusted_schema(0)")
	q.Add("_pragma", "synchronous(FULL)")
	vfs := walVFSParam() // a commit's log frames written at once (walvfs.go)
	if vfs != "" {
		q.Add("vfs", vfs)
	}
	if opts.ReadOnly {
		q.Add("mode", "ro")
		q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", readOnlyMmap))
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// What a write removes is zeroed where it costs no I/O (on pages
		// written anyway: the cells dropped, the space a page split
		// leaves), and pruning and resealing zero all of it
		// (secureDelete): no stale copy of a pruned run is left behind.
		q.Add("_pragma", "secure_delete(FAST)")
		q.Add("_txlock", "immediate")
	}
	file := "file:" + (&url.URL{Path: path}).EscapedPath() + "?"
	db, err := sql.Open("sqlite", file+q.Encode())
	if err != nil {
		return nil, store.Errorf(store.CodeUnavailable, "open", "", err, "open %s", path)
	}
	db.SetMaxIdleConns(readers)
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	s := &Store{db: db, rdb: db, clock: clock, ro: opts.ReadOnly, sealer: opts.Sealer, path: path, lingerFor: lingerFor, ckpt: newCheckpointer(), busy: busy}
	s.rrecs.dsn = file + q.Encode()
	s.w.dsn = s.rrecs.dsn
	err = s.migrate(ctx)
	if opts.ReadOnly && cannotShare(err, path) {
		// A reader of a WAL database needs its shared-memory file, which
		// it cannot create in a directory it may not write (an archived
		// store, a read-only mount). With no log beside the database, the
		// file is the whole database and nobody is writing it: read it as
		// immutable. A log with commits in it cannot be read so.
		db.Close()
		if fi, serr := os.Stat(path + "-wal"); serr == nil && fi.Size() > 0 {
			return nil, store.Errorf(store.CodeUnavailable, "open", "", err,
				"%s: its directory cannot be written and its write-ahead log (%s-wal, %d bytes) holds commits not yet in the database file; open it once where it can be written, or copy it with its -wal file", path, path, fi.Size())
		}
		q.Add("immutable", "1")
		if db, err = sql.Open("sqlite", file+q.Encode()); err != nil {
			return nil, store.Errorf(store.CodeUnavailable, "open", "", err, "open %s", path)
		}
		db.SetMaxIdleConns(readers)
		s.db, s.rdb = db, db
		s.rrecs.dsn = file + q.Encode()
		s.w.dsn = s.rrecs.dsn
		err = s.migrate(ctx)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		// Readers get a pool of their own: in WAL mode they never wait for
		// the writer, and a burst of page reads cannot take the connections
		// the runner's commits need. query_only makes a stray write through
		// it an error rather than an unfenced change.
		rq := url.Values{}
		rq.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		rq.Add("_pragma", "trusted_schema(0)")
		rq.Add("_pragma", "query_only(1)")
		if vfs != "" {
			rq.Add("vfs", vfs)
		}
		rdb, err := sql.Open("sqlite", file+rq.Encode())
		if err != nil {
			db.Close()
			return nil, store.Errorf(store.CodeUnavailable, "open", "", err, "open %s for reading", path)
		}
		// One more than the readers: a notice watcher holds one
		// (noticewatch.go).
		rdb.SetMaxOpenConns(readers + 1)
		rdb.SetMaxIdleConns(readers + 1)
		s.rdb, s.rrecs.dsn = rdb, file+rq.Encode()
	}
	return s, nil
}

// Close commits a lagging batch's open transaction, if any, and closes the
// database.
func (s *Store) Close() error {
	s.closing.Store(true)
	if !s.ro {
		// Queued behind any batch under way, which may be leaving its
		// transaction open as Close begins; no batch after it does.
		s.enqueueReq(&writeReq{ctx: context.Background(), op: "close", lazy: true, flush: true})
	}
	s.closeStatements()
	s.stopCheckpoints()
	err := s.db.Close()
	if s.rdb != s.db {
		if rerr := s.rdb.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// DB exposes the database handle for read-only inspection by tests and the
// verifier; writing through it bypasses the fence and is never done.
// A lagging batch's open transaction is committed first, so what is read
// through it includes every write whose caller has returned.
func (s *Store) DB() *sql.DB {
	s.settle(context.Background())
	return s.db
}

func (s *Store) migrate(ctx context.Context) error {
	var have int64
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return mapErr("migrate", "", err)
	}
	if have > SchemaVersion {
		return store.Errorf(store.CodeSchemaTooNew, "migrate", "", nil,
			"database schema version %d is newer than this build's %d", have, SchemaVersion)
	}
	if withdrawnVersions[have] {
		return store.Errorf(store.CodeSchemaTooNew, "migrate", "", nil,
			"database schema version %d was withdrawn; this build reads versions up to 9 and %d", have, SchemaVersion)
	}
	if have == SchemaVersion {
		return nil
	}
	if s.ro {
		return store.Errorf(store.CodeInvalidInput, "migrate", "", nil,
			"database schema version %d needs migration to %d; open it read-write first", have, SchemaVersion)
	}
	// A migration that rebuilds a table others reference runs with
	// foreign keys off, on a connection of its own (the pragma is a no-op
	// inside a transaction), and the tables it touched are checked before
	// it commits. That connection is then closed, never handed back to
	// the pool: every connection the store uses has foreign keys on from
	// the moment it is opened.
	var check []string
	for v := have + 1; v <= SchemaVersion; v++ {
		check = append(check, rebuiltParents[v]...)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return mapErr("migrate", "", err)
	}
	defer conn.Close()
	if len(check) > 0 {
		defer conn.Raw(func(any) error { return driver.ErrBadConn }) // closes it
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return mapErr("migrate", "", err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return mapErr("migrate", "", err)
	}
	defer tx.Rollback()
	for v := have; v < SchemaVersion; v++ {
		if migrations[v] == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return store.Errorf(store.CodeUnavailable, "migrate", "", err, "migration to version %d", v+1)
		}
	}
	for _, table := range check {
		var child, parent string
		var rowid sql.NullInt64
		var fk int64
		switch err := tx.QueryRowContext(ctx, `SELECT "table", rowid, parent, fkid FROM pragma_foreign_key_check(?)`, table).Scan(&child, &rowid, &parent, &fk); {
		case err == nil:
			return store.Errorf(store.CodeCorrupt, "migrate", "", nil, "migration to version %d: a row of %s (rowid %v) references no row of %s", SchemaVersion, child, rowid.Int64, parent)
		case !errors.Is(err, sql.ErrNoRows):
			return mapErr("migrate", "", err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion)); err != nil {
		return mapErr("migrate", "", err)
	}
	return mapErr("migrate", "", tx.Commit())
}

// mapErr turns driver errors into typed store errors.
// cannotShare says whether err is a reader's failure to create the
// shared-memory file of the WAL database at path, which exists without one
// (SQLITE_READONLY_DIRECTORY; SQLITE_CANTOPEN when a log is there too).
func cannotShare(err error, path string) bool {
	code, ok := sqliteCode(err)
	if !ok || (code != sqlite3.SQLITE_READONLY_DIRECTORY && code != sqlite3.SQLITE_CANTOPEN) {
		return false
	}
	if _, err := os.Stat(path); err != nil {
		return false
	}
	_, err = os.Stat(path + "-shm")
	return os.IsNotExist(err)
}

// sqliteCode is the result code of the SQLite failure in err, reported by
// the driver or on the writing connection (libError).
func sqliteCode(err error) (int, bool) {
	var le *sqlite.Error
	if errors.As(err, &le) {
		return le.Code(), true
	}
	var we *libError
	if errors.As(err, &we) {
		return we.Code(), true
	}
	return 0, false
}

// sqliteText is the text of the SQLite failure in err.
func sqliteText(err error) string {
	var le *sqlite.Error
	if errors.As(err, &le) {
		return le.Error()
	}
	var we *libError
	if errors.As(err, &we) {
		return we.Error()
	}
	return ""
}

func mapErr(op, runID string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.Errorf(store.CodeNotFound, op, runID, nil, "not found")
	}
	var he errHashColumn
	if errors.As(err, &he) {
		return store.Errorf(store.CodeCorrupt, op, runID, err, "stored hash damaged")
	}
	if code, ok := sqliteCode(err); ok {
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return store.Errorf(store.CodeExists, op, runID, err, "duplicate identity")
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT:
			return store.Errorf(store.CodeUnavailable, op, runID, err, "database busy")
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return store.Errorf(store.CodeCorrupt, op, runID, err, "database file damaged")
		case sqlite3.SQLITE_FULL:
			// SQLite rolls the transaction back (or the writer does), so
			// the caller's tick is not in the file; a lagging tick that
			// shared the transaction is lost with it, as MayLag allows.
			return store.Errorf(store.CodeUnavailable, op, runID, err, "database disk full; nothing was written")
		}
		if strings.Contains(sqliteText(err), "append-only") {
			return store.Errorf(store.CodeInvalidTransition, op, runID, err, "evidence is append-only")
		}
	}
	return store.Errorf(store.CodeUnavailable, op, runID, err, "database error")
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, run store.Run, first ...store.Inbound) error {
	if err := store.ValidateNewRun(run, first); err != nil {
		return err
	}
	_, err := s.createRun(ctx, run, first, "", 0)
	return err
}

// createRun inserts run's row and its first inbox entries in one
// transaction. With an owner the row holds the lease AcquireLease would
// then grant (generation 1, expiring ttl after the transaction's clock
// reading), which it returns; without one its lease columns are the
// table's defaults (no owner, generation 0), as AcquireLease finds a new
// run. The new run's inbox is empty, so the entries take positions 1, 2,
// ... in the order given.
func (s *Store) createRun(ctx context.Context, run store.Run, first []store.Inbound, owner string, ttl time.Duration) (store.Lease, error) {
	var lease store.Lease
	err := s.write(ctx, "create run", run.ID, func(ctx context.Context, tx *wtx, now time.Time) error {
		// Set afresh on every try: a write retried after a busy database
		// runs again at a later clock reading.
		lease = store.Lease{}
		if owner != "" {
			lease = store.Lease{RunID: run.ID, Owner: owner, Generation: 1, ExpiresAt: now.Add(ttl).UTC()}
		}
		return s.insertRun(ctx, tx, now, run, first, lease)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return lease, nil
}

// insertRun writes a new run's row, holding lease (none when its owner is
// empty: the table's defaults, as AcquireLease finds a new run), and its
// first inbox entries at positions 1, 2, ... in the order given: the rows
// CreateRun, CreateRunLeased and CreateRunCommit write for a new run.
func (s *Store) insertRun(ctx context.Context, tx *wtx, now time.Time, run store.Run, first []store.Inbound, lease store.Lease) error {
	var expires int64
	if lease.Owner != "" {
		expires = nanos(lease.ExpiresAt)
	}
	if _, err := s.exec(ctx, tx, `
INSERT INTO runs (run_id, workflow_id, workflow_version, workflow_digest, state, head_hash, created_at, updated_at, created_order,
	lease_owner, lease_generation, lease_expires_at, labels)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(created_order), 0) + 1 FROM runs), ?, ?, ?, ?)`,
		run.ID, run.WorkflowID, run.WorkflowVersion, run.WorkflowDigest, run.State, store.GenesisHash, nanos(now), nanos(now),
		lease.Owner, lease.Generation, expires, label.Encode(run.Labels)); err != nil {
		return err
	}
	if err := s.indexLabels(ctx, tx, run); err != nil {
		return err
	}
	for i, in := range first {
		if _, err := s.exec(ctx, tx, `INSERT INTO inbox (run_id, seq, inbound_id, kind, actor_role, actor, capability, body, digest, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run.ID, i+1, in.ID, in.Kind, in.ActorRole, in.Actor, in.Capability, in.Body, in.Digest, nanos(now)); err != nil {
			return err
		}
	}
	return nil
}

// runColumns are a run header's columns, as scanRun reads them.
const runColumns = `run_id, workflow_id, workflow_version, state, outcome, head_seq, head_hash,
	lease_owner, lease_generation, lease_expires_at, quarantine, created_at, updated_at, workflow_digest, due_at, labels`

type scanner interface{ Scan(dest ...any) error }

func scanRun(row scanner) (store.Run, error) {
	var r store.Run
	var exp, created, updated, due int64
	var labels string
	err := row.Scan(&r.ID, &r.WorkflowID, &r.WorkflowVersion, &r.State, &r.Outcome, &r.Head, &r.HeadHash,
		&r.Lease.Owner, &r.Lease.Generation, &exp, &r.Quarantine, &created, &updated, &r.WorkflowDigest, &due, &labels)
	if err != nil {
		return r, err
	}
	r.Lease.RunID = r.ID
	r.Lease.ExpiresAt = fromNanos(exp)
	r.CreatedAt, r.UpdatedAt, r.DueAt = fromNanos(created), fromNanos(updated), fromNanos(due)
	r.Labels, err = label.Decode(labels)
	return r, err
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, runID string) (store.Run, error) {
	r, err := scanRun(s.readRow(ctx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID))
	return r, mapErr("run", runID, err)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, after string, limit int) ([]store.Run, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.read(ctx, `SELECT `+runColumns+` FROM runs
WHERE created_order > COALESCE((SELECT created_order FROM runs WHERE run_id = ?), 0)
ORDER BY created_order LIMIT ?`, after, limit)
	if err != nil {
		return nil, mapErr("runs", "", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, mapErr("runs", "", err)
		}
		out = append(out, r)
	}
	return out, mapErr("runs", "", rows.Err())
}

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, ttl time.Duration) (store.Lease, error) {
	if err := store.ValidateLeaseRequest(runID, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	var lease store.Lease
	err := s.write(ctx, "acquire lease", runID, func(ctx context.Context, tx *wtx, now time.Time) error {
		r, err := scanRun(s.queryRow(ctx, tx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, runID))
		if err != nil {
			return err
		}
		if r.Quarantine != "" {
			return store.Errorf(store.CodeQuarantined, "acquire lease", runID, nil, "%s", r.Quarantine)
		}
		if r.Lease.Owner != "" && r.Lease.Owner != owner && r.Lease.ExpiresAt.After(now) {
			return store.Errorf(store.CodeLeaseHeld, "acquire lease", runID, nil,
				"held by %s (generation %d) until %s", r.Lease.Owner, r.Lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
		}
		lease = store.Lease{RunID: runID, Owner: owner, Generation: r.Lease.Generation + 1, ExpiresAt: now.Add(ttl).UTC()}
		_, err = s.exec(ctx, tx, `UPDATE runs SET lease_owner = ?, lease_generation = ?, lease_expires_at = ?, updated_at = ? WHERE run_id = ?`,
			owner, lease.Generation, nanos(lease.ExpiresAt), nanos(now), runID)
		return err
	})
	return lease, err
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	out := lease
	err := s.write(ctx, "renew lease", lease.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		if _, err := s.fence(ctx, tx, "renew lease", lease, now); err != nil {
			return err
		}
		out.ExpiresAt = now.Add(ttl).UTC()
		_, err := s.exec(ctx, tx, `UPDATE runs SET lease_expires_at = ?, updated_at = ? WHERE run_id = ?`,
			nanos(out.ExpiresAt), nanos(now), lease.RunID)
		return err
	})
	return out, err
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, lease store.Lease) error {
	return s.write(ctx, "release lease", lease.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		if _, err := s.fence(ctx, tx, "release lease", lease, now); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `UPDATE runs SET lease_owner = '', lease_expires_at = 0, updated_at = ? WHERE run_id = ?`,
			nanos(now), lease.RunID)
		return err
	})
}

// Settle implements store.Settler.
func (s *Store) Settle(ctx context.Context, lease store.Lease, seq int64, release bool) error {
	const op = "settle"
	if seq < 0 {
		return store.Errorf(store.CodeInvalidInput, op, lease.RunID, nil, "inbox position %d is negative", seq)
	}
	return s.write(ctx, op, lease.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		if _, err := s.fence(ctx, tx, op, lease, now); err != nil {
			return err
		}
		var last int64
		if err := s.queryRow(ctx, tx, `SELECT COALESCE(MAX(seq), 0) FROM inbox WHERE run_id = ?`, lease.RunID).Scan(&last); err != nil {
			return err
		}
		if seq > last {
			return store.Errorf(store.CodeInvalidInput, op, lease.RunID, nil, "inbox position %d is after the run's last entry, %d", seq, last)
		}
		// The head and state are the row's own: under the fence no
		// other writer can have moved them since the holder read them.
		q := `UPDATE runs SET settled_seq = ?, settled_head = head_seq, settled_state = state, updated_at = ? WHERE run_id = ?`
		if release {
			q = `UPDATE runs SET settled_seq = ?, settled_head = head_seq, settled_state = state, lease_owner = '', lease_expires_at = 0, updated_at = ? WHERE run_id = ?`
		}
		_, err := s.exec(ctx, tx, q, seq, nanos(now), lease.RunID)
		return err
	})
}

// SetDue implements store.DueSetter.
func (s *Store) SetDue(ctx context.Context, lease store.Lease, due time.Time, release bool) error {
	const op = "set due"
	return s.write(ctx, op, lease.RunID, func(ctx context.Context, tx *wtx, now time.Time) error {
		if _, err := s.fence(ctx, tx, op, lease, now); err != nil {
			return err
		}
		q := `UPDATE runs SET due_at = ?, updated_at = ? WHERE run_id = ?`
		if release {
			q = `UPDATE runs SET due_at = ?, lease_owner = '', lease_expires_at = 0, updated_at = ? WHERE run_id = ?`
		}
		_, err := s.exec(ctx, tx, q, nanos(due), nanos(now), lease.RunID)
		return err
	})
}

// fence checks, inside tx, that lease is the run's current, unexpired lease
// and that the run is not quarantined. It returns the run header.
func (s *Store) fence(ctx context.Context, tx *wtx, op string, lease store.Lease, now time.Time) (store.Run, error) {
	r, err := scanRun(s.queryRow(ctx, tx, `SELECT `+runColumns+` FROM runs WHERE run_id = ?`, lease.RunID))
	if err != nil {
		return r, err
	}
	return r, checkFence(op, lease, r, now)
}

// runCounters are the numbers of a run's last trace record and last
// checkpoint, kept in its row (since schema version 6) so that a tick
// numbers its own without reading the trace and checkpoint tables; and,
// when the tick asked for it, how many of the run's inbox entries were
// pending when it began.
type runCounters struct {
	traceSeq, checkpointN int64
	pending               int64
	// headSum is the run's head hash as its sum, when summed: when the
	// row is known from a tick that chained events (knownRun), whose
	// header then holds no HeadHash. The text is made only where the
	// row is written (writeRunRow).
	headSum [32]byte
	summed  bool
}

// fenceTick is fence for Commit: it also reads the run's counters, in
// the same read of its row, and with pending the number of the run's
// pending inbox entries. It reads only what the fence and the commit
// use: the header it returns holds the run's state, outcome, head, lease
// and quarantine, and nothing else.
//
// When the write just before this one in the open transaction was a tick
// of the same run that knew the run's row as it left it (tx.known), the
// row is taken from there instead of read: nothing else has written in the
// transaction since, and no other connection writes while it is open
// (decision 1188).
func (s *Store) fenceTick(ctx context.Context, tx *wtx, op string, lease store.Lease, now time.Time, pending bool) (store.Run, runCounters, error) {
	if k := &tx.known; k.run.ID != "" && k.run.ID == lease.RunID && (k.pending || !pending) && !s.testNoKnown {
		r, c := k.run, k.c
		if !pending {
			c.pending = 0
		}
		return r, c, checkFence(op, lease, r, now)
	}
	if s.testRowRead != nil {
		s.testRowRead()
	}
	var c runCounters
	var exp int64
	r := store.Run{ID: lease.RunID}
	// Read column by column as Scan reads them (wrow.str, wrow.i64),
	// the destinations never handed on as interfaces.
	var row *wrow
	cols := 10
	if pending {
		row, cols = s.queryRow(ctx, tx, fenceTickPendingQuery, lease.RunID, lease.RunID), 11
	} else {
		row = s.queryRow(ctx, tx, fenceTickQuery, lease.RunID)
	}
	err := row.check(cols)
	err = row.str(err, 0, &r.State)
	err = row.str(err, 1, &r.Outcome)
	err = row.i64(err, 2, &r.Head)
	err = row.str(err, 3, &r.HeadHash)
	err = row.str(err, 4, &r.Lease.Owner)
	err = row.i64(err, 5, &r.Lease.Generation)
	err = row.i64(err, 6, &exp)
	err = row.str(err, 7, &r.Quarantine)
	err = row.i64(err, 8, &c.traceSeq)
	err = row.i64(err, 9, &c.checkpointN)
	if pending {
		err = row.i64(err, 10, &c.pending)
	}
	if err != nil {
		return r, c, err
	}
	r.Lease.RunID = r.ID
	r.Lease.ExpiresAt = fromNanos(exp)
	return r, c, checkFence(op, lease, r, now)
}

const (
	fenceTickQuery = `SELECT state, outcome, head_seq, head_hash, lease_owner, lease_generation, lease_expires_at, quarantine, trace_seq, checkpoint_n FROM runs WHERE run_id = ?`
	// The count is read through inbox_pending, the partial index of
	// pending entries. The run's id is given twice: the driver makes a
	// string of each numbered parameter's name on every call.
	fenceTickPendingQuery = `SELECT state, outcome, head_seq, head_hash, lease_owner, lease_generation, lease_expires_at, quarantine, trace_seq, checkpoint_n,
	(SELECT COUNT(*) FROM inbox WHERE run_id = ? AND consumed = 0) FROM runs WHERE run_id = ?`
)

// checkFence refuses a write under lease to run r at now unless the lease
// is the run's current, unexpired one and the run is not quarantined.
func checkFence(op string, lease store.Lease, r store.Run, now time.Time) error {
	if r.Quarantine != "" {
		return store.Errorf(store.CodeQuarantined, op, lease.RunID, nil, "%s", r.Quarantine)
	}
	if r.Lease.Generation != lease.Generation || r.Lease.Owner != lease.Owner {
		return store.Errorf(store.CodeFenced, op, lease.RunID, nil,
			"lease generation %d of %q is stale; current is %d of %q", lease.Generation, lease.Owner, r.Lease.Generation, r.Lease.Owner)
	}
	if !r.Lease.ExpiresAt.After(now) {
		return store.Errorf(store.CodeFenced, op, lease.RunID, nil, "lease generation %d expired at %s", lease.Generation, r.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}
