package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sealed"
	"flrh.dev/flrh/store/storetest"
)

// dsn returns the test database's DSN or skips the test.
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("FLRH_TEST_POSTGRES")
	if d == "" {
		t.Skip("FLRH_TEST_POSTGRES is unset; set it to a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL store tests")
	}
	return d
}

// freshSchema names a schema no other test uses and drops it when the
// test ends, so tests run in parallel and leave nothing behind.
func freshSchema(t testing.TB) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "flrh_test_" + hex.EncodeToString(b[:])
	d := dsn(t)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	d := dsn(t)
	if opts.Schema == "" {
		opts.Schema = freshSchema(t)
	}
	s, err := Open(context.Background(), d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		return openTest(t, Options{Clock: clock})
	})
}

// The PostgreSQL store keeps none of a tick's slices once Commit returns,
// a lagging tick's included (group commit answers each caller once its
// tick is decided).
func TestCommitKeepsNoneOfTheTick(t *testing.T) {
	dsn(t)
	storetest.RunKeepsNone(t, func(t *testing.T, clock func() time.Time) store.Store {
		return openTest(t, Options{Clock: clock})
	})
}

// The database's own clock serves when none is injected: a lease taken
// now expires in the future by the database's reckoning.
func TestDatabaseClock(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	before := time.Now()
	l, err := s.AcquireLease(ctx, "r", "w", time.Minute)
	must(t, err)
	// Same machine: the database's clock and ours agree within seconds.
	if d := l.ExpiresAt.Sub(before.Add(time.Minute)); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("lease expires at %v, want about %v", l.ExpiresAt, before.Add(time.Minute))
	}
	must(t, s.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("E", `{}`)}}))
	r, err := s.Run(ctx, "r")
	must(t, err)
	if r.CreatedAt.IsZero() || r.UpdatedAt.Before(r.CreatedAt) {
		t.Fatalf("timestamps %v %v", r.CreatedAt, r.UpdatedAt)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustCode(t testing.TB, err error, code store.Code) {
	t.Helper()
	if got := store.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want %s", err, got, code)
	}
}

// The whole conformance suite passes unchanged with every checkpoint and
// trace body encrypted, and the sealed-record checks hold.
func TestConformanceSealed(t *testing.T) {
	dsn(t)
	k, err := sealed.New(bytes.Repeat([]byte{7}, sealed.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		return openTest(t, Options{Clock: clock, Sealer: k})
	})
}

type rawPostgres struct{ s *Store }

func (r rawPostgres) Body(t *testing.T, table, runID string, pos int64) []byte {
	t.Helper()
	var b []byte
	if err := r.s.pool.QueryRow(context.Background(), `SELECT `+bodyAt(table)+` FROM `+table+` WHERE run_id = $1 AND `+rowHolds(table), runID, pos).Scan(&b); err != nil {
		t.Fatalf("raw read %s %s %d: %v", table, runID, pos, err)
	}
	return b
}

func (r rawPostgres) SetBody(t *testing.T, table, runID string, pos int64, body []byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.s.pool.Exec(ctx, `ALTER TABLE `+table+` DISABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.pool.Exec(ctx, `UPDATE `+table+` SET `+bodyAt(table)+` = $3 WHERE run_id = $1 AND `+rowHolds(table), runID, pos, body); err != nil {
		t.Fatalf("raw write %s %s %d: %v", table, runID, pos, err)
	}
}

// rowHolds selects the row holding record $2 of table: a checkpoint by
// its number, a trace record by the tick's row whose range holds it.
func rowHolds(table string) string {
	if table == "checkpoints" {
		return "n = $2"
	}
	return "seq <= $2 AND last_seq >= $2"
}

// bodyAt is the column (or, in a trace row, the array element) holding
// record $2's body.
func bodyAt(table string) string {
	if table == "checkpoints" {
		return "body"
	}
	return "bodies[$2 - seq + 1]"
}

func TestSealed(t *testing.T) {
	d := dsn(t)
	schemas := map[string]string{}
	storetest.RunSealed(t, func(t *testing.T, sealer store.Sealer) (store.Store, storetest.Raw) {
		schema, ok := schemas[t.Name()]
		if !ok {
			schema = freshSchema(t)
			schemas[t.Name()] = schema
		}
		s, err := Open(context.Background(), d, Options{Schema: schema, Sealer: sealer})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, rawPostgres{s}
	})
}
