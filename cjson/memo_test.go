package cjson

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func freshDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestMemoIsFreshDigest draws runs of preimages from a small pool, so that
// the same bytes come back (a memo served) and bytes of the same length
// differing in one byte follow each other (a memo that must not be
// served); every digest equals a fresh SHA-256 of the bytes.
func TestMemoIsFreshDigest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		base := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "base")
		var m Memo
		var c Prefix
		for i, n := 0, rapid.IntRange(1, 30).Draw(rt, "n"); i < n; i++ {
			b := append([]byte(nil), base...)
			if len(b) > 0 && rapid.Bool().Draw(rt, "flip") {
				j := rapid.IntRange(0, len(b)-1).Draw(rt, "at")
				b[j] ^= byte(rapid.IntRange(1, 255).Draw(rt, "by"))
			}
			if rapid.Bool().Draw(rt, "grow") {
				b = append(b, rapid.SliceOfN(rapid.Byte(), 1, 70).Draw(rt, "tail")...)
			}
			if rapid.Bool().Draw(rt, "rebase") {
				base = b
			}
			got := m.DigestWritten(&c, func(dst []byte) []byte { return append(dst, b...) })
			if want := freshDigest(b); got != want {
				rt.Fatalf("digest of %x: %s, want %s", b, got, want)
			}
		}
	})
}

// TestMemoNotStale is the targeted case: a preimage whose last byte
// changed after it was digested gets its own digest, and the first comes
// back when its bytes do.
func TestMemoNotStale(t *testing.T) {
	var m Memo
	var c Prefix
	a := []byte(`{"contract_version":"1","domain":"effect.destination","kind":"M1ValueDigestPreimage","value":{"to":"bank-a"}}`)
	b := append([]byte(nil), a...)
	b[len(b)-4] = 'b'
	for _, p := range [][]byte{a, a, b, b, a} {
		if got, want := m.DigestWritten(&c, func(dst []byte) []byte { return append(dst, p...) }), freshDigest(p); got != want {
			t.Fatalf("digest of %s: %s, want %s", p, got, want)
		}
	}
}

func TestMemoConcurrent(t *testing.T) {
	var m Memo
	var c Prefix
	pres := [][]byte{[]byte("one preimage, long enough to span more than a single block of sha-256 input"), []byte("another")}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := pres[(g+i)%2]
				if got, want := m.DigestWritten(&c, func(dst []byte) []byte { return append(dst, p...) }), freshDigest(p); got != want {
					t.Errorf("digest of %s: %s, want %s", p, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
