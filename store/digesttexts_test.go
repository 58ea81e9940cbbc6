package store

import (
	"crypto/sha256"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/internal/racebuild"
)

// DigestTexts spells the texts SumText, BodyDigest and ProveDigest make,
// and a text handed out reads the same however many are spelled after it:
// drawn bodies, each digested through one of the three, every text held
// checked again after each.
func TestDigestTextsAreTheDigests(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d DigestTexts
		type held struct{ got, want string }
		var all []held
		for i := range rapid.IntRange(1, 40).Draw(t, "n") {
			body := rapid.SliceOfN(rapid.Byte(), 0, 200).Draw(t, "body")
			var got, want string
			switch rapid.IntRange(0, 2).Draw(t, "how") {
			case 0:
				got, want = d.Sum(sha256.Sum256(body)), SumText(sha256.Sum256(body))
			case 1:
				got, want = d.Digest(body), BodyDigest(body)
			default:
				var p DigestProof
				got, p = d.Prove(body)
				want = BodyDigest(body)
				if !p.Proves(body, got) || !digestHolds(p, body, want) {
					t.Fatalf("text %d: its proof does not prove it", i)
				}
				if len(body) > 0 && p.Proves(append([]byte(nil), body...), got) {
					t.Fatalf("text %d: its proof proves a copy of the body", i)
				}
			}
			all = append(all, held{got, want})
			for j, h := range all {
				if h.got != h.want {
					t.Fatalf("text %d reads %q after %d texts, want %q", j, h.got, i+1, h.want)
				}
			}
		}
	})
}

// A block of texts is one allocation.
func TestDigestTextsAllocateABlock(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	var d DigestTexts
	var sum [sha256.Size]byte
	n := testing.AllocsPerRun(50, func() {
		for range digestTextsBlock {
			_ = d.Sum(sum)
		}
	})
	if n > 1 {
		t.Fatalf("%d texts made %v allocations, want at most 1", digestTextsBlock, n)
	}
}
