package verify

import (
	"crypto/sha256"
	"testing"

	"flrh.dev/flrh/store"
	"pgregory.net/rapid"
)

// chainHashIs and isDigestOf agree with the store's own digests, on the
// digests themselves and on every other string drawn.
func TestChainHashIsTheStoresChainHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.SliceOf(rapid.Byte()).Draw(t, "body")
		prev := rapid.OneOf(rapid.Just(store.GenesisHash), rapid.Just(store.BodyDigest(body)), rapid.String()).Draw(t, "prev")
		digest := rapid.OneOf(rapid.Just(store.BodyDigest(body)), rapid.String()).Draw(t, "digest")
		seq := rapid.Int64().Draw(t, "seq")
		want := store.ChainHash(prev, seq, digest)
		other := rapid.OneOf(rapid.Just(want), rapid.Just(want[:len(want)-1]+"0"), rapid.Just("SHA256"+want[6:]), rapid.String()).Draw(t, "candidate")
		if got := chainHashIs(other, prev, seq, digest); got != (other == want) {
			t.Fatalf("chainHashIs(%q, %q, %d, %q) = %v; the store's hash is %q", other, prev, seq, digest, got, want)
		}
		sum := sha256.Sum256(body)
		bd := store.BodyDigest(body)
		other = rapid.OneOf(rapid.Just(bd), rapid.Just(bd[:len(bd)-1]), rapid.Just(bd+"0"), rapid.String()).Draw(t, "body digest")
		if got := isDigestOf(other, &sum); got != (other == bd) {
			t.Fatalf("isDigestOf(%q) = %v; the store's digest is %q", other, got, bd)
		}
	})
}
