package withrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/postgres"
)

// sandboxRunners makes n runners of wf on schema, each with a store (a
// connection pool) of its own as separate processes would have, paying
// into one new sandbox; cfg gives the rest of their configuration. It
// returns them, the first one's store and the sandbox.
func sandboxRunners(t testing.TB, schema, app string, n int, wf runner.Workflow, cfg runner.Config) ([]*runner.Runner, *postgres.Store, *sandbox.Sandbox) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Options{})
	must(t, err)
	rs := make([]*runner.Runner, n)
	var first *postgres.Store
	for i := range rs {
		s := openNamed(t, schema, fmt.Sprintf("%s-%d", app, i), postgres.Options{MaxConns: 4})
		if first == nil {
			first = s
		}
		reg := &effect.Registry{}
		must(t, reg.Register("refund.pay", "http/1", sb.Adapter()))
		c := cfg
		c.Store, c.Workflows, c.Adapters, c.Owner = s, []runner.Workflow{wf}, reg, fmt.Sprintf("runner-%d", i)
		r, err := runner.New(c)
		must(t, err)
		rs[i] = r
	}
	return rs, first, sb
}

var ctx = context.Background()

func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv("FLRH_TEST_POSTGRES")
	if d == "" {
		t.Skip("FLRH_TEST_POSTGRES is unset; set it to a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL runner tests")
	}
	return d
}

// freshSchema names a schema no other test uses and drops it at the end.
func freshSchema(t testing.TB) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "flrh_test_" + hex.EncodeToString(b[:])
	d := dsn(t)
	t.Cleanup(func() {
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

// openNamed opens a store on schema whose connections carry app.
func openNamed(t testing.TB, schema, app string, opts postgres.Options) *postgres.Store {
	t.Helper()
	u, err := url.Parse(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	opts.Schema = schema
	s, err := postgres.Open(ctx, u.String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// execInSchema runs sql, statements separated by semicolons, on a
// connection of its own with schema as its search path: how the migration
// tests put a schema back as an older build left it.
func execInSchema(t testing.TB, schema, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn(t))
	must(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`;`+sql)
	must(t, err)
}
