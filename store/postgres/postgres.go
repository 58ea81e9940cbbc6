package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"flrh.dev/flrh/store"
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Clock, when set, is read inside transactions (after the run's row is
	// locked) for lease expiry and approval revalidation, instead of the
	// database's clock_timestamp(). Tests inject a fake; production leaves
	// it nil so every runner on every machine reads one clock.
	Clock func() time.Time
	// Schema is the PostgreSQL schema holding flrh's tables; "" uses the
	// connection's search_path (normally public). Open creates it if absent.
	Schema string
	// ReadOnly opens the database without write access (the verifier): no
	// migration, and every transaction is read-only on the server.
	ReadOnly bool
	// MaxConns bounds the connection pool; 0 leaves pgxpool's default.
	MaxConns int32
	// IdleInTransaction bounds how long the server keeps a transaction of
	// this store open while the client says nothing: a runner paused
	// (SIGSTOP, GC, a frozen VM) in the middle of a tick would otherwise
	// hold its run's row lock, and block every other runner, for as long
	// as it stays paused. The server aborts such a transaction; nothing of
	// it is written. 0 means 10s, a negative value leaves the server's
	// setting (and one in the DSN wins over this).
	IdleInTransaction time.Duration
	// Retries bounds how many times a transaction that lost a
	// serialization race or a deadlock is run again; 0 means 8, a negative
	// number means never.
	Retries int
	// CommitGroups, when positive, lets this store commit the ticks of
	// several runs that arrive together in one transaction (see
	// group.go), with at most that many such groups under way at once.
	// It lowers the server's CPU per tick (one BEGIN, COMMIT and WAL flush
	// for the group) at the price of each tick's latency: a tick waits for
	// the group before it. 0 (or negative) commits every tick alone.
	CommitGroups int
	// Sealer, when set, encrypts checkpoint and trace bodies at rest
	// (package store/sealed); nil stores them as they are.
	Sealer store.Sealer
}

// Store is a store.Store on one PostgreSQL database (or schema).
type Store struct {
	pool    *pgxpool.Pool
	clock   func() time.Time
	ro      bool
	schema  string // the schema the tables live in, resolved at Open
	retries int
	sealer  store.Sealer
	heads   heads      // what the next tick of a run may assume (see Commit)
	shapes  shapes     // the appended statement's text by tick shape (see appends)
	group   aheadGroup // one-round-trip ticks waiting to commit together (see group.go)
	// testGroupWait, when set (tests only), has a group's leader wait
	// briefly for that many more ticks to queue.
	testGroupWait int
	groups        int // Options.CommitGroups resolved
	// testGroup, when set (tests only), is told the size of each group
	// committed together and whether it committed.
	testGroup func(n int, ok bool)
	// testMerged, when set (tests only), is told the size of each merged
	// group and whether it committed (see commitMerged).
	testMerged func(n int, ok bool)
	// slotsMade holds, by limit name, how many of its slots are known to
	// have rows (see TakeSlot).
	slotsMade sync.Map
}

var _ store.Store = (*Store)(nil)

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string) and brings its schema up to date. A database written by
// a newer flrh is refused with store.CodeSchemaTooNew rather than risked.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, store.Errorf(store.CodeInvalidInput, "open", "", nil, "malformed PostgreSQL DSN: %s", redact(err))
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	idle := opts.IdleInTransaction
	if idle == 0 {
		idle = 10 * time.Second
	}
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set && idle > 0 {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(max(idle.Milliseconds(), 1))
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		// Every statement of the store is prepared and looks rows up by
		// their keys, where a generic plan is as good as one made for the
		// parameters; left to choose, the server plans some statements
		// afresh at every execution (see docs/performance/postgres.md).
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, store.Errorf(store.CodeUnavailable, "open", "", err, "connect")
	}
	s := &Store{pool: pool, clock: opts.Clock, ro: opts.ReadOnly, retries: opts.Retries, sealer: opts.Sealer,
		groups: max(opts.CommitGroups, 0)}
	switch {
	case s.retries == 0:
		s.retries = 8
	case s.retries < 0:
		s.retries = 0
	}
	if err := s.prepare(ctx, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// redact keeps a DSN parse error from echoing a password.
func redact(err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return "cannot parse connection string"
	}
	return err.Error()
}

// Close closes the pool.
func (s *Store) Close() error { s.pool.Close(); return nil }

// Pool exposes the connection pool for inspection by tests and operators'
// tools; writing through it bypasses the fence and is never done.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema is the schema holding the store's tables.
func (s *Store) Schema() string { return s.schema }

// prepare creates the schema if asked for one and migrates.
func (s *Store) prepare(ctx context.Context, schema string) error {
	if schema != "" && !s.ro {
		// Two processes opening a fresh database at once may race on the
		// catalog; the loser sees a duplicate and the schema exists.
		_, err := s.pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize())
		if err != nil && !isDuplicate(err) {
			return mapErr("open", "", err)
		}
	}
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(current_schema(), '')`).Scan(&s.schema); err != nil {
		return mapErr("open", "", err)
	}
	if s.schema == "" {
		return store.Errorf(store.CodeInvalidInput, "open", "", nil, "no schema on the search_path")
	}
	return s.migrate(ctx)
}

// SchemaVersionIn reads the schema version the database holds (0 when it
// has never been migrated).
func (s *Store) SchemaVersionIn(ctx context.Context) (int64, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, mapErr("schema version", "", err)
	}
	if !exists {
		return 0, nil
	}
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, mapErr("schema version", "", err)
}

// migrateRetries bounds how often a migration that raced another process
// is tried again.
const migrateRetries = 8

// migrate applies the missing migrations. Each runs in its own transaction
// whose first write is the version row itself: when several runners start
// at once on a fresh database, exactly one inserts the row, the others hit
// the primary key, roll back and find the schema current. No advisory
// locks, so Postgres-compatible distributed databases behave the same.
func (s *Store) migrate(ctx context.Context) error {
	for raced := 0; ; {
		have, err := s.SchemaVersionIn(ctx)
		if err != nil {
			return err
		}
		if have > SchemaVersion {
			return store.Errorf(store.CodeSchemaTooNew, "migrate", "", nil,
				"database schema version %d is newer than this build's %d", have, SchemaVersion)
		}
		if have == SchemaVersion {
			return nil
		}
		if s.ro {
			return store.Errorf(store.CodeInvalidInput, "migrate", "", nil,
				"database schema version %d needs migration to %d; open it read-write first", have, SchemaVersion)
		}
		err = s.applyMigration(ctx, have)
		if err == nil {
			continue
		}
		// A process that lags loses the race for every migration another
		// applies first; each loss is progress, so the bound allows one
		// per migration besides the retries.
		if raced < migrateRetries+len(migrations) && (isDuplicate(err) || retryable(err)) {
			raced++
			continue // another process migrated first
		}
		return err
	}
}

func (s *Store) applyMigration(ctx context.Context, have int64) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return mapErr("migrate", "", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version     bigint PRIMARY KEY,
	description text NOT NULL,
	applied_at  bigint NOT NULL
)`); err != nil {
		return err
	}
	m := migrations[have]
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, `+nowNanos+`)`,
		have+1, m.description); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return store.Errorf(store.CodeUnavailable, "migrate", "", err, "migration to version %d", have+1)
	}
	return tx.Commit(ctx)
}

// nowNanos is the database's clock in Unix nanoseconds. clock_timestamp(),
// not now(): it is read when evaluated, after the locks before it are held,
// not when the transaction began.
const nowNanos = `(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`

// nowParam is nowNanos unless the caller passes an injected reading.
func nowParam(n int) string {
	return fmt.Sprintf(`COALESCE($%d::bigint, %s)`, n, nowNanos)
}

// injected returns the injected clock's reading for nowParam, or nil so
// the database's clock is read.
func (s *Store) injected() any {
	if s.clock == nil {
		return nil
	}
	return nanos(s.clock())
}

// PostgreSQL error codes the store reacts to.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgSerializationFail   = "40001"
	pgDeadlock            = "40P01"
	pgReadOnlyTx          = "25006"
	pgAppendOnly          = "FL001" // raised by flrh_append_only()
	pgGuard               = "FL002" // raised by flrh_expect_one()
	pgDataCorrupted       = "XX001"
	pgIndexCorrupted      = "XX002"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func isDuplicate(err error) bool { return pgCode(err) == pgUniqueViolation || pgCode(err) == "42P07" }

// retryable reports whether the server rolled the transaction back because
// it lost a race, so running it again from the start is safe: nothing it
// wrote survived, and it will re-read everything it decides on.
func retryable(err error) bool {
	if errors.As(err, new(retryError)) {
		return true
	}
	switch pgCode(err) {
	case pgSerializationFail, pgDeadlock, pgGuard:
		// A guard fails when a write finds other rows than the reads
		// before it: something changed in between, and a fresh attempt
		// reads it and reports exactly what.
		return true
	}
	return false
}

// connLost reports whether err means the connection is gone: a server
// restart or pg_terminate_backend (57P01–57P03), a session ended for
// idling in its transaction (25P03), a connection exception (class 08), or
// a network failure.
func connLost(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 25P03: the server ended a session idle in its transaction.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code == "25P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "conn closed")
}

// mapErr is the package mapErr, and when the error says the connection
// was lost it also empties the pool: after a server restart every pooled
// connection is dead, and handing them out one failure at a time would
// fail one operation per connection instead of one in all.
func (s *Store) mapErr(op, runID string, err error) error {
	if connLost(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		s.pool.Reset()
	}
	return mapErr(op, runID, err)
}

// mapErr turns driver errors into typed store errors.
func mapErr(op, runID string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Errorf(store.CodeNotFound, op, runID, nil, "not found")
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Never connected: say so, and name a server's refusal of the
		// database or the role, which no retry will mend.
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "3D000":
			return store.Errorf(store.CodeNotFound, op, runID, err, "cannot connect: the database does not exist")
		case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28"):
			return store.Errorf(store.CodeInvalidInput, op, runID, err, "cannot connect: the server refused the credentials")
		}
		return store.Errorf(store.CodeUnavailable, op, runID, err, "cannot connect")
	}
	if connLost(err) {
		return store.Errorf(store.CodeUnavailable, op, runID, err, "connection lost")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == pgUniqueViolation:
			return store.Errorf(store.CodeExists, op, runID, err, "duplicate identity")
		case pe.Code == pgForeignKeyViolation:
			return store.Errorf(store.CodeNotFound, op, runID, err, "refers to a record that does not exist")
		case pe.Code == pgAppendOnly:
			return store.Errorf(store.CodeInvalidTransition, op, runID, err, "evidence is append-only")
		case pe.Code == pgSerializationFail || pe.Code == pgDeadlock || pe.Code == pgGuard:
			return store.Errorf(store.CodeUnavailable, op, runID, err, "lost a serialization race too often; nothing was written")
		case pe.Code == pgReadOnlyTx:
			return store.Errorf(store.CodeInvalidInput, op, runID, err, "store opened read-only")
		case pe.Code == pgDataCorrupted || pe.Code == pgIndexCorrupted:
			return store.Errorf(store.CodeCorrupt, op, runID, err, "database reports damaged data")
		case pe.Code == "53100":
			return store.Errorf(store.CodeUnavailable, op, runID, err, "database disk full; nothing was written")
		case len(pe.Code) == 5 && pe.Code[:2] == "23":
			return store.Errorf(store.CodeInvalidInput, op, runID, err, "record violates a constraint")
		case len(pe.Code) == 5 && pe.Code[:2] == "22":
			// A data exception: a value the database cannot hold (text
			// with a NUL byte, a number out of range), refused whole.
			return store.Errorf(store.CodeInvalidInput, op, runID, err, "a value the database cannot hold")
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

// write runs fn in one REPEATABLE READ transaction, and runs it again from
// the start when that is safe: the server reported a serialization failure
// or a deadlock (it rolled everything back), or the connection was lost
// before COMMIT was sent (the server aborts an open transaction when its
// connection ends) — once, for the stale pooled connection a server
// restart leaves behind. A connection lost once COMMIT was sent, and every
// other error, is reported and never retried: whether the tick landed is
// then unknown, and the caller establishes it by reading the run's head.
func (s *Store) write(ctx context.Context, op, runID string, fn func(tx *wtx) error) error {
	if s.ro {
		return store.Errorf(store.CodeInvalidInput, op, runID, nil, "store opened read-only")
	}
	var err error
	lost := 0
	for attempt := 0; attempt <= s.retries; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return s.mapErr(op, runID, err)
			}
		}
		var commitSent bool
		commitSent, err = s.once(ctx, fn)
		if err == nil {
			break
		}
		if retryable(err) {
			continue
		}
		if connLost(err) && !commitSent && lost < 1 && s.retries > 0 && ctx.Err() == nil {
			lost++
			s.pool.Reset()
			continue
		}
		break
	}
	return s.mapErr(op, runID, err)
}

func (s *Store) once(ctx context.Context, fn func(tx *wtx) error) (commitSent bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	tx := &wtx{conn: conn}
	err = tx.finish(ctx, fn(tx))
	return tx.commitSent, err
}

// backoff waits a little longer on each retry so that racing writers
// spread out instead of colliding again.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(attempt*attempt) * 200 * time.Microsecond
	// Jitter, so that writers that collided once do not collide again in
	// lockstep.
	d += rand.N(d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
