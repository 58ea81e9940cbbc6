package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"flrh.dev/flrh/store"
)

// Every server failure maps to the code its callers branch on, and only
// the failures after which nothing was written are retried.
func TestErrorMapping(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	for _, tc := range []struct {
		name      string
		err       error
		code      store.Code
		retryable bool
		lost      bool
	}{
		{"unique violation", pg("23505"), store.CodeExists, false, false},
		{"foreign key violation", pg("23503"), store.CodeNotFound, false, false},
		{"check violation", pg("23514"), store.CodeInvalidInput, false, false},
		{"not null violation", pg("23502"), store.CodeInvalidInput, false, false},
		{"append-only trigger", pg("FL001"), store.CodeInvalidTransition, false, false},
		{"serialization failure", pg("40001"), store.CodeUnavailable, true, false},
		{"deadlock", pg("40P01"), store.CodeUnavailable, true, false},
		{"guarded write found other rows", pg("FL002"), store.CodeUnavailable, true, false},
		{"read-only transaction", pg("25006"), store.CodeInvalidInput, false, false},
		{"data corrupted", pg("XX001"), store.CodeCorrupt, false, false},
		{"index corrupted", pg("XX002"), store.CodeCorrupt, false, false},
		{"disk full", pg("53100"), store.CodeUnavailable, false, false},
		{"terminated by administrator", pg("57P01"), store.CodeUnavailable, false, true},
		{"server crash", pg("57P02"), store.CodeUnavailable, false, true},
		{"starting up", pg("57P03"), store.CodeUnavailable, false, true},
		{"connection failure", pg("08006"), store.CodeUnavailable, false, true},
		{"idle in transaction too long", pg("25P03"), store.CodeUnavailable, false, true},
		{"eof", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), store.CodeUnavailable, false, true},
		{"no rows", pgx.ErrNoRows, store.CodeNotFound, false, false},
		{"canceled", context.Canceled, store.CodeUnavailable, false, false},
		{"idempotency race", errRetryKey, store.CodeUnavailable, true, false},
		{"inbox position race", errRetryInbox, store.CodeUnavailable, true, false},
		{"typed error passes through", store.Errorf(store.CodeFenced, "commit", "r", nil, "x"), store.CodeFenced, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.CodeOf(mapErr("op", "r", tc.err)); got != tc.code {
				t.Errorf("code %s, want %s", got, tc.code)
			}
			if got := retryable(tc.err); got != tc.retryable {
				t.Errorf("retryable %v, want %v", got, tc.retryable)
			}
			if got := connLost(tc.err); got != tc.lost {
				t.Errorf("connection lost %v, want %v", got, tc.lost)
			}
			if tc.err != nil && !errors.Is(mapErr("op", "r", tc.err), tc.err) && store.CodeOf(tc.err) == "" && tc.code != store.CodeNotFound {
				t.Errorf("the cause is not kept: %v", mapErr("op", "r", tc.err))
			}
		})
	}
	if mapErr("op", "", nil) != nil {
		t.Fatal("nil maps to an error")
	}
}

// A store that cannot connect says so, and names a refusal no retry mends
// (no such database, credentials refused) with a code of its own.
func TestOpenSaysWhyItCannotConnect(t *testing.T) {
	ctx := context.Background()
	// Nothing listens on port 1: the dial is refused.
	_, err := Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", Options{})
	if store.CodeOf(err) != store.CodeUnavailable || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("refused dial: %v", err)
	}
	u, err := url.Parse(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(u *url.URL)
		code store.Code
		says string
	}{
		{"no such database", func(u *url.URL) { u.Path = "/flrh_no_such_database" }, store.CodeNotFound, "the database does not exist"},
		{"no such role", func(u *url.URL) { u.User = url.User("flrh_no_such_role") }, store.CodeInvalidInput, "the server refused the credentials"},
	} {
		v := *u
		tc.edit(&v)
		_, err := Open(ctx, v.String(), Options{})
		if store.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %s saying %q", tc.name, err, tc.code, tc.says)
		}
	}
}
