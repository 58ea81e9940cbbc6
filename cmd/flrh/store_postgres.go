package main

import (
	"context"
	"net/url"
	"strings"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
)

// openURLStore opens a store named by a URL: postgres://… or
// postgresql://… (any DSN pgx accepts, plus an optional schema=NAME query
// parameter that names the PostgreSQL schema holding flrh's tables).
func openURLStore(ctx context.Context, spec string, readOnly bool, sealer store.Sealer) (store.Store, error) {
	if !strings.HasPrefix(spec, "postgres://") && !strings.HasPrefix(spec, "postgresql://") {
		return nil, usagef("unsupported store %q: use sqlite:PATH or postgres://…", redactURL(spec))
	}
	dsn, schema, err := splitSchema(spec)
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema, ReadOnly: readOnly, Sealer: sealer})
	if store.CodeOf(err) == store.CodeInvalidInput {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// splitSchema takes flrh's own schema parameter out of a PostgreSQL URL;
// the server would refuse it as an unknown setting.
func splitSchema(spec string) (dsn, schema string, err error) {
	u, err := url.Parse(spec)
	if err != nil {
		return "", "", usagef("malformed PostgreSQL URL %q", redactURL(spec))
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// redactURL hides a password in a store URL before it is printed.
func redactURL(spec string) string {
	u, err := url.Parse(spec)
	if err != nil || u.User == nil {
		if i := strings.Index(spec, "@"); err != nil && i >= 0 {
			return "…" + spec[i:]
		}
		return spec
	}
	return u.Redacted()
}
