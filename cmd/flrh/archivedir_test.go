package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/refundruns"
)

// flrh verify --archive-dir audits a directory of archives against the
// store's prunings: every archive a pruning names is there (plain or
// compressed) and verifies; a missing one, or another run's archive under
// its name, fails the audit; a file no pruning names is listed and is no
// failure; a discarded record is counted, not looked for.
func TestVerifyArchiveDir(t *testing.T) {
	bin := buildFlrh(t)
	spec := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
	recordRuns(t, spec, false, 20, 30, 40, 50)
	dir := t.TempDir()
	cli := storeCLI(t, bin, spec)
	for _, args := range [][]string{
		{"store", "prune", "--ended-before", "0s", "--archive", dir, "--limit", "2"},
		{"store", "prune", "--ended-before", "0s", "--archive", dir, "--limit", "1", "--compress"},
		{"store", "prune", "--ended-before", "0s", "--discard"},
	} {
		if out, code := cli(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
	}
	if out, code := cli("verify", "--archive-dir", dir, "--all"); code != exitUsage || !strings.Contains(out, "--archive-dir audits a directory alone") {
		t.Fatalf("--archive-dir with --all: exit %d\n%s", code, out)
	}
	out, code := cli("verify", "--archive-dir", dir)
	if code != 0 || strings.Count(out, ": verified") != 3 || !strings.Contains(out, "3 archives checked, 0 missing, 0 unclaimed files; 1 pruned runs were discarded") {
		t.Fatalf("the audit of a whole directory: exit %d\n%s", code, out)
	}

	plain := func(id string) string { return filepath.Join(dir, id+archiveSuffix) }
	b, err := os.ReadFile(plain("agent-0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elsewhere"+archiveSuffix), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = cli("verify", "--archive-dir", dir)
	if code != 0 || !strings.Contains(out, "unclaimed "+filepath.Join(dir, "elsewhere"+archiveSuffix)) {
		t.Fatalf("the audit with a file no pruning names: exit %d\n%s", code, out)
	}

	// Another run's archive under a run's name fails the audit.
	if err := os.WriteFile(plain("agent-1"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = cli("verify", "--archive-dir", dir)
	if code != 1 || !strings.Contains(out, "holds run agent-0, not agent-1") {
		t.Fatalf("the audit with another run's archive under a run's name: exit %d\n%s", code, out)
	}
	// A missing archive fails it, naming the run and the digest.
	if err := os.Remove(plain("agent-1")); err != nil {
		t.Fatal(err)
	}
	out, code = cli("verify", "--archive-dir", dir, "--json")
	if code != 1 || !strings.Contains(out, `"run_id": "agent-1"`) || !strings.Contains(out, "its pruning names archive sha256:") {
		t.Fatalf("the audit with an archive missing: exit %d\n%s", code, out)
	}
}

// storeCLI returns a function that runs the flrh binary bin with args and
// --store spec, and returns its output and exit status.
func storeCLI(t *testing.T, bin, spec string) func(args ...string) (string, int) {
	return func(args ...string) (string, int) {
		t.Helper()
		out, err := flrh(bin, nil, append(args, "--store", spec)...)
		return out, exitStatus(t, err)
	}
}

// BenchmarkVerifyArchiveDir measures the audit per archive: 100 refund
// runs (FLRH_BENCH_PRUNE_RUNS) pruned into a directory, plain or
// compressed, then audited whole: each pruning read, each file read,
// decompressed, decoded, verified and bound to the store.
func BenchmarkVerifyArchiveDir(b *testing.B) {
	amounts := benchPruneAmounts(b)
	n := len(amounts)
	for _, compress := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "compressed"}[compress], func(b *testing.B) {
			ctx := context.Background()
			st, err := openStore(ctx, "sqlite:"+filepath.Join(b.TempDir(), "flrh.db"), false)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			refundruns.Record(b, st, "", false, amounts...)
			dir := b.TempDir()
			if rep, err := pruneRuns(ctx, st, pruneOptions{Before: time.Now().Add(time.Hour), Dir: dir, Parallel: 1, Compress: compress}); err != nil || len(rep.Pruned) != n {
				b.Fatalf("prune: %d of %d, %v", len(rep.Pruned), n, err)
			}
			b.ResetTimer()
			for b.Loop() {
				rep, err := auditArchiveDir(ctx, st, dir)
				if err != nil || !rep.OK() || len(rep.Reports) != n {
					b.Fatalf("audit: %d reports, ok %v, %v", len(rep.Reports), rep.OK(), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*n), "ms/archive")
			b.ReportMetric(0, "ns/op")
		})
	}
}
