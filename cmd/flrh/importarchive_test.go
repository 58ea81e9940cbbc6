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
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func TestImportArchivesIntoSQLite(t *testing.T) {
	testImportArchives(t, "sqlite:"+filepath.Join(t.TempDir(), "to.db"), "sqlite:"+filepath.Join(t.TempDir(), "taken.db"))
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
	if code != 1 || len(rep.Archived)+len(rep.Already) != 0 || !leftAsWanted(rep, 3) {
		t.Fatalf("import into the store that pruned them: exit %d\n%s", code, out)
	}
	for _, l := range rep.Left[len(left):] {
		if !strings.Contains(l.Reason, "pruned it into this very archive") {
			t.Fatalf("a run left in the store that pruned it, for %q", l.Reason)
		}
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
	if exitStatus(t, err) != 1 || !strings.Contains(human, "imported 0 runs whole from archives; 3 imported before; left 2") ||
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
