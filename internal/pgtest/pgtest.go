// Package pgtest gives tests PostgreSQL stores on schemas of their own
// in the test database FLRH_TEST_POSTGRES names, dropped when the test
// ends; without the variable the test is skipped, saying what it needed
// the database for.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store/postgres"
)

// Env is the variable that holds the test database's DSN.
const Env = "FLRH_TEST_POSTGRES"

// Handles opens n stores on one fresh schema (Schema), as n processes
// sharing a database would; they are closed, and then the schema
// dropped, when tb ends.
func Handles(tb testing.TB, n int, prefix, what string) []*postgres.Store {
	tb.Helper()
	dsn, schema := Schema(tb, prefix, what)
	out := make([]*postgres.Store, n)
	for i := range out {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out
}

// Schema returns the test database's DSN and the name of a schema no
// other test uses (prefix, then random hex), dropped when tb ends, after
// whatever tb opened on it later is closed. Without the database it
// skips tb, saying it needs it to do what.
func Schema(tb testing.TB, prefix, what string) (dsn, schema string) {
	tb.Helper()
	dsn = os.Getenv(Env)
	if dsn == "" {
		tb.Skip(Env + " is unset; set it to a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to " + what)
	}
	var b [6]byte
	rand.Read(b[:])
	schema = prefix + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("cleanup: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	return dsn, schema
}
