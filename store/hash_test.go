package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"flrh.dev/flrh/store"
	"pgregory.net/rapid"
)

// The chain hash and body digest are written by the fast paths below; the
// oracle is the definition as first written, through fmt and hex strings.
func oracleChainHash(prev string, seq int64, digest string) string {
	h := sha256.New()
	fmt.Fprintf(h, "flrh-event-chain/1\x00%s\x00%d\x00%s", prev, seq, digest)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func oracleBodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func TestChainHashMatchesItsDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Long prevs and digests too: the fast path's stack buffer must
		// spill, not truncate.
		prev := rapid.OneOf(rapid.Just(store.GenesisHash), rapid.String(), rapid.StringN(0, 400, -1)).Draw(t, "prev")
		seq := rapid.Int64().Draw(t, "seq")
		digest := rapid.OneOf(rapid.Just(oracleBodyDigest([]byte("x"))), rapid.String()).Draw(t, "digest")
		want := oracleChainHash(prev, seq, digest)
		if got := store.ChainHash(prev, seq, digest); got != want {
			t.Fatalf("ChainHash = %s, want %s", got, want)
		}
		if got := store.SumText(store.ChainSum(prev, seq, digest)); got != want {
			t.Fatalf("SumText(ChainSum) = %s, want %s", got, want)
		}
	})
}

func TestDigestMatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.SliceOf(rapid.Byte()).Draw(t, "body")
		want := oracleBodyDigest(body)
		if got := store.BodyDigest(body); got != want {
			t.Fatalf("BodyDigest = %s, want %s", got, want)
		}
		if !store.DigestMatches(body, want) {
			t.Fatalf("DigestMatches refused its own digest %s", want)
		}
		// Any other text is refused, as the string comparison refused it:
		// one digit changed, upper case, a prefix other than sha256:, or a
		// length other than 71.
		other := rapid.OneOf(
			rapid.Just(strings.ToUpper(want)),
			rapid.Just(want[:len(want)-1]),
			rapid.Just(want+"0"),
			rapid.Just("sha512"+want[6:]),
			rapid.Custom(func(t *rapid.T) string {
				i := rapid.IntRange(7, len(want)-1).Draw(t, "i")
				c := rapid.SampledFrom([]byte("0123456789abcdefABCDEFg")).Filter(func(c byte) bool { return c != want[i] }).Draw(t, "c")
				return want[:i] + string(c) + want[i+1:]
			}),
			rapid.String(),
		).Draw(t, "other")
		if got := store.DigestMatches(body, other); got != (other == want) {
			t.Fatalf("DigestMatches(%q) = %v, want %v", other, got, other == want)
		}
	})
}

// SumMatches over ChainSum says what comparing with ChainHash's text says,
// on the hash itself and on every other string drawn (the verifier checks
// each event's chain hash this way).
func TestSumMatchesChainHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.SliceOf(rapid.Byte()).Draw(t, "body")
		prev := rapid.OneOf(rapid.Just(store.GenesisHash), rapid.Just(store.BodyDigest(body)), rapid.String()).Draw(t, "prev")
		digest := rapid.OneOf(rapid.Just(store.BodyDigest(body)), rapid.String()).Draw(t, "digest")
		seq := rapid.Int64().Draw(t, "seq")
		want := store.ChainHash(prev, seq, digest)
		other := rapid.OneOf(rapid.Just(want), rapid.Just(want[:len(want)-1]+"0"), rapid.Just("SHA256"+want[6:]), rapid.String()).Draw(t, "candidate")
		if got := store.SumMatches(other, store.ChainSum(prev, seq, digest)); got != (other == want) {
			t.Fatalf("SumMatches(%q, ChainSum(%q, %d, %q)) = %v; the chain hash is %q", other, prev, seq, digest, got, want)
		}
	})
}

// ChainSumAfter is the chain hash after a sum, its text written in place:
// the definition's, with the previous chain hash as its text.
func TestChainSumAfterMatchesItsDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var prev [sha256.Size]byte
		copy(prev[:], rapid.SliceOfN(rapid.Byte(), sha256.Size, sha256.Size).Draw(t, "prev"))
		seq := rapid.Int64().Draw(t, "seq")
		digest := rapid.OneOf(rapid.Just(oracleBodyDigest([]byte("x"))), rapid.String(), rapid.StringN(0, 400, -1)).Draw(t, "digest")
		want := oracleChainHash("sha256:"+hex.EncodeToString(prev[:]), seq, digest)
		if got := store.SumText(store.ChainSumAfter(prev, seq, digest)); got != want {
			t.Fatalf("ChainSumAfter = %s, want %s", got, want)
		}
	})
}

// AppendSumText appends exactly SumText's text, whatever b holds and
// whatever room it has.
func TestAppendSumTextIsSumText(t *testing.T) {
	for _, sum := range [][32]byte{{}, sha256.Sum256([]byte("x")), {0xff, 0x0f, 0xf0}} {
		for _, b := range [][]byte{nil, []byte("ab"), make([]byte, 3, 100)} {
			want := string(b) + store.SumText(sum)
			if got := string(store.AppendSumText(b, sum)); got != want {
				t.Fatalf("AppendSumText(%q, %x) = %q, want %q", b, sum, got, want)
			}
		}
	}
}
