package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func TestImportArchivesIntoSQLite(t *testing.T) {
	a, b := twoSQLiteSpecs(t)
	testImportArchives(t, a, b)
}

func TestImportArchivesIntoPostgres(t *testing.T) {
	to, taken := twoPostgresSpecs(t, "flrh_import_archive_", "import archived runs into PostgreSQL")
	testImportArchives(t, to, taken)
}

// flrh store import --archive, through the binary, takes the runs an
// embedded store pruned into archives (runs a real runner wrote) into
// another store whole: each reads back there as it read in the store it
// was pruned from before, verifies and replays, and is archived again to
// the same bytes. Files that are not archives, or whose record does not
// verify, are left; an archive twice (compressed and not) is taken once;
// the store that pruned the runs takes none of them back; a store holding
// another run of an id leaves that one; a dry run writes nothing; and
// importing again writes nothing.
func testImportArchives(t *testing.T, to, taken string) {
	bin := buildFlrh(t)
	ctx := context.Background()
	from := "sqlite:" + filepath.Join(t.TempDir(), "from.db")
	recordRuns(t, from, true, 800, 30)
	const ended = "small,large,agent-1" // agent-0 waits for an approval
	src, err := openStore(ctx, from, true)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]store.WholeRun{}
	for _, id := range strings.Split(ended, ",") {
		before[id] = wholeRun(t, src, id)
	}
	src.Close()
	dir := filepath.Join(t.TempDir(), "archive")
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", dir, "--store", from); err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	for _, spec := range []string{to, taken} {
		if out, err := flrh(bin, nil, "store", "migrate", "--store", spec); err != nil {
			t.Fatalf("migrate %s: %v\n%s", spec, err, out)
		}
	}
	original := map[string][]byte{}
	for _, id := range strings.Split(ended, ",") {
		b, err := os.ReadFile(filepath.Join(dir, archiveFileName(id, false)))
		if err != nil {
			t.Fatal(err)
		}
		original[id] = b
	}
	// Beside the archives: large's compressed (the same run: taken once),
	// a file that is no archive, and small's archive with the payee of
	// its first input changed, which decodes but does not verify.
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(archiveFileName("large", true), archive.Compress(original["large"]))
	write("junk"+archiveSuffix, []byte(`{"kind":"not an archive"}`))
	a, err := archive.Decode(original["small"])
	if err != nil {
		t.Fatal(err)
	}
	body := a.Record.Events[1].Body
	a.Record.Events[1].Body = []byte(strings.Replace(string(body), `"alice"`, `"mallory"`, 1))
	if string(a.Record.Events[1].Body) == string(body) {
		t.Fatalf("small's second event pays no alice: %s", body)
	}
	tampered, err := archive.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	write("tampered"+archiveSuffix, tampered)
	left := map[string]string{filepath.Join(dir, "junk"+archiveSuffix): "is not an archive", filepath.Join(dir, "tampered"+archiveSuffix): "does not verify"}

	imp := func(spec string, args ...string) (importReport, int, string) {
		t.Helper()
		out, err := flrh(bin, nil, append([]string{"store", "import", "--store", spec, "--json"}, args...)...)
		var rep importReport
		code := exitStatus(t, err)
		if code <= 1 {
			if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
				t.Fatalf("import %v: exit %d, %q: %v", args, code, out, jerr)
			}
		}
		return rep, code, out
	}
	leftAsWanted := func(rep importReport, more int) bool {
		t.Helper()
		n := 0
		for _, l := range rep.Left {
			if want, ok := left[l.File]; ok && l.RunID == "" && strings.Contains(l.Reason, want) {
				n++
			}
		}
		return n == len(left) && len(rep.Left) == len(left)+more
	}

	// Bad flags change nothing and say why.
	for _, args := range [][]string{
		{"--archive", dir, "--from", from},
		{"--archive", dir, "--ended"},
		{"--archive", filepath.Join(dir, "nothing-here")},
	} {
		if _, code, out := imp(to, args...); code != exitUsage {
			t.Fatalf("import %v: exit %d, want %d\n%s", args, code, exitUsage, out)
		}
	}

	// The store that pruned them takes none back: it keeps each run's
	// header and keys, the archive its record.
	rep, code, out := imp(from, "--archive", dir)
	if code != 1 || len(rep.Archived)+len(rep.Already) != 0 || strings.Join(rep.PrunedHere, ",") != ended || !leftAsWanted(rep, 0) {
		t.Fatalf("import into the store that pruned them: exit %d\n%s", code, out)
	}

	// A dry run says what would be imported, in creation order, and
	// writes nothing.
	rep, code, out = imp(to, "--archive", dir, "--dry-run")
	if code != 1 || strings.Join(rep.Archived, ",") != ended || !rep.DryRun || !leftAsWanted(rep, 0) {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	dst, err := openStore(ctx, to, true)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listedIDs(t, dst); len(ids) != 0 {
		t.Fatalf("a dry run wrote runs %v", ids)
	}
	dst.Close()

	rep, code, out = imp(to, "--archive", dir)
	if code != 1 || strings.Join(rep.Archived, ",") != ended || len(rep.Already) != 0 || !leftAsWanted(rep, 0) {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	human, err := flrh(bin, nil, "store", "import", "--store", to, "--archive", dir)
	if exitStatus(t, err) != 1 || !strings.Contains(human, "imported 0 runs whole from archives; 3 imported before; 0 pruned here into their archives; left 2") ||
		!strings.Contains(human, "left "+filepath.Join(dir, "junk"+archiveSuffix)+": it is not an archive") {
		t.Fatalf("import again, for people: %v\n%s", err, human)
	}
	dst, err = openStore(ctx, to, true)
	if err != nil {
		t.Fatal(err)
	}
	if ids := strings.Join(listedIDs(t, dst), ","); ids != ended {
		t.Fatalf("the store imported into lists %s, want %s", ids, ended)
	}
	for _, id := range strings.Split(ended, ",") {
		want, got := storetest.NilEmpty(before[id]), storetest.NilEmpty(wholeRun(t, dst, id))
		want.Record.Run.Lease = store.Lease{RunID: id, Generation: want.Record.Run.Lease.Generation}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("run %s reads otherwise after its archive was imported:\n got %+v\nwant %+v", id, got.Record.Run, want.Record.Run)
		}
	}
	dst.Close()
	if out, err := flrh(bin, nil, "verify", "--all", "--store", to); err != nil || strings.Count(out, ": verified") != 3 {
		t.Fatalf("verify --all in the store imported into: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "replay", "agent-1", "--store", to); err != nil || !strings.Contains(out, "run agent-1: identical") {
		t.Fatalf("replay in the store imported into: %v\n%s", err, out)
	}
	// Archived again from the store it was imported into, a run's archive
	// is the one it was imported from, byte for byte but for the lease.
	again := filepath.Join(t.TempDir(), "again")
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", again, "--store", to); err != nil {
		t.Fatalf("prune the imported runs: %v\n%s", err, out)
	}
	for id, b := range original {
		// The lease the last runner held is not taken in: the import's
		// run arrives unleased, at the lease's generation.
		a, err := archive.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		a.Record.Run.Lease = store.Lease{RunID: id, Generation: a.Record.Run.Lease.Generation}
		want, err := archive.Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(again, archiveFileName(id, false)))
		if err != nil || string(got) != string(want) {
			t.Errorf("run %s archived again differs from the archive it was imported from, its lease aside (%v)\n%s\n%s", id, err, got, want)
		}
	}

	// A store holding another run of one of the ids leaves that one.
	ts, err := openStore(ctx, taken, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateRun(ctx, store.Run{ID: "large", WorkflowID: "other", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	rep, code, out = imp(taken, "--archive", filepath.Join(dir, archiveFileName("small", false)), "--archive", filepath.Join(dir, archiveFileName("large", true)))
	if code != 1 || strings.Join(rep.Archived, ",") != "small" || len(rep.Left) != 1 || rep.Left[0].RunID != "large" ||
		!strings.Contains(rep.Left[0].Reason, "holds another run of this id") {
		t.Fatalf("import into a store holding run large: exit %d\n%s", code, out)
	}
}

// Whether importArchives keeps an archive decoded between its passes or
// reads it again (keepDecoded: all, none, the first alone) changes
// nothing in what it imports.
func TestImportArchivesKeptOrReadAgain(t *testing.T) {
	ctx := context.Background()
	from := "sqlite:" + filepath.Join(t.TempDir(), "from.db")
	recordRuns(t, from, true, 800, 30, 40)
	src, err := openStore(ctx, from, false)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	if rep, err := pruneRuns(ctx, src, pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir, Parallel: 1}); err != nil || len(rep.Pruned) != 4 {
		t.Fatalf("pruned %+v: %v", rep.Pruned, err)
	}
	first, err := os.Stat(filepath.Join(dir, archiveFileName("small", false)))
	if err != nil {
		t.Fatal(err)
	}
	defer func(keep int64) { keepDecoded = keep }(keepDecoded)
	var want map[string]store.WholeRun
	for _, keep := range []int64{keepDecoded, 0, first.Size()} {
		keepDecoded = keep
		dst, err := openStore(ctx, "sqlite:"+filepath.Join(t.TempDir(), "to.db"), false)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := importArchives(ctx, dst, []string{dir}, false)
		if err != nil || strings.Join(rep.Archived, ",") != "small,large,agent-1,agent-2" || len(rep.Left)+len(rep.Already) != 0 {
			t.Fatalf("keeping %d bytes decoded: %+v, %v", keep, rep, err)
		}
		got := map[string]store.WholeRun{}
		for _, id := range rep.Archived {
			got[id] = storetest.NilEmpty(wholeRun(t, dst, id))
		}
		dst.Close()
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Fatalf("keeping %d bytes decoded, the runs imported differ", keep)
		}
	}
}

// A store lost after its last backup is rebuilt from the backup and the
// archive directory: runs pruned before the backup stay pruned (the
// backup keeps their headers and keys), runs that ended and were pruned
// after it come back whole from their archives, and the archive of
// another store's run under an id this store holds is left.
func TestRebuildFromABackupAndArchives(t *testing.T) {
	bin := buildFlrh(t)
	ctx := context.Background()
	spec := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
	dir := filepath.Join(t.TempDir(), "archive")
	must := func(args ...string) string {
		t.Helper()
		out, err := flrh(bin, nil, append(args, "--store", spec)...)
		if err != nil {
			t.Fatalf("flrh %v: %v\n%s", args, err, out)
		}
		return out
	}
	recordRuns(t, spec, false, 800, 30) // agent-0 waits for an approval; agent-1 is paid
	must("store", "prune", "--ended-before", "0s", "--archive", dir)
	backup := filepath.Join(t.TempDir(), "flrh-backup.db")
	must("store", "backup", "--to", backup)
	st, err := openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	late := refundruns.Record(t, st, "late-", false, 30, 40)
	st.Close()
	// A copy whose runs are pruned with their records discarded, not
	// archived.
	discarded := filepath.Join(t.TempDir(), "discarded.db")
	must("store", "backup", "--to", discarded)
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--discard", "--store", "sqlite:"+discarded); err != nil {
		t.Fatalf("prune the copy, discarding: %v\n%s", err, out)
	}
	must("store", "prune", "--ended-before", "0s", "--archive", dir)
	// Another store's archive of its own agent-0 lands in the directory,
	// as if two stores' directories had been mixed up.
	other := filepath.Join(t.TempDir(), "other.db")
	recordRuns(t, "sqlite:"+other, false, 30, 30)
	otherDir := filepath.Join(t.TempDir(), "other-archive")
	if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", otherDir, "--store", "sqlite:"+other); err != nil {
		t.Fatalf("prune the other store: %v\n%s", err, out)
	}
	foreign, err := os.ReadFile(filepath.Join(otherDir, archiveFileName("agent-0", false)))
	if err != nil {
		t.Fatal(err)
	}

	// The store is lost; the backup is restored.
	must("store", "restore", "--from", backup)
	if out, err := flrh(bin, nil, "run", "show", late[0], "--store", spec); err == nil {
		t.Fatalf("run %s outlived the restore:\n%s", late[0], out)
	}
	if err := os.WriteFile(filepath.Join(dir, "foreign"+archiveSuffix), foreign, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := flrh(bin, nil, "store", "import", "--archive", dir, "--store", spec, "--json")
	var rep importReport
	if exitStatus(t, err) != 1 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("import the archives: %v\n%s", err, out)
	}
	if strings.Join(rep.Archived, ",") != strings.Join(late, ",") || strings.Join(rep.PrunedHere, ",") != "agent-1" ||
		len(rep.Left) != 1 || rep.Left[0].RunID != "agent-0" || !strings.Contains(rep.Left[0].Reason, "another run of this id") {
		t.Fatalf("import the archives after the restore:\n%s", out)
	}
	// The copy that discarded the late runs' records takes none of them
	// from their archives: it did not prune them into these.
	out, err = flrh(bin, nil, "store", "import", "--archive", dir, "--store", "sqlite:"+discarded, "--json")
	rep = importReport{}
	if exitStatus(t, err) != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Archived) != 0 {
		t.Fatalf("import into the copy that discarded them: %v\n%s", err, out)
	}
	for _, id := range late {
		found := false
		for _, l := range rep.Left {
			found = found || l.RunID == id && strings.Contains(l.Reason, "names another archive or none")
		}
		if !found {
			t.Fatalf("run %s is not left for its discarded record:\n%s", id, out)
		}
	}
	// The runs pruned after the backup are whole again, and agent-1 stays
	// pruned; the waiting run is as the backup had it.
	got := must("verify", "--all")
	for _, want := range []string{"run " + late[0] + ": verified", "run " + late[1] + ": verified", "run agent-1: pruned", "run agent-0: verified"} {
		if !strings.Contains(got, want) {
			t.Fatalf("verify --all after the rebuild lacks %q:\n%s", want, got)
		}
	}
}
