package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func TestImportPrunedIntoSQLite(t *testing.T) {
	a, b := twoSQLiteSpecs(t)
	testImportPruned(t, a, b)
}

func TestImportPrunedIntoPostgres(t *testing.T) {
	to, taken := twoPostgresSpecs(t, "flrh_import_", "import pruned runs into PostgreSQL")
	testImportPruned(t, to, taken)
}

// twoSQLiteSpecs returns the --store specs of two new embedded stores,
// each in a directory of its own: the SQLite side of a test that
// twoPostgresSpecs gives the PostgreSQL side of.
func twoSQLiteSpecs(t *testing.T) (string, string) {
	return "sqlite:" + filepath.Join(t.TempDir(), "one.db"), "sqlite:" + filepath.Join(t.TempDir(), "two.db")
}

// twoPostgresSpecs returns the --store specs of two fresh schemas of the
// test database, or skips the test, saying it needs one to do what.
func twoPostgresSpecs(t *testing.T, prefix, what string) (string, string) {
	t.Helper()
	_, a, _ := postgresSpec(t, prefix, what)
	_, b, _ := postgresSpec(t, prefix, what)
	return a, b
}

// flrh store import, through the binary, moves the runs an embedded store
// pruned into another store: their headers as they were, their prunings
// (each archive verifies against the new store) and their idempotency
// keys, still bound (an intent with one is refused there). A run not
// pruned is left; importing again imports nothing; a run whose id the
// other store holds already is left, the rest imported.
func testImportPruned(t *testing.T, to, taken string) {
	bin := buildFlrh(t)
	ctx := context.Background()
	from := "sqlite:" + filepath.Join(t.TempDir(), "from.db")
	recordRuns(t, from, true, 800, 30)
	dir := filepath.Join(t.TempDir(), "archive")
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", dir, "--store", from); err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	for _, spec := range []string{to, taken} {
		if out, err := flrh(bin, nil, "store", "migrate", "--store", spec); err != nil {
			t.Fatalf("migrate %s: %v\n%s", spec, err, out)
		}
	}
	imp := func(spec string) (importReport, int, string) {
		t.Helper()
		out, err := flrh(bin, nil, "store", "import", "--from", from, "--store", spec, "--json")
		var rep importReport
		code := exitStatus(t, err)
		if code <= 1 {
			if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
				t.Fatalf("import: exit %d, %q: %v", code, out, jerr)
			}
		}
		return rep, code, out
	}

	if out, err := flrh(bin, nil, "store", "import", "--store", to); exitStatus(t, err) != exitUsage || !strings.Contains(out, "--from STORE or --archive FILE|DIR is required") {
		t.Fatalf("import without --from: %v\n%s", err, out)
	}
	rep, code, out := imp(to)
	if code != 1 || strings.Join(rep.Imported, ",") != "small,large,agent-1" || rep.Keys != 5 || len(rep.Already) != 0 ||
		len(rep.Left) != 1 || rep.Left[0].RunID != "agent-0" || !strings.Contains(rep.Left[0].Reason, "has not ended") {
		t.Fatalf("import: exit %d\n%s", code, out)
	}

	src, err := openStore(ctx, from, true)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := openStore(ctx, to, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for _, id := range rep.Imported {
		a, err := src.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dst.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		a.Lease, b.Lease = store.Lease{}, store.Lease{}
		if a.ID != b.ID || a.WorkflowID != b.WorkflowID || a.WorkflowVersion != b.WorkflowVersion || a.WorkflowDigest != b.WorkflowDigest ||
			a.State != b.State || a.Outcome != b.Outcome || a.Head != b.Head || a.HeadHash != b.HeadHash ||
			!a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
			t.Fatalf("run %s imported as %+v, was %+v", id, b, a)
		}
		pa, err := store.PruningOf(ctx, src, a)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := store.PruningOf(ctx, dst, b)
		if err != nil || pb == nil || pb.Archive != pa.Archive || pb.HeadHash != pa.HeadHash || pb.Kept != pa.Kept || !pb.At.Equal(pa.At) {
			t.Fatalf("run %s's pruning imported as %+v, was %+v (%v)", id, pb, pa, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+archiveSuffix))
	if len(files) != 3 {
		t.Fatalf("archives: %v", files)
	}
	if out, err := flrh(bin, nil, append([]string{"verify", "--store", to}, prefixed("--archive", files)...)...); err != nil || strings.Count(out, "verified") != 3 {
		t.Fatalf("the archives against the store imported into: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "verify", "--all", "--store", to); err != nil || strings.Count(out, ": pruned") != 3 {
		t.Fatalf("verify --all on the store imported into: %v\n%s", err, out)
	}

	// The keys are bound: an intent of a new run with one of them is
	// refused, with the same content or with other.
	keys, ok := store.PrunedMoverOf(dst)
	if !ok {
		t.Fatal("the store imported into does not move pruned runs")
	}
	kept, kerr := keys.PrunedKeys(ctx, "large")
	if kerr != nil || len(kept) != 2 {
		t.Fatalf("large's keys in the store imported into: %+v, %v", kept, kerr)
	}
	if err := dst.CreateRun(ctx, store.Run{ID: "new", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, lerr := dst.AcquireLease(ctx, "new", "w", time.Minute)
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, tc := range []struct {
		content string
		digest  string
		want    store.Code
	}{{"same", kept[0].ContentDigest, store.CodeExists}, {"other", store.BodyDigest([]byte("other")), store.CodeIdempotencyConflict}} {
		in := storetest.In("new-"+tc.content, kept[0].IdempotencyKey, tc.content)
		in.ContentDigest = tc.digest
		if err := dst.Commit(ctx, l, store.Tick{Intents: []store.Intent{in}}); store.CodeOf(err) != tc.want {
			t.Fatalf("an intent with an imported key and %s content: %v, want %s", tc.content, err, tc.want)
		}
	}

	// Again: nothing is imported twice.
	if rep, code, out := imp(to); code != 1 || len(rep.Imported) != 0 || strings.Join(rep.Already, ",") != "small,large,agent-1" || len(rep.Left) != 1 {
		t.Fatalf("import again: exit %d\n%s", code, out)
	}

	// A store that holds a run of one of the ids already, and an intent
	// bound to one of agent-1's keys with other content: those two runs
	// are left, nothing of them written; small is imported.
	agentKeys, err := keys.PrunedKeys(ctx, "agent-1")
	if err != nil || len(agentKeys) != 1 {
		t.Fatalf("agent-1's keys: %+v, %v", agentKeys, err)
	}
	ts, err := openStore(ctx, taken, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateRun(ctx, store.Run{ID: "large", WorkflowID: "other", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateRun(ctx, store.Run{ID: "mine", WorkflowID: "other", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	ml, err := ts.AcquireLease(ctx, "mine", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Commit(ctx, ml, store.Tick{Intents: []store.Intent{storetest.In("mine-1", agentKeys[0].IdempotencyKey, "my own")}}); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	rep, code, out = imp(taken)
	if code != 1 || strings.Join(rep.Imported, ",") != "small" || len(rep.Left) != 3 ||
		rep.Left[0].RunID != "large" || !strings.Contains(rep.Left[0].Reason, "taken by another run") ||
		rep.Left[2].RunID != "agent-1" || !strings.Contains(rep.Left[2].Reason, "IDEMPOTENCY_CONFLICT") {
		t.Fatalf("import into a store holding run large and one of agent-1's keys: exit %d\n%s", code, out)
	}
	if out, err := flrh(bin, nil, "run", "show", "large", "--store", taken); err != nil || !strings.Contains(out, "other") {
		t.Fatalf("the store's own run large: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "run", "show", "agent-1", "--store", taken); err == nil {
		t.Fatalf("agent-1, refused for its key, was written:\n%s", out)
	}
}
