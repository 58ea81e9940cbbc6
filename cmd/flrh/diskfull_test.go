package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/smallfs"
	"flrh.dev/flrh/store"
)

// The disk under the embedded store fills in the middle of a run of
// twelve refunds (a tmpfs of a few hundred kilobytes; three sizes, so
// that it fills at different points). The runner stops with an error
// that says the disk is full, never a panic; once there is room, resuming
// the run finishes it with exactly one mutation at the destination per
// refund, and its record verifies and replays.
func TestDiskFullMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	var refunds []map[string]any
	for i := range 12 {
		refunds = append(refunds, map[string]any{"id": fmt.Sprintf("d%d", i), "amount": 10 + i, "payee": "bob", "reason": "r"})
	}
	input, _ := json.Marshal(map[string]any{"refunds": refunds})
	for _, size := range []int64{512 << 10, 640 << 10, 896 << 10} {
		t.Run(fmt.Sprintf("%dKiB", size>>10), func(t *testing.T) {
			dir := smallfs.Mount(t, size, 0, 0)
			base := startSandbox(t, bin, filepath.Join(t.TempDir(), "sandbox.json"))
			storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
			dest := "--destination=" + base + "/v1/effects"

			out, err := flrh(bin, nil, "run", "start", "builtin:refund-agent", "--id", "r", "--input-json", string(input), storeFlag, dest, "--lease-ttl", crashLeaseTTL)
			if err == nil {
				t.Fatalf("the run fitted in %d KiB; the disk never filled:\n%s", size>>10, out)
			}
			if !strings.Contains(out, "disk full; nothing was written") || strings.Contains(out, "panic") {
				t.Fatalf("the runner did not say the disk is full:\n%s", out)
			}
			paid := len(mutations(t, base))
			t.Logf("the disk filled after %d of 12 refunds were paid", paid)

			smallfs.Resize(t, dir, 64<<20, 0, 0)
			out, err = flrh(bin, nil, "run", "resume", "r", storeFlag, dest, "--wait", resumeWait)
			if err != nil || !strings.Contains(out, "run r: SUCCEEDED") {
				t.Fatalf("resume after the full disk: %v\n%s", err, out)
			}
			muts := mutations(t, base)
			keys := map[any]bool{}
			for _, m := range muts {
				keys[m["idempotency_key"]] = true
			}
			if len(muts) != 12 || len(keys) != 12 {
				t.Fatalf("%d mutations with %d idempotency keys at the destination, want 12 and 12", len(muts), len(keys))
			}
			verifyAndReplay(t, bin, "r", storeFlag)
		})
	}
}

// The disk under the archive directory fills while prune writes archives
// (a tmpfs with room for about two and a half, plain or compressed, so
// that it fills in the middle of one): prune stops with an error saying
// the disk is full, the runs whose archives were written are pruned, the
// run whose archive did not fit is not (its record verifies whole), no
// temporary file is left behind, and once there is room prune goes on
// and every archive verifies against the store.
func TestPruneOnAFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	for _, compress := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "compressed"}[compress], func(t *testing.T) {
			ctx := context.Background()
			spec := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
			ids := recordRuns(t, spec, false, 20, 30, 40, 50, 60)
			room := int64(2*27<<10 + 12<<10) // two archives and a half
			if compress {
				room = 2*7<<10 + 3<<10
			}
			dir := smallfs.Mount(t, room, 0, 0)
			args := []string{"store", "prune", "--ended-before", "0s", "--archive", dir, "--parallel", "1", "--store", spec}
			if compress {
				args = append(args, "--compress")
			}
			out, err := flrh(bin, nil, args...)
			if exitStatus(t, err) <= 0 || !strings.Contains(out, "no space left on device") || strings.Contains(out, "panic") {
				t.Fatalf("prune on a full disk: %v\n%s", err, out)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var written []string
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".prune-") {
					t.Fatalf("a temporary file was left: %s", e.Name())
				}
				written = append(written, e.Name())
			}
			if len(written) == 0 || len(written) >= len(ids) {
				t.Fatalf("%d archives written of %d runs: the disk filled at no run", len(written), len(ids))
			}
			st, err := openStore(ctx, spec, true)
			if err != nil {
				t.Fatal(err)
			}
			pruned := 0
			for _, id := range ids {
				r, err := st.Run(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				p, err := store.PruningOf(ctx, st, r)
				if err != nil {
					t.Fatal(err)
				}
				if p != nil {
					pruned++
					continue
				}
				if evs, err := st.Events(ctx, id, 0); err != nil || len(evs) == 0 {
					t.Fatalf("run %s, not pruned, lost its events: %d, %v", id, len(evs), err)
				}
			}
			st.Close()
			if pruned != len(written) {
				t.Fatalf("%d runs pruned, %d archives written", pruned, len(written))
			}
			if out, err := flrh(bin, nil, "verify", "--all", "--store", spec); err != nil || strings.Count(out, ": verified") != len(ids)-pruned {
				t.Fatalf("verify --all after the full disk: %v\n%s", err, out)
			}

			smallfs.Resize(t, dir, 1<<20, 0, 0)
			if out, err := flrh(bin, nil, args...); err != nil {
				t.Fatalf("prune with room: %v\n%s", err, out)
			}
			if out, err := flrh(bin, nil, "verify", "--archive-dir", dir, "--store", spec); err != nil ||
				!strings.Contains(out, fmt.Sprintf("%d archives checked, 0 missing, 0 unclaimed files", len(ids))) {
				t.Fatalf("the archives after the disk had room: %v\n%s", err, out)
			}
		})
	}
}
