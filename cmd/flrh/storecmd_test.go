package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/pgtest"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

func runStoreCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	rootCmd.SetArgs(nil)
	rootCmd.SetOut(nil)
	return out.String(), err
}

// populate leaves one run of each kind check reports on: healthy, ended,
// quarantined, holding a stuck lease, waiting on a person to reconcile an
// effect, and ended with an effect a person abandoned.
func populate(t *testing.T, spec string) {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"healthy", "ended", "parked", "stuck", "human", "abandoned"} {
		if err := st.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "S"}); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := st.AcquireLease(ctx, "ended", "w", time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.Commit(ctx, l, store.Tick{State: "DONE", Outcome: "success"}))
	must(st.Quarantine(ctx, "parked", "checkpoint digest mismatch"))
	_, err = st.AcquireLease(ctx, "stuck", "dead-runner", time.Nanosecond)
	must(err)
	l, _ = st.AcquireLease(ctx, "human", "w", time.Hour)
	must(st.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i1", "k1", "pay 5")}, Begin: []string{"i1"}}))
	must(st.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{{IntentID: "i1", N: 1, Status: store.AttemptUnknown, Outbox: store.OutboxHuman, Route: "ambiguous"}}}))
	must(st.ReleaseLease(ctx, l))
	l, _ = st.AcquireLease(ctx, "abandoned", "w", time.Hour)
	must(st.Commit(ctx, l, store.Tick{Intents: []store.Intent{storetest.In("i2", "k2", "pay 6")}, Begin: []string{"i2"}}))
	must(st.Commit(ctx, l, store.Tick{Results: []store.AttemptResult{{IntentID: "i2", N: 1, Status: store.AttemptUnknown, Outbox: store.OutboxHuman, Route: "ambiguous"}}}))
	must(st.Commit(ctx, l, store.Tick{State: "EFFECT_OUTCOME_UNKNOWN", Outcome: "unknown_external_outcome", Events: []store.Event{storetest.Ev("ABANDON", `{"by":"dana"}`)}}))
}

func testStoreCommands(t *testing.T, spec string) {
	if strings.HasPrefix(spec, "postgres") {
		// Before migrate the schema does not exist: a command that only
		// reads says which command creates it.
		_, err := runStoreCmd(t, "store", "check", "--store", spec, "--json=false", "--stuck-after", "0s")
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "flrh store migrate --store") {
			t.Fatalf("check before migrate: exit %d: %v", exitCode(err), err)
		}
	}
	out, err := runStoreCmd(t, "store", "migrate", "--store", spec, "--json")
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	var mig map[string]any
	if err := json.Unmarshal([]byte(out), &mig); err != nil || mig["schema_version"] != mig["build_schema_version"] {
		t.Fatalf("migrate said %s", out)
	}
	out, err = runStoreCmd(t, "store", "check", "--store", spec, "--json=false", "--stuck-after", "0s")
	if err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("check on an empty store: %v\n%s", err, out)
	}
	populate(t, spec)
	out, err = runStoreCmd(t, "store", "check", "--store", spec, "--json", "--stuck-after", "0s")
	if !errors.Is(err, errChecksFailed) {
		t.Fatalf("check with problems: %v", err)
	}
	var rep storeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// The effect a person abandoned is listed, but is not a problem.
	if rep.Runs != 6 || rep.Ended != 2 || rep.Live != 3 || rep.Problems != 3 ||
		len(rep.Quarantined) != 1 || rep.Quarantined[0].RunID != "parked" ||
		len(rep.StuckLeases) != 1 || rep.StuckLeases[0].RunID != "stuck" || rep.StuckLeases[0].Owner != "dead-runner" ||
		len(rep.OpenOutbox) != 2 || rep.OpenOutbox[0].Status != "human" || rep.OpenOutbox[0].Attempts != 1 || rep.OpenOutbox[0].RunEnded ||
		rep.OpenOutbox[1].RunID != "abandoned" || rep.OpenOutbox[1].Status != "human" || !rep.OpenOutbox[1].RunEnded {
		t.Fatalf("report %+v", rep)
	}
	// The census and the open outbox read in one go are what walking
	// each run's header and intents finds.
	walkEachRun(t, spec)
	// An hour's grace hides the just-expired lease.
	out, _ = runStoreCmd(t, "store", "check", "--store", spec, "--json=false", "--stuck-after", "1h")
	if !strings.Contains(out, "stuck leases: 0") || !strings.Contains(out, "open outbox entries: 2 (2 human)") || !strings.Contains(out, "2 problem(s)") ||
		!strings.Contains(out, "abandoned i2 refund: human after 1 attempts ambiguous (the run ended with it open: abandoned by a person, not a problem)") {
		t.Fatalf("human report:\n%s", out)
	}
	_, err = runStoreCmd(t, "store", "check", "--store", spec, "--json=false", "--stuck-after", "-1s")
	if exitCode(err) != exitUsage {
		t.Fatalf("negative --stuck-after: exit %d", exitCode(err))
	}
}

// walkOnly is a store that shows only the store interface: no
// CensusTaker and no OutboxLister, so the check pages through every run
// and reads each one's intents.
type walkOnly struct{ store.Store }

// walkEachRun holds the check of the store at spec, answered by the
// store's census and its open outbox listed in one read, to the walk of
// every run's header and intents, with and without a grace for leases.
func walkEachRun(t *testing.T, spec string) {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, spec, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := store.OutboxListerOf(st); !ok {
		t.Fatalf("the %s store does not list its open outbox", spec)
	}
	if _, ok := store.CensusTakerOf(st); !ok {
		t.Fatalf("the %s store takes no census", spec)
	}
	now := time.Now()
	for _, grace := range []time.Duration{0, time.Hour} {
		var listed, walked storeReport
		if err := walkStore(ctx, st, now, grace, &listed); err != nil {
			t.Fatal(err)
		}
		if err := walkStore(ctx, walkOnly{st}, now, grace, &walked); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(listed, walked) {
			t.Fatalf("with %s of grace, the check from the census and the open outbox\n%+v\nwalking each run\n%+v", grace, listed, walked)
		}
	}
}

func TestStoreCommandsSQLite(t *testing.T) {
	testStoreCommands(t, "sqlite:"+filepath.Join(t.TempDir(), "flrh.db"))
}

// A read-only command on a store that needs migrating says which command
// migrates it, and changes nothing.
func TestReadOnlyCommandPointsToMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runStoreCmd(t, "store", "check", "--store", "sqlite:"+path, "--json=false", "--stuck-after", "0s")
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "needs migration") || !strings.Contains(err.Error(), "flrh store migrate --store 'sqlite:"+path+"'") {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the store was written: %v", err)
	}
}

func TestStoreCommandsPostgres(t *testing.T) {
	_, spec, _ := postgresSpec(t, "flrh_cli_", "run the PostgreSQL store commands")
	testStoreCommands(t, spec)
}

// postgresSpec returns a fresh schema of the test database (named with
// prefix, dropped when the test ends), the --store spec that opens it and
// the database's DSN; without FLRH_TEST_POSTGRES it skips the test, saying
// it needs the database to do what.
func postgresSpec(tb testing.TB, prefix, what string) (schema, spec, dsn string) {
	tb.Helper()
	dsn, schema = pgtest.Schema(tb, prefix, what)
	return schema, schemaSpec(tb, dsn, schema), dsn
}

// freshSchema names a schema no other test uses, starting with prefix,
// and gives the store spec that opens it on the PostgreSQL at dsn.
func freshSchema(tb testing.TB, dsn, prefix string) (schema, spec string) {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema = prefix + hex.EncodeToString(b[:])
	return schema, schemaSpec(tb, dsn, schema)
}

// schemaSpec is the store spec that opens schema on the PostgreSQL at
// dsn.
func schemaSpec(tb testing.TB, dsn, schema string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestStoreURLErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := runStoreCmd(t, "store", "check", "--store", "sqlite:"+dir, "--json=false", "--stuck-after", "0s"); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory as the store: exit %d: %v", exitCode(err), err)
	}
	for spec, want := range map[string]int{
		"mysql://x":                       exitUsage,
		"postgres://u:secret@[::1":        exitUsage,
		"postgres://u:secret@host:99999/": exitUsage,
	} {
		_, err := runStoreCmd(t, "store", "check", "--store", spec, "--json=false", "--stuck-after", "0s")
		if exitCode(err) != want {
			t.Errorf("%s: exit %d (%v), want %d", spec, exitCode(err), err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks the password: %v", spec, err)
		}
	}
}

// The store URL helpers never panic, never print a password they can
// parse, and take exactly flrh's schema parameter out of a URL.
func FuzzStoreURL(f *testing.F) {
	f.Add("flrh", "s3cret-pw", "db.internal:5432", "flrh_prod", "sslmode=disable")
	f.Add("", "", "[::1", "", "")
	f.Add("u", "p@ss:w/rd", "h", "a b", "schema=x&schema=y")
	f.Fuzz(func(t *testing.T, user, pass, host, schema, rawQuery string) {
		u := &url.URL{Scheme: "postgres", Host: host, Path: "/db", RawQuery: rawQuery}
		if pass != "" {
			u.User = url.UserPassword(user, pass)
		} else if user != "" {
			u.User = url.User(user)
		}
		q := u.Query()
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
		spec := u.String()
		shown := redactURL(spec)
		if parsed, err := url.Parse(spec); err == nil && len(pass) >= 6 {
			if p, ok := parsed.User.Password(); ok && p == pass && strings.Contains(shown, url.UserPassword("", pass).String()[1:]) {
				t.Fatalf("redactURL(%q) = %q shows the password", spec, shown)
			}
		}
		dsn, got, err := splitSchema(spec)
		if err != nil {
			return // a URL net/url cannot parse back is refused as a usage error
		}
		if got != schema {
			t.Fatalf("schema %q, want %q", got, schema)
		}
		back, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("splitSchema produced an unparsable DSN %q", dsn)
		}
		if back.Query().Has("schema") {
			t.Fatalf("schema parameter left in %q", dsn)
		}
	})
}

// store check reports each duty as held, lapsed or given up, none of them
// a problem.
func TestStoreCheckPrintsDuties(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    dutyState
		says string
	}{
		{dutyState{Name: "prune", Holder: "serve:a:1", Generation: 3, ExpiresAt: at}, "duty prune: held by serve:a:1 (generation 3) until 2026-12-05T10:00:00Z\n"},
		{dutyState{Name: "prune", Holder: "serve:a:1", Generation: 3, ExpiresAt: at, Lapsed: true}, "duty prune: lapsed, last held by serve:a:1 (generation 3) until 2026-12-05T10:00:00Z; the next server to pass takes it\n"},
		{dutyState{Name: "prune", Generation: 4}, "duty prune: given up (generation 4); the next server to pass takes it\n"},
	} {
		var b strings.Builder
		storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1, Duties: []dutyState{tc.d}}.print(&b)
		if !strings.Contains(b.String(), tc.says) || !strings.HasSuffix(b.String(), "ok\n") {
			t.Errorf("%+v printed\n%s\nwant a line %q and ok", tc.d, b.String(), tc.says)
		}
	}
}

func TestStoreCheckPrintsNotices(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1, NoticesPending: 3,
		OldestNotice: &oldestNotice{ID: "r/5/0/approval_waiting", WrittenAt: at, Attempts: 4, LastError: "the receiver answered 503 Service Unavailable"}}.print(&b)
	want := "notices not yet delivered: 3 (flrh serve --notify); the oldest, r/5/0/approval_waiting, written 2026-12-05T10:00:00Z, 4 attempts, the last: the receiver answered 503 Service Unavailable\n"
	if !strings.Contains(b.String(), want) || !strings.HasSuffix(b.String(), "ok\n") {
		t.Errorf("printed\n%s\nwant a line %q and ok", b.String(), want)
	}
	b.Reset()
	storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1, NoticesPending: 1,
		OldestNotice: &oldestNotice{ID: "r/5/0/run_ended", WrittenAt: at, Attempts: 3, LastError: "route pager: 503", Reached: []string{"chat", "audit"},
			Failed: []routeFailed{{Route: "pager", Failures: 2, Left: 95.4}, {Route: "mail", Failures: 1}}}}.print(&b)
	want = "the oldest, r/5/0/run_ended, written 2026-12-05T10:00:00Z, 3 attempts, the last: route pager: 503; reached chat, audit; failed at pager (2 times, again in 1m35s), mail (once, due now)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("printed\n%s\nwant a line ending %q", b.String(), want)
	}
	// Held for escalations: counted apart; the oldest not held says
	// which routes it escalates to; every one held, none is the oldest.
	b.Reset()
	storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1, NoticesPending: 3, NoticesHeld: 1,
		OldestNotice: &oldestNotice{ID: "r/5/0/approval_waiting", WrittenAt: at, Attempts: 2, LastError: "route chat: 503", Reached: []string{"audit"},
			Failed: []routeFailed{{Route: "chat", Failures: 1, Left: 4}}, Escalations: []escalation{{Route: "manager", Left: 3599.6}}}}.print(&b)
	want = "notices not yet delivered: 3 (flrh serve --notify), 1 held for escalation routes alone; the oldest, r/5/0/approval_waiting, written 2026-12-05T10:00:00Z, 2 attempts, the last: route chat: 503; reached audit; failed at chat (once, again in 4s); escalates to manager (if the run still waits, in 1h0m0s)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("printed\n%s\nwant a line %q", b.String(), want)
	}
	b.Reset()
	storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1, NoticesPending: 2, NoticesHeld: 2}.print(&b)
	if want := "notices not yet delivered: 2 (flrh serve --notify), 2 held for escalation routes alone\n"; !strings.Contains(b.String(), want) || !strings.HasSuffix(b.String(), "ok\n") {
		t.Errorf("printed\n%s\nwant a line %q and ok", b.String(), want)
	}
	b.Reset()
	storeReport{Backend: "sqlite", SchemaVersion: 1, BuildSchemaVersion: 1}.print(&b)
	if strings.Contains(b.String(), "notices") {
		t.Errorf("no notices printed\n%s", b.String())
	}
}

// TestStoreCheckShowsSharedLimits: the limits in use, read from the store
// (slots held by whom until when, a rate booked), in JSON and in words,
// none of them a problem; none once they are given back.
func TestStoreCheckShowsSharedLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flrh.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, h := range []string{"serve:a:1#1", "serve:b:2#7"} {
		if _, ok, err := st.TakeSlot(ctx, "payments", 2, h, time.Hour, 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if _, _, err := st.TakeToken(ctx, "payments", 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.TakeSlot(ctx, "payments", 4, "serve:c:3#1", time.Hour, time.Hour); err != nil || ok {
		t.Fatal("a third request took a slot while two were open under a bound of two", err)
	}
	out, err := runStoreCmd(t, "store", "check", "--store", "sqlite:"+path, "--json", "--stuck-after", "0s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep struct {
		SharedLimits []struct {
			Name string `json:"name"`
			Held []struct {
				Slot   int       `json:"slot"`
				Holder string    `json:"holder"`
				Until  time.Time `json:"until"`
				Bound  int       `json:"bound"`
			} `json:"held"`
			BookedUntil *time.Time `json:"booked_until"`
			PerSecond   int        `json:"per_second"`
			Waiting     int        `json:"waiting"`
			Bounds      []int      `json:"bounds"`
		} `json:"shared_limits"`
		Problems int `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.SharedLimits) != 1 || rep.Problems != 0 {
		t.Fatalf("shared limits %+v, problems %d", rep.SharedLimits, rep.Problems)
	}
	l := rep.SharedLimits[0]
	if l.Name != "payments" || len(l.Held) != 2 || l.Held[0].Holder != "serve:a:1#1" || l.Held[1].Slot != 1 || l.Held[1].Holder != "serve:b:2#7" ||
		time.Until(l.Held[0].Until) < 59*time.Minute || l.BookedUntil == nil || time.Until(*l.BookedUntil) <= 0 || l.Waiting != 1 ||
		l.Held[0].Bound != 2 || l.PerSecond != 1 || !slices.Equal(l.Bounds, []int{2, 4}) {
		t.Fatalf("payments in use: %+v", l)
	}
	out, err = runStoreCmd(t, "store", "check", "--store", "sqlite:"+path, "--json=false", "--stuck-after", "0s")
	if err != nil || !strings.Contains(out, "shared limits in use: 1\n  payments: 2 slots held (0 by serve:a:1#1 until ") || !strings.Contains(out, "; 1 waiting for a slot; rate booked until") ||
		!strings.Contains(out, " at 1 a second\n    declared with bounds 2 and 4 by the requests using it: the strictest, 2, holds for all\n") {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, h := range []string{"serve:a:1#1", "serve:b:2#7"} {
		if err := st.GiveSlot(ctx, "payments", i, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.LeaveQueue(ctx, "payments", "serve:c:3#1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the rate catches up
	out, err = runStoreCmd(t, "store", "check", "--store", "sqlite:"+path, "--json=false", "--stuck-after", "0s")
	if err != nil || strings.Contains(out, "shared limits") {
		t.Fatalf("with none in use: %v\n%s", err, out)
	}
}
