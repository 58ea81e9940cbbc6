package authority

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// recentDigests serves the digest a fresh SHA-256 of the written bytes
// gives, over preimages drawn from two letters, so that many share a
// length and most of their bytes, that come back after up to a few
// others (more than the slots hold, too), through a pooled writer and a
// decision's arena alike.
func TestRecentDigestsAreFresh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var r recentDigests
		var sh decisionShared
		arena := strArena{seen: sh.scratch.plainSeen(), scratch: &sh.scratch}
		defer sh.scratch.done()
		pre := rapid.SliceOfN(rapid.SampledFrom([]byte("ab")), 0, 6)
		for i := rapid.IntRange(1, 40).Draw(rt, "ops"); i > 0; i-- {
			p := pre.Draw(rt, "p")
			var w canonWriter
			if rapid.Bool().Draw(rt, "arena") {
				w = arena.writer(16)
			} else {
				w = pooledWriter(16)
			}
			w.lit(string(p))
			var a *strArena
			if w.home != nil {
				a = &arena
			}
			got, err := r.digest(&w, a)
			sum := sha256.Sum256(p)
			if want := "sha256:" + hex.EncodeToString(sum[:]); err != nil || got != want {
				rt.Fatalf("digest of %q = %s %v, want %s", p, got, err, want)
			}
		}
	})
}

// Approvals digested at once on two goroutines, each digest served or
// kept while the other replaces the slots, are each their map's digest.
func TestRecentApprovalsConcurrent(t *testing.T) {
	var as []Approval
	for i := range 12 {
		as = append(as, Approval{Kind: "HApproval", Decision: "grant", IssuedAt: int64(i % 5),
			Binding: Binding{RunID: "run-" + string(rune('a'+i%7)), Nonce: "nonce:1"}})
	}
	want := make([]string, len(as))
	for i, a := range as {
		want[i] = a.mapDigest()
	}
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for k := range 300 {
				i := (k*(g+3) + g) % len(as)
				if got := as[i].ComputeDigest(); got != want[i] {
					t.Errorf("approval %d: %s, want %s", i, got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}
