package authority

import (
	"bytes"
	"crypto/sha256"
)

// DigestMemo keeps the SHA-256 of the preimages decisions given it
// hashed, with the preimages' bytes, so that a later decision given the
// same memo takes the digest of a byte-identical preimage from it instead
// of hashing the preimage again: a grant's re-decision of the batch an
// approval request came from (the same batch, ticket, time and sequence)
// writes its ticket, preview, snapshot and idempotency preimages again
// byte for byte. A digest is reused only for bytes equal to the recorded
// ones. The zero value is an empty memo; it is not safe for concurrent
// use.
type DigestMemo struct {
	b    []byte
	ents []memoEntry
}

// memoEntry is one recorded preimage, b[start:end], and its SHA-256.
type memoEntry struct {
	start, end int
	sum        [sha256.Size]byte
}

// memoLimit bounds the bytes a memo records; preimages beyond it are
// hashed and not recorded.
const memoLimit = 64 << 10

// Reset empties the memo, keeping its storage.
func (m *DigestMemo) Reset() { m.b, m.ents = m.b[:0], m.ents[:0] }

// lookup returns the recorded SHA-256 of bytes equal to p.
func (m *DigestMemo) lookup(p []byte) ([sha256.Size]byte, bool) {
	for i := range m.ents {
		e := &m.ents[i]
		if e.end-e.start == len(p) && bytes.Equal(m.b[e.start:e.end], p) {
			return e.sum, true
		}
	}
	return [sha256.Size]byte{}, false
}

// add records p and its SHA-256 sum.
func (m *DigestMemo) add(p []byte, sum [sha256.Size]byte) {
	if len(m.b)+len(p) > memoLimit {
		return
	}
	start := len(m.b)
	m.b = append(m.b, p...)
	m.ents = append(m.ents, memoEntry{start: start, end: len(m.b), sum: sum})
}

// Size is the memo's storage in bytes (an entry's some 48).
func (m *DigestMemo) Size() int { return cap(m.b) + 48*cap(m.ents) }
