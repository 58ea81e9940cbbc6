package frontier

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
)

// hasher feeds canonical pieces to SHA-256 without assembling the whole
// preimage, so large states and batches are hashed without a second copy.
//
// It can also save and restore its running state. SHA-256 is a
// Merkle–Damgård construction: the digest of P‖X depends on P only through
// the hash state after P. A state whose preimage begins with the same bytes
// as its prior's (same global watermark, same leading open epochs) resumes
// from the prior's saved state after that prefix and hashes only the rest;
// the digest is the one a from-scratch pass gives, byte for byte.
//
// One hasher serves a whole Step: it is reset between the digests it takes
// (the state's, the batches', the transition's), so a command allocates
// one SHA-256 state, not one per digest, and the sum is written into the
// hasher instead of a fresh array. It also lends the command one scratch
// buffer for preimage pieces that are hashed and dropped.
type hasher struct {
	h   hash.Hash
	sum [sha256.Size]byte
	buf []byte
	// undigested says the batches published with it take no published
	// digest (PublishUndigested).
	undigested bool
	// states are the two headers Publish steps its states through, each
	// written whole before it is read; emptied when the hasher is put
	// back, so that a pooled hasher holds no state's values.
	states [2]State
}

// scratch returns the hasher's buffer, emptied, with room for n bytes.
// Whatever was written to it before is gone; hand a buffer that grew back
// with keep.
func (h *hasher) scratch(n int) []byte {
	if cap(h.buf) < n {
		h.buf = make([]byte, 0, n)
	}
	return h.buf[:0]
}

// keep makes b the scratch buffer if it outgrew the current one.
func (h *hasher) keep(b []byte) {
	if cap(b) > cap(h.buf) {
		h.buf = b[:0]
	}
}

func newHasher() *hasher { return &hasher{h: sha256.New()} }

// hashers recycles Publish's hasher, one a call. Recycling changes no
// byte: every digest resets the hash before writing, the scratch buffer
// is written from empty, and nothing Publish returns holds the buffer
// or the sum array (the digests are strings of their own, and a batch's
// preimage is dropped once hashed).
var hashers = sync.Pool{New: func() any { return newHasher() }}

// putHasher gives h back to hashers; an outsized buffer is left to the
// collector.
func putHasher(h *hasher) {
	h.undigested = false
	h.states = [2]State{}
	if cap(h.buf) > 64<<10 {
		h.buf = nil
	}
	hashers.Put(h)
}

func (h *hasher) reset() { h.h.Reset() }

func (h *hasher) bytes(b []byte) { h.h.Write(b) }

// digest returns the sha256:<hex> form of what was written. It does not
// reset the hasher.
func (h *hasher) digest() string {
	h.h.Sum(h.sum[:0])
	return digestString(h.sum)
}

// snapSize is the length of a saved SHA-256 state (its binary marshaling:
// magic, chaining value, pending block, length), or 0 if the hash cannot
// be saved, in which case every digest is computed from scratch.
var snapSize = func() int {
	m, ok := sha256.New().(encoding.BinaryMarshaler)
	if !ok {
		return 0
	}
	b, err := m.MarshalBinary()
	if err != nil {
		return 0
	}
	return len(b)
}()

// save writes the running state into dst (snapSize bytes) and reports
// whether it fitted exactly.
func (h *hasher) save(dst []byte) bool {
	a, ok := h.h.(encoding.BinaryAppender)
	if !ok || len(dst) != snapSize || snapSize == 0 {
		return false
	}
	out, err := a.AppendBinary(dst[:0])
	return err == nil && len(out) == snapSize && &out[0] == &dst[0]
}

// restore replaces the running state with one saved by save.
func (h *hasher) restore(src []byte) bool {
	u, ok := h.h.(encoding.BinaryUnmarshaler)
	return ok && u.UnmarshalBinary(src) == nil
}
