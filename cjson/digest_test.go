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
	})
}
