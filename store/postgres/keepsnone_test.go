package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/storetest"
)

// The PostgreSQL store keeps none of a tick's slices once Commit returns,
// a lagging tick's included (group commit answers each caller once its
// tick is decided). Skipped without FLRH_TEST_POSTGRES.
func TestCommitKeepsNoneOfTheTick(t *testing.T) {
	dsn := os.Getenv("FLRH_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("FLRH_TEST_POSTGRES is unset; set it to a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL store tests")
	}
	storetest.RunKeepsNone(t, func(t *testing.T, clock func() time.Time) store.Store {
		var b [6]byte
		rand.Read(b[:])
		schema := "flrh_test_keepsnone_" + hex.EncodeToString(b[:])
		t.Cleanup(func() {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Errorf("cleanup: %v", err)
				return
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Clock: clock, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
