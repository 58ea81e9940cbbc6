package frontier

import (
	"crypto/sha256"
	"hash"
)

// hasher feeds canonical pieces to SHA-256 without assembling the whole
// preimage, so large states and batches are hashed without a second copy.
type hasher struct{ h hash.Hash }

func newHasher() hasher { return hasher{sha256.New()} }

func (h hasher) bytes(b []byte) { h.h.Write(b) }

func (h hasher) str(s string) { h.h.Write([]byte(s)) }

func (h hasher) digest() string {
	var sum [32]byte
	h.h.Sum(sum[:0])
	return digestString(sum)
}
