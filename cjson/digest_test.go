package cjson

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"pgregory.net/rapid"
)

// Digest and HexDigest write the sum's hex into one array; they are held
// to the sum spelled by encoding/hex, over any bytes.
func TestDigestIsHexOfSum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.Byte()).Draw(t, "bytes")
		sum := sha256.Sum256(b)
		want := hex.EncodeToString(sum[:])
		if got := HexDigest(b); got != want {
			t.Fatalf("HexDigest = %s, want %s", got, want)
		}
		if got := Digest(b); got != "sha256:"+want {
			t.Fatalf("Digest = %s, want sha256:%s", got, want)
		}
		// Written into a recycled buffer (one a longer preimage may have
		// left bytes in), the digests are the same.
		long := rapid.IntRange(0, 3*len(b)+70000).Draw(t, "earlier")
		DigestWritten(func(x []byte) []byte { return append(x, make([]byte, long)...) })
		write := func(x []byte) []byte { return append(x, b...) }
		if got := HexDigestWritten(write); got != want {
			t.Fatalf("HexDigestWritten = %s, want %s", got, want)
		}
		if got := DigestWritten(write); got != "sha256:"+want {
			t.Fatalf("DigestWritten = %s, want sha256:%s", got, want)
		}
		got := Written(write)
		if string(got) != string(b) || len(got) != cap(got) {
			t.Fatalf("Written = %x (cap %d), want %x", got, cap(got), b)
		}
		DigestWritten(func(x []byte) []byte { return append(x, make([]byte, long)...) })
		if string(got) != string(b) {
			t.Fatalf("Written's bytes changed by a later use of the buffer: %x, want %x", got, b)
		}
	})
}
