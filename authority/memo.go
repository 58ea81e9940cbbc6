package authority

import (
	"bytes"
	"crypto/sha256"
	"sync/atomic"

	"flrh.dev/flrh/cjson"
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

// recentDigests keeps the preimages of one kind most recently digested
// through it, each with its digest, process-wide: a preimage written
// again byte for byte, by any caller, takes the kept digest instead of
// being hashed again. Approvals use it: a grant's digest is taken when
// it is issued (Grant) and again when a decision checks it (Revalidate),
// with no decision's DigestMemo in common. The key is the whole
// preimage, compared byte for byte, so a kept digest is served exactly
// when hashing would give the same one. Slots are read and replaced
// atomically and a kept entry never changes; the zero value is ready.
type recentDigests struct {
	slots [4]atomic.Pointer[keptDigest]
	next  atomic.Uint32
}

// keptDigest is one preimage and its digest in one string: s[:n] is the
// preimage and s[n:] the digest ("sha256:" and 64 hex digits).
type keptDigest struct {
	s string
	n int
}

// digest is w.digestIn(a) for what w wrote, served from r when r keeps
// the same bytes and kept in r otherwise.
func (r *recentDigests) digest(w *canonWriter, a *strArena) (string, error) {
	if w.err != nil {
		return w.digestIn(a)
	}
	for i := range r.slots {
		if k := r.slots[i].Load(); k != nil && k.s[:k.n] == string(w.b) {
			w.release()
			return k.s[k.n:], nil
		}
	}
	sum := w.sum256()
	var out [7 + 64]byte
	copy(out[:], "sha256:")
	cjson.HexSum((*[64]byte)(out[7:]), &sum)
	k := &keptDigest{s: string(w.b) + string(out[:]), n: len(w.b)}
	w.release()
	r.slots[r.next.Add(1)%uint32(len(r.slots))].Store(k)
	return k.s[k.n:], nil
}
