package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

func TestPruneSQLite(t *testing.T) {
	testPruneCommand(t, "sqlite:"+filepath.Join(t.TempDir(), "flrh.db"))
}

func TestPrunePostgres(t *testing.T) {
	_, spec, _ := postgresSpec(t, "flrh_prune_", "run the PostgreSQL prune test")
	testPruneCommand(t, spec)
}

// testPruneCommand drives flrh store prune through the binary against a
// store holding runs a real runner wrote: what qualifies, a dry run, a
// discarded record, an archive file in the way, a record that fails
// verification, a process killed with SIGKILL between the archive and the
// removal (and at the archive's temporary file), and the archives checked
// on their own and against the store, tampered with or not.
func testPruneCommand(t *testing.T, spec string) {
	bin := buildFlrh(t)
	ctx := context.Background()
	st, err := openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := refundruns.Record(t, st, "", true, 800, 30)
	ended := map[string]bool{}
	for _, id := range ids {
		r, err := st.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		ended[id] = r.Outcome != ""
	}
	st.Close()
	if !ended["small"] || !ended["large"] || ended["agent-0"] || !ended["agent-1"] {
		t.Fatalf("runs ended: %v; want all but agent-0", ended)
	}
	dir := filepath.Join(t.TempDir(), "archive")
	cli := func(env []string, args ...string) (string, int) {
		t.Helper()
		out, err := flrh(bin, env, append(args, "--store", spec)...)
		var ee *exec.ExitError
		switch {
		case err == nil:
			return out, 0
		case errors.As(err, &ee):
			return out, ee.ExitCode()
		}
		t.Fatalf("flrh %v: %v", args, err)
		return "", 0
	}
	prune := func(args ...string) (pruneReport, string, int) {
		t.Helper()
		out, code := cli(nil, append([]string{"store", "prune", "--json"}, args...)...)
		var rep pruneReport
		if code <= 1 {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("prune %v: exit %d, output %q: %v", args, code, out, err)
			}
		}
		return rep, out, code
	}
	verifyAll := func() map[string]string {
		t.Helper()
		out, code := cli(nil, "verify", "--all")
		if code != 0 {
			t.Fatalf("verify --all: exit %d\n%s", code, out)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			id, rest, _ := strings.Cut(strings.TrimPrefix(line, "run "), ": ")
			got[id], _, _ = strings.Cut(rest, " ")
		}
		return got
	}
	names := func(rs []prunedRun) (s []string) {
		for _, r := range rs {
			s = append(s, r.RunID)
		}
		return s
	}

	// Bad flags change nothing and say why.
	for _, args := range [][]string{
		{"store", "prune", "--archive", dir},
		{"store", "prune", "--ended-before", "0s"},
		{"store", "prune", "--ended-before", "0s", "--archive", dir, "--discard"},
		{"store", "prune", "--ended-before", "tomorrow", "--archive", dir},
		{"store", "prune", "--ended-before", "-1h", "--archive", dir},
		{"store", "prune", "--ended-before", "0s", "--archive", dir, "--limit", "-1"},
	} {
		if out, code := cli(nil, args...); code != exitUsage {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, exitUsage, out)
		}
	}
	// Runs that ended a moment ago are not older than an hour.
	if rep, out, code := prune("--ended-before", "1h", "--archive", dir); code != 0 || len(rep.Pruned)+len(rep.Skipped) != 0 {
		t.Fatalf("an hour: exit %d\n%s", code, out)
	}
	// A dry run names the ended runs and writes nothing.
	if rep, out, code := prune("--ended-before", "0s", "--archive", dir, "--dry-run"); code != 0 || strings.Join(names(rep.Pruned), ",") != "small,large,agent-1" ||
		rep.Pruned[0].Archive == "" || !rep.DryRun || rep.Log != nil {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("a dry run wrote %d files", len(files))
	}
	if got := verifyAll(); got["small"] != "verified" || got["large"] != "verified" {
		t.Fatalf("after a dry run: %v", got)
	}

	// A record that fails verification is never pruned: small's attempt
	// generations are changed behind the store's back, and then put back.
	// large is discarded meanwhile, and the limit stops prune there.
	corrupt := `UPDATE attempts SET generation = generation + 100 WHERE intent_id IN (SELECT intent_id FROM intents WHERE run_id = 'small')`
	rawExec(t, spec, corrupt)
	if rep, out, code := prune("--ended-before", "0s", "--discard", "--limit", "1"); code != 1 || strings.Join(names(rep.Pruned), ",") != "large" ||
		rep.Pruned[0].Archive != "" || rep.Pruned[0].Kept.Events == 0 || len(rep.Skipped) != 1 || rep.Skipped[0].RunID != "small" ||
		!strings.Contains(rep.Skipped[0].Reason, "fails verification") {
		t.Fatalf("discard with small corrupt: exit %d\n%s", code, out)
	}
	rawExec(t, spec, strings.Replace(corrupt, "+ 100", "- 100", 1))
	if got := verifyAll(); got["small"] != "verified" || got["large"] != "pruned" || got["agent-1"] != "verified" {
		t.Fatalf("after discarding large: %v", got)
	}

	// An archive file in the way, with other content: the run is left,
	// the next one archived.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	small, agent := filepath.Join(dir, "small"+archiveSuffix), filepath.Join(dir, "agent-1"+archiveSuffix)
	if err := os.WriteFile(small, []byte("another archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, out, code := prune("--ended-before", "0s", "--archive", dir); code != 1 || strings.Join(names(rep.Pruned), ",") != "agent-1" ||
		rep.Pruned[0].File != agent || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "exists with other content") {
		t.Fatalf("a file in the way: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(small); string(b) != "another archive" {
		t.Fatalf("prune overwrote a file: %q", b)
	}
	os.Remove(small)

	// Killed with the archive in its temporary file, and again with it
	// durable but the record not yet removed: the run is left as it was,
	// and the next prune finishes the work with the same archive.
	for _, point := range []string{"prune-archive-temp", "prune-archive-written"} {
		out, code := cli([]string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + point}, "store", "prune", "--ended-before", "0s", "--archive", dir)
		if code != -1 || !strings.Contains(out, "SIGKILL at "+point) {
			t.Fatalf("prune killed at %s: exit %d\n%s", point, code, out)
		}
		if got := verifyAll(); got["small"] != "verified" {
			t.Fatalf("after a kill at %s: %v", point, got)
		}
	}
	written, err := os.ReadFile(small)
	if err != nil {
		t.Fatalf("the archive made before the kill: %v", err)
	}
	rep, out, code := prune("--ended-before", "0s", "--archive", dir)
	if code != 0 || strings.Join(names(rep.Pruned), ",") != "small" || rep.Pruned[0].File != small {
		t.Fatalf("prune after the kills: exit %d\n%s", code, out)
	}
	// The embedded store's log is emptied after pruning (the pruned
	// records gone from its files); PostgreSQL keeps none to empty.
	if sqliteStore := strings.HasPrefix(spec, "sqlite:"); (rep.Log != nil) != sqliteStore || (sqliteStore && !rep.Log.Emptied) {
		t.Fatalf("prune after the kills, the log: %+v\n%s", rep.Log, out)
	}
	if again, _ := os.ReadFile(small); !bytes.Equal(again, written) || store.BodyDigest(again) != rep.Pruned[0].Archive {
		t.Fatal("the archive changed, or its digest is not the one recorded")
	}
	if got := verifyAll(); got["small"] != "pruned" || got["large"] != "pruned" || got["agent-1"] != "pruned" || got["agent-0"] != "verified" {
		t.Fatalf("after pruning: %v", got)
	}
	if rep, out, code := prune("--ended-before", "0s", "--archive", dir); code != 0 || len(rep.Pruned)+len(rep.Skipped) != 0 {
		t.Fatalf("a second prune: exit %d\n%s", code, out)
	}
	// store check counts them.
	if out, code := cli(nil, "store", "check", "--json"); code != 0 || !strings.Contains(out, `"pruned":3`) || !strings.Contains(out, `"ended":3`) {
		t.Fatalf("store check after pruning: exit %d\n%s", code, out)
	}
	// What reads a pruned run's record says where it went; show shows
	// its header and that.
	if out, code := cli(nil, "run", "show", "small", "--json"); code != 0 || !strings.Contains(out, `"archive": "`+rep.Pruned[0].Archive+`"`) {
		t.Fatalf("run show of a pruned run: exit %d\n%s", code, out)
	}
	for _, verb := range []string{"events", "trace", "export"} {
		if out, code := cli(nil, "run", verb, "large"); code != 1 || !strings.Contains(out, "run large was pruned") || !strings.Contains(out, "record discarded") {
			t.Fatalf("run %s of a discarded run: exit %d\n%s", verb, code, out)
		}
	}
	if out, code := cli(nil, "run", "events", "small"); code != 1 || !strings.Contains(out, "its record is in the archive whose digest is "+rep.Pruned[0].Archive) ||
		!strings.Contains(out, "flrh store import --archive FILE") {
		t.Fatalf("run events of an archived run: exit %d\n%s", code, out)
	}

	// The archives verify on their own and against the store.
	for _, args := range [][]string{{"verify", "--archive", small, "--archive", agent}, {"verify", "--archive", small, "--archive", agent, "--store", spec}} {
		out, err := flrh(bin, nil, args...)
		if err != nil || !strings.Contains(out, "run small: verified") || !strings.Contains(out, "run agent-1: verified") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	// A bundle run's archive replays as the stored run did; the store's
	// replay reports the run pruned.
	if out, err := flrh(bin, nil, "replay", "--archive", agent); err != nil || !strings.Contains(out, "run agent-1: identical") {
		t.Fatalf("replay --archive: %v\n%s", err, out)
	}
	if out, code := cli(nil, "replay", "agent-1", "agent-0"); code != 0 || !strings.Contains(out, "run agent-1: pruned") || !strings.Contains(out, "run agent-0: identical") {
		t.Fatalf("replay after pruning: exit %d\n%s", code, out)
	}
	if out, code := cli(nil, "replay", "--all", "--archive", agent); code != exitUsage {
		t.Fatalf("replay with both runs and archives: exit %d\n%s", code, out)
	}
	// A byte changed in an event: the archive fails on its own, and its
	// digest is no longer the one the store's pruning names.
	tampered := filepath.Join(t.TempDir(), "small"+archiveSuffix)
	i := bytes.Index(written, []byte(`"amount":5`))
	if i < 0 {
		t.Fatalf("no amount in the archive:\n%s", written)
	}
	changed := bytes.Clone(written)
	changed[i+len(`"amount":`)] = '6'
	if err := os.WriteFile(tampered, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = flrh(bin, nil, "verify", "--archive", tampered)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "FAILED") || strings.Contains(out, "archive-binding") {
		t.Fatalf("a tampered archive alone: %v\n%s", err, out)
	}
	out, code = cli(nil, "verify", "--archive", tampered, "--json")
	if code != 1 || !strings.Contains(out, "archive-binding") || !strings.Contains(out, "names archive "+rep.Pruned[0].Archive) {
		t.Fatalf("a tampered archive against the store: exit %d\n%s", code, out)
	}
}

// rawExec runs query on the store spec names, behind the store's back.
func rawExec(t *testing.T, spec, query string) {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	switch s := st.(type) {
	case *sqlite.Store:
		_, err = s.DB().ExecContext(ctx, query)
	case *postgres.Store:
		_, err = s.Pool().Exec(ctx, query)
	default:
		t.Fatalf("store %T", st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A run that ended with an effect still open is kept, reported as held,
// and is no failure of prune's: nothing of it is removed or archived.
func TestPruneKeepsARunWithAnEffectOpen(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "open", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "open", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, l, store.Tick{State: "EFFECT_OUTCOME_UNKNOWN", Outcome: "effect_outcome_unknown", Events: []store.Event{storetest.Ev("END", `{}`)},
		Intents: []store.Intent{storetest.In("i1", "k1", "pay 5")}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep, err := pruneRuns(ctx, st, pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir})
	if err != nil || len(rep.Pruned)+len(rep.Skipped) != 0 || len(rep.Held) != 1 || rep.Held[0].RunID != "open" ||
		!strings.Contains(rep.Held[0].Reason, "effect i1 is pending") {
		t.Fatalf("prune of a run with an effect open: %+v, %v", rep, err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("an archive was written for a run kept: %d files", len(files))
	}
	if evs, err := st.Events(ctx, "open", 0); err != nil || len(evs) != 1 {
		t.Fatalf("the run kept lost its events: %d, %v", len(evs), err)
	}
}

// Pruned several at a time, runs are reported in the order they were
// created, a limit is kept exactly, and what is left is pruned by the
// next prune: every ended run once.
func TestPruneInParallel(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := refundruns.Record(t, st, "", false, 10, 20, 30, 40, 50, 60, 70)
	dir := t.TempDir()
	opts := pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir, Parallel: 3, Limit: 5}
	first, err := pruneRuns(ctx, st, opts)
	if err != nil || len(first.Pruned) != 5 || len(first.Skipped)+len(first.Held) != 0 {
		t.Fatalf("first prune: %+v, %v", first, err)
	}
	opts.Limit = 0
	second, err := pruneRuns(ctx, st, opts)
	if err != nil || len(second.Pruned) != len(ids)-5 {
		t.Fatalf("second prune: %+v, %v", second, err)
	}
	var got []string
	for _, p := range append(first.Pruned, second.Pruned...) {
		got = append(got, p.RunID)
		if _, err := os.Stat(p.File); err != nil {
			t.Fatalf("archive of %s: %v", p.RunID, err)
		}
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("pruned in the order %v, created %v", got, ids)
	}
}

// Runs pruned from a store encrypted at rest are archived encrypted: no
// byte of the record in clear, read back and verified with the store's
// key (and refused, saying so, without it), bound to the store's pruning
// by the digest of the document in clear; a prune killed once its sealed
// archive is written finds the same archive when run again.
func TestPruneASealedStore(t *testing.T) {
	bin := buildFlrh(t)
	t.Setenv(encryptionKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)))
	noKey := []string{encryptionKeyEnv + "="}
	spec := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
	ids := recordRuns(t, spec, true, 800, 30)
	dir := filepath.Join(t.TempDir(), "archive")

	out, err := flrh(bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=prune-archive-written"}, "store", "prune", "--ended-before", "0s", "--archive", dir, "--store", spec)
	if exitStatus(t, err) != -1 || !strings.Contains(out, "SIGKILL at prune-archive-written") {
		t.Fatalf("prune killed: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", dir, "--store", spec, "--json")
	var rep pruneReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Pruned) != 3 || len(rep.Skipped) != 0 {
		t.Fatalf("prune after the kill: %v\n%s", err, out)
	}
	var files []string
	for _, p := range rep.Pruned {
		b, err := os.ReadFile(p.File)
		if err != nil {
			t.Fatal(err)
		}
		if !store.IsSealed(b) || bytes.Contains(b, []byte(p.RunID)) || bytes.Contains(b, []byte("refund")) {
			t.Fatalf("%s is not sealed whole", p.File)
		}
		files = append(files, p.File)
	}
	if len(ids) != 4 {
		t.Fatalf("runs %v", ids)
	}

	args := append([]string{"verify", "--store", spec}, prefixed("--archive", files)...)
	if out, err := flrh(bin, noKey, args...); exitStatus(t, err) != exitUsage || !strings.Contains(out, "is encrypted") {
		t.Fatalf("verify --archive without the key: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, args...)
	if err != nil || strings.Count(out, "verified") != 3 {
		t.Fatalf("verify --archive with the key, against the store: %v\n%s", err, out)
	}
	// The refund-agent run replays from its archive (the demo's runs were
	// written by a workflow set up as no command line sets it up).
	agent := filepath.Join(dir, "agent-1"+archiveSuffix)
	if out, err := flrh(bin, nil, "replay", "--archive", agent); err != nil || !strings.Contains(out, "run agent-1: identical") {
		t.Fatalf("replay --archive with the key: %v\n%s", err, out)
	}
	// Sealed under another key, or changed by a byte, an archive fails to open.
	other := []string{encryptionKeyEnv + "=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32))}
	if out, err := flrh(bin, other, "verify", "--archive", files[0]); err == nil || !strings.Contains(out, "does not open: sealed record archive: sealed under a key this keyring does not hold") {
		t.Fatalf("verify --archive with another key: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(files[0])
	b[len(b)-1] ^= 1
	changed := filepath.Join(t.TempDir(), "changed"+archiveSuffix)
	if err := os.WriteFile(changed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := flrh(bin, nil, "verify", "--archive", changed); err == nil || !strings.Contains(out, "fails authentication") {
		t.Fatalf("verify --archive of a changed sealed archive: %v\n%s", err, out)
	}

	// Another store encrypted at rest takes the sealed archives' runs in
	// whole with the key, and nothing without it.
	into := "sqlite:" + filepath.Join(t.TempDir(), "into.db")
	if out, err := flrh(bin, noKey, "store", "import", "--archive", dir, "--store", "sqlite:"+filepath.Join(t.TempDir(), "nokey.db")); exitStatus(t, err) != exitUsage || !strings.Contains(out, "is encrypted") {
		t.Fatalf("import --archive without the key: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "store", "import", "--archive", dir, "--store", into); err != nil || !strings.Contains(out, "imported 3 runs whole from archives; 0 imported before; 0 pruned here into their archives; left 0") {
		t.Fatalf("import --archive with the key: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "verify", "--all", "--store", into); err != nil || strings.Count(out, ": verified") != 3 {
		t.Fatalf("verify --all in the store the sealed archives were imported into: %v\n%s", err, out)
	}
	if out, err := flrh(bin, noKey, "run", "trace", "agent-1", "--store", into); err == nil || !strings.Contains(out, "encrypted, and no encryption key was given") {
		t.Fatalf("a run's trace imported into a store encrypted at rest reads without the key:\n%s", out)
	}
}

// Two prunes over the same runs at once (two operators, or a person and a
// server's schedule) never report a run the other removed as left or
// failed: a run pruned while one prune had it in hand, after its record
// was read or once its archive was written, is reported pruned
// elsewhere, with how the other kept it. Every run is pruned by exactly
// one of them. The race is forced: the first prune, its first archive
// written, waits while the second prunes every run.
func TestPrunesRacing(t *testing.T) {
	for _, secondDiscards := range []bool{false, true} {
		t.Run(map[bool]string{false: "both archive", true: "the second discards"}[secondDiscards], func(t *testing.T) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ids := refundruns.Record(t, st, "", false, 10, 20, 30, 40, 50)
			secondOpts := pruneOptions{Before: time.Now().Add(time.Hour), Dir: t.TempDir(), Parallel: 2}
			if secondDiscards {
				secondOpts.Dir = ""
			}
			var second pruneReport
			var secondErr error
			raced := false
			first, err := pruneRuns(ctx, st, pruneOptions{Before: time.Now().Add(time.Hour), Dir: t.TempDir(), Parallel: 1,
				Cut: func(point string) {
					if point == "prune-archive-written" && !raced {
						raced = true
						second, secondErr = pruneRuns(ctx, st, secondOpts)
					}
				}})
			if err != nil || secondErr != nil || !raced {
				t.Fatalf("prunes: %v, %v (raced %v)", err, secondErr, raced)
			}
			if len(first.Skipped)+len(second.Skipped)+len(first.Held)+len(second.Held) != 0 || len(second.Elsewhere) != 0 {
				t.Fatalf("a race was reported as a run left or held:\nfirst %+v\nsecond %+v", first, second)
			}
			var pruned, elsewhere []string
			for _, p := range second.Pruned {
				pruned = append(pruned, p.RunID)
			}
			for _, e := range first.Elsewhere {
				elsewhere = append(elsewhere, e.RunID)
				want := "archived as sha256:"
				if secondDiscards {
					want = "discarding it"
				}
				if !strings.Contains(e.Reason, want) {
					t.Errorf("first prune on %s: %q, want it to say %q", e.RunID, e.Reason, want)
				}
			}
			all := strings.Join(ids, ",")
			if len(first.Pruned) != 0 || strings.Join(pruned, ",") != all || strings.Join(elsewhere, ",") != all {
				t.Fatalf("first pruned %d, found %v pruned elsewhere; second pruned %v; runs %v", len(first.Pruned), elsewhere, pruned, ids)
			}
			for _, id := range ids {
				if p, err := st.Pruning(ctx, id); err != nil || (p.Archive == "") != secondDiscards {
					t.Fatalf("pruning of %s: %+v, %v", id, p, err)
				}
			}
			var out bytes.Buffer
			first.print(&out)
			if !strings.Contains(out.String(), "; 5 pruned by another prune meanwhile") {
				t.Errorf("the first prune's report does not count the runs pruned elsewhere:\n%s", out.String())
			}
		})
	}
}

func TestPruneAbandonedSQLite(t *testing.T) {
	a, b := twoSQLiteSpecs(t)
	testPruneAbandoned(t, a, b)
}

func TestPruneAbandonedPostgres(t *testing.T) {
	spec, to := twoPostgresSpecs(t, "flrh_abandoned_", "prune abandoned runs on PostgreSQL")
	testPruneAbandoned(t, spec, to)
}

// A run that ended with an effect a person abandoned (its outcome never
// learned) is held by prune, and taken by prune --abandoned: the archive
// holds the effect open as it was and verifies and replays, the store
// records the pruning with the effect counted open, the effect's key
// stays taken, store check no longer lists the entry, run show says what
// was pruned open, and the pruning moves to another store with the count.
func testPruneAbandoned(t *testing.T, spec, to string) {
	bin := buildFlrh(t)
	ctx := context.Background()
	st, err := openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := refundruns.Record(t, st, "", false, 20)
	ab := refundruns.Abandoned(t, st, "")
	intents, err := st.Intents(ctx, ab)
	if err != nil || len(intents) != 1 || intents[0].Outbox == store.OutboxDone {
		t.Fatalf("the abandoned run's intents: %+v, %v", intents, err)
	}
	key := intents[0]
	st.Close()
	dir := t.TempDir()
	cli := storeCLI(t, bin, spec)
	check := func() storeReport {
		t.Helper()
		out, code := cli("store", "check", "--json")
		var rep storeReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("store check: exit %d\n%s", code, out)
		}
		return rep
	}
	if rep := check(); len(rep.OpenOutbox) != 1 || !rep.OpenOutbox[0].RunEnded || rep.OpenOutbox[0].RunID != ab {
		t.Fatalf("store check before pruning lists %+v", rep.OpenOutbox)
	}

	out, code := cli("store", "prune", "--ended-before", "0s", "--archive", dir, "--json")
	var rep pruneReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Pruned) != len(ids) || len(rep.Held) != 1 || rep.Held[0].RunID != ab ||
		!strings.Contains(rep.Held[0].Reason, "prune --abandoned takes it open") {
		t.Fatalf("prune without --abandoned: exit %d\n%s", code, out)
	}
	out, code = cli("store", "prune", "--ended-before", "0s", "--archive", dir, "--abandoned")
	if code != 0 || !strings.Contains(out, "pruned "+ab+" (") || !strings.Contains(out, "1 effects abandoned open") {
		t.Fatalf("prune --abandoned: exit %d\n%s", code, out)
	}
	file := filepath.Join(dir, ab+archiveSuffix)
	if out, code := cli("verify", "--archive", file); code != 0 || !strings.Contains(out, "verified") {
		t.Fatalf("verify --archive of the abandoned run: exit %d\n%s", code, out)
	}
	if out, code := cli("replay", "--archive", file); code != 0 {
		t.Fatalf("replay --archive of the abandoned run: exit %d\n%s", code, out)
	}
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(`"outbox":"`+string(intents[0].Outbox)+`"`)) {
		t.Fatalf("the archive does not hold the effect open (%s)", intents[0].Outbox)
	}
	if rep := check(); len(rep.OpenOutbox) != 0 || rep.Problems != 0 || rep.Pruned != len(ids)+1 {
		t.Fatalf("store check after pruning: %+v", rep)
	}
	if out, code := cli("run", "show", ab); code != 0 || !strings.Contains(out, "1 of its effects were pruned with their outcome unknown") {
		t.Fatalf("run show of the abandoned run: exit %d\n%s", code, out)
	}

	st, err = openStore(ctx, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := store.PrunerOf(st)
	if p, err := pr.Pruning(ctx, ab); err != nil || p.Open != 1 || p.Kept.Intents != 1 {
		t.Fatalf("the pruning of the abandoned run: %+v, %v", p, err)
	}
	// The key stays taken: no other run commits the effect again.
	if err := st.CreateRun(ctx, store.Run{ID: "again", WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(ctx, "again", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	again := storetest.In("again-i", key.IdempotencyKey, "another payment")
	if err := st.Commit(ctx, l, store.Tick{Intents: []store.Intent{again}}); store.CodeOf(err) != store.CodeIdempotencyConflict {
		t.Fatalf("an intent under the abandoned effect's key: %v, want IDEMPOTENCY_CONFLICT", err)
	}
	st.Close()

	// The pruning moves to another store with its open count.
	if out, err := flrh(bin, nil, "store", "migrate", "--store", to); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "store", "import", "--from", spec, "--store", to); exitStatus(t, err) != 1 || !strings.Contains(out, "imported 2 pruned runs (2 idempotency keys)") {
		t.Fatalf("import (the run again, not pruned, is left): %v\n%s", err, out)
	}
	dst, err := openStore(ctx, to, true)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	dpr, _ := store.PrunerOf(dst)
	if p, err := dpr.Pruning(ctx, ab); err != nil || p.Open != 1 {
		t.Fatalf("the imported pruning of the abandoned run: %+v, %v", p, err)
	}
}

// prune --compress writes each archive gzip-compressed, plain or sealed:
// the files are a fraction of the documents, verify and replay --archive
// read them as they read the others, a prune killed once a compressed
// archive is written finds the same archive when run again, and a damaged
// compressed file is refused saying so.
func TestPruneCompressed(t *testing.T) {
	bin := buildFlrh(t)
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "sealed"}[sealed], func(t *testing.T) {
			if sealed {
				t.Setenv(encryptionKeyEnv, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32)))
			} else {
				t.Setenv(encryptionKeyEnv, "")
			}
			spec := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
			recordRuns(t, spec, false, 20, 30, 40)
			dir := filepath.Join(t.TempDir(), "archive")
			if out, err := flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--discard", "--compress", "--store", spec); exitStatus(t, err) != exitUsage || !strings.Contains(out, "--discard writes none") {
				t.Fatalf("--compress with --discard: %v\n%s", err, out)
			}
			out, err := flrh(bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=prune-archive-written"}, "store", "prune", "--ended-before", "0s", "--archive", dir, "--compress", "--store", spec)
			if exitStatus(t, err) != -1 || !strings.Contains(out, "SIGKILL at prune-archive-written") {
				t.Fatalf("prune killed: %v\n%s", err, out)
			}
			out, err = flrh(bin, nil, "store", "prune", "--ended-before", "0s", "--archive", dir, "--compress", "--store", spec, "--json")
			var rep pruneReport
			if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Pruned) != 3 || len(rep.Skipped) != 0 {
				t.Fatalf("prune after the kill: %v\n%s", err, out)
			}
			var files []string
			docBytes, fileBytes := 0, 0
			for _, p := range rep.Pruned {
				b, err := os.ReadFile(p.File)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(p.File, archiveSuffix+".gz") || len(b) != p.FileBytes || p.FileBytes*3 > p.Bytes ||
					store.IsSealed(b) != sealed || archive.IsCompressed(b) == sealed {
					t.Fatalf("%s: %d bytes in the file for a document of %d (sealed %v)", p.File, len(b), p.Bytes, sealed)
				}
				docBytes += p.Bytes
				fileBytes += p.FileBytes
				files = append(files, p.File)
			}
			t.Logf("3 archives: %d bytes of documents in %d bytes of files (%.1f×)", docBytes, fileBytes, float64(docBytes)/float64(fileBytes))
			out, err = flrh(bin, nil, append([]string{"verify", "--store", spec}, prefixed("--archive", files)...)...)
			if err != nil || strings.Count(out, "verified") != 3 {
				t.Fatalf("verify --archive of compressed archives against the store: %v\n%s", err, out)
			}
			if out, err := flrh(bin, nil, "replay", "--archive", files[0]); err != nil || !strings.Contains(out, "identical") {
				t.Fatalf("replay --archive of a compressed archive: %v\n%s", err, out)
			}
			if sealed {
				return
			}
			b, _ := os.ReadFile(files[0])
			for name, bad := range map[string][]byte{"truncated": b[:len(b)/2], "appended to": append(bytes.Clone(b), b...)} {
				f := filepath.Join(t.TempDir(), "bad"+archiveSuffix+".gz")
				if err := os.WriteFile(f, bad, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := flrh(bin, nil, "verify", "--archive", f); err == nil || !strings.Contains(out, f+": archive: compressed file:") {
					t.Fatalf("verify --archive of a %s compressed archive: %v\n%s", name, err, out)
				}
			}
		})
	}
}

// recordRuns writes refund runs to the store spec names through a real
// runner (refundruns.Record: with demo, the demo's two runs first), then
// closes it, and returns the runs' ids.
func recordRuns(t *testing.T, spec string, demo bool, amounts ...int) []string {
	t.Helper()
	st, err := openStore(context.Background(), spec, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return refundruns.Record(t, st, "", demo, amounts...)
}
