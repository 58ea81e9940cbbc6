package main

import (
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/storetest"
)

// A PostgreSQL store is backed up and restored by PostgreSQL's own tools,
// as docs/postgres.md says: pg_dump of its schema, pg_restore into another
// database. The restored store holds the same runs, verifies and reads as
// the original does, keeps its evidence append-only, and takes new runs
// and ticks.
func TestPostgresDumpAndRestore(t *testing.T) {
	schema, spec, dsn := postgresSpec(t, "flrh_dump_", "run the pg_dump/pg_restore test")
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (it comes with PostgreSQL's client package): %v", tool, err)
		}
	}
	bin := buildFlrh(t)
	ctx := context.Background()
	recordRuns(t, spec, true, 800, 30)
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--discard", "--limit", "1", "--store", spec); err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}

	// A database of its own for the restore, dropped afterwards.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	db := "flrh_restored_" + strings.TrimPrefix(schema, "flrh_dump_")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			return
		}
		defer admin.Close(context.Background())
		admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	restoredDSN := *u
	restoredDSN.Path = "/" + db
	q := restoredDSN.Query()
	q.Set("schema", schema)
	restoredDSN.RawQuery = q.Encode()
	restored := restoredDSN.String()
	plain := func(u url.URL) string { // the DSN without flrh's own parameter, for PostgreSQL's tools
		q := u.Query()
		q.Del("schema")
		u.RawQuery = q.Encode()
		return u.String()
	}

	dump := filepath.Join(t.TempDir(), "flrh.dump")
	for _, cmd := range [][]string{
		{"pg_dump", "--dbname", plain(*u), "--schema", schema, "--format", "custom", "--file", dump},
		{"pg_restore", "--dbname", plain(restoredDSN), "--exit-on-error", dump},
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd[0], err, out)
		}
	}

	for _, args := range [][]string{{"verify", "--all"}, {"run", "list"}, {"run", "events", "large"}, {"run", "trace", "agent-1"}, {"run", "show", "small"}, {"store", "check", "--stuck-after", "0s"}} {
		a, errA := flrh(bin, nil, append(args, "--store", spec)...)
		b, errB := flrh(bin, nil, append(args, "--store", restored)...)
		if errA != nil || errB != nil || a != b {
			t.Fatalf("flrh %v reads otherwise from the restored store (%v, %v):\n%s\nthe store:\n%s", args, errB, errA, b, a)
		}
	}

	opened, err := openStore(ctx, restored, false)
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	rs, ok := store.As[*postgres.Store](opened)
	if !ok {
		t.Fatalf("the restored store is a %T", opened)
	}
	if _, err := rs.Pool().Exec(ctx, `DELETE FROM events WHERE run_id = 'large'`); err == nil {
		t.Fatal("the restored store let an event be deleted")
	}
	if err := rs.CreateRun(ctx, store.Run{ID: "after-restore", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := rs.AcquireLease(ctx, "after-restore", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Commit(ctx, l, store.Tick{State: "EXECUTE", Events: []store.Event{storetest.Ev("INPUT", `{"n":1}`)}}); err != nil {
		t.Fatalf("a tick on the restored store: %v", err)
	}
	if err := rs.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("INPUT", `{"n":2}`)}}); store.CodeOf(err) != store.CodeHeadMismatch {
		t.Fatalf("a stale tick on the restored store: %v", err)
	}
}
