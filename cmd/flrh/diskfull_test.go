package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/smallfs"
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
	for _, size := range []int64{384 << 10, 640 << 10, 896 << 10} {
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
