package mrp

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"pgregory.net/rapid"
)

// sealSum gives sha256.Sum256 of the whole input: inputs that begin with
// a midstate's prefix, with one of its bytes changed, or stop short of
// it, followed by anything.
func TestSealSumIsSum256(t *testing.T) {
	for _, m := range fhrMidstates {
		if m == nil || len(m.Prefix())%64 != 0 {
			t.Fatalf("midstate %+v: want a prefix of whole blocks", m)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		b := []byte(fhrMidstates[rapid.IntRange(0, len(fhrMidstates)-1).Draw(rt, "which")].Prefix())
		switch rapid.IntRange(0, 2).Draw(rt, "how") {
		case 1:
			b[rapid.IntRange(0, len(b)-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		case 2:
			b = b[:rapid.IntRange(0, len(b)-1).Draw(rt, "cut")]
		}
		b = append(b, rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "rest")...)
		if got, want := sealSum(b, fhrMidstates[:]), sha256.Sum256(b); got != want {
			rt.Fatalf("sealSum(%q) = %x, want %x", b, got, want)
		}
	})
}

// An FHR with its deep and no-progress budgets unused is sealed from the
// two-block midstate, one with those budgets in use from none; both seals
// are the digest of the record's canonical bytes.
func TestSealFromMidstateIsTheDigest(t *testing.T) {
	for _, b := range []Budgets{{}, {SessionUsed: 3}, {NoProgressRun: 1}, {DeepLimit: 2}, {EscalateOnNoProgress: true}} {
		f, err := FHR{Turn: 1, Budgets: b, State: Decide}.Seal()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := f.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		g := f
		g.Digest = ""
		pre, err := g.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(pre)
		if want := "sha256:" + hex.EncodeToString(sum[:]); f.Digest != want {
			t.Fatalf("budgets %+v: seal %s, want %s (record %s)", b, f.Digest, want, raw)
		}
	}
}
