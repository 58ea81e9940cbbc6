package cjson

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
	"sync/atomic"
)

// Midstate is SHA-256's state after the whole 64-byte blocks of an
// opening that many preimages share (a kind, a contract version, the
// members that sort before the first that varies): a preimage that
// begins with those bytes is hashed from the state instead of from the
// start, so the blocks are not compressed again. SHA-256 reads its input
// in order, so the state after the same bytes is the same however it was
// reached, and the sum is the one sha256.Sum256 gives for the whole
// preimage. Which preimage begins with the opening is never assumed: the
// bytes are compared before the state is used, and a preimage that does
// not begin with them is hashed whole. Where the opening is not known in
// advance, Prefix learns it from the preimages themselves.
type Midstate struct {
	prefix string // whole blocks
	state  []byte // the hash's MarshalBinary after prefix
}

// NewMidstate returns the midstate after the whole blocks of opening, or
// nil when opening is shorter than a block (a nil Midstate hashes every
// preimage whole).
func NewMidstate(opening string) *Midstate {
	n := len(opening) &^ (sha256.BlockSize - 1)
	if n == 0 || !resumable {
		return nil
	}
	h := sha256.New()
	h.Write([]byte(opening[:n]))
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	return &Midstate{prefix: opening[:n], state: st}
}

// Prefix returns the whole blocks m's state follows ("" for nil).
func (m *Midstate) Prefix() string {
	if m == nil {
		return ""
	}
	return m.prefix
}

// Opens reports whether b begins with m's blocks (false for nil).
func (m *Midstate) Opens(b []byte) bool {
	return m != nil && len(b) >= len(m.prefix) && string(b[:len(m.prefix)]) == m.prefix
}

// Sum256 is sha256.Sum256(b), continued from m's state when b begins
// with its blocks. r is the hash to continue in, or nil for one from a
// pool.
func (m *Midstate) Sum256(b []byte, r *Resumer) [sha256.Size]byte {
	if !m.Opens(b) {
		return sha256.Sum256(b)
	}
	return m.resume(b, r)
}

// resume hashes b, which begins with m's prefix, from m's state.
func (m *Midstate) resume(b []byte, r *Resumer) [sha256.Size]byte {
	if r == nil {
		r = GetResumer()
		defer PutResumer(r)
	}
	if r.u.UnmarshalBinary(m.state) != nil {
		return sha256.Sum256(b)
	}
	r.h.Write(b[len(m.prefix):])
	r.h.Sum(r.sum[:0])
	return r.sum
}

// Resumer is a SHA-256 hash kept to continue from midstates in:
// restoring a state into it allocates nothing, where a fresh hash or a
// clone would. A caller hashing many preimages takes one for all of them.
type Resumer struct {
	h   hash.Hash
	u   encoding.BinaryUnmarshaler
	m   encoding.BinaryMarshaler
	sum [sha256.Size]byte
}

// newResumer returns a Resumer with a fresh hash.
func newResumer() Resumer {
	h := sha256.New()
	r := Resumer{h: h}
	r.u, _ = h.(encoding.BinaryUnmarshaler)
	r.m, _ = h.(encoding.BinaryMarshaler)
	return r
}

var resumers = sync.Pool{New: func() any { r := newResumer(); return &r }}

// GetResumer returns a Resumer from a pool; PutResumer gives it back.
func GetResumer() *Resumer { return resumers.Get().(*Resumer) }

// PutResumer gives r back to the pool GetResumer takes from.
func PutResumer(r *Resumer) { resumers.Put(r) }

// Openings keeps the midstates of openings that many preimages share but
// that are not known before the first of them (an authority snapshot's
// adapter version, risk, policy version and capability). It is consulted
// by comparing bytes, as a Midstate always is, so what it holds changes
// no sum, only how much is hashed: a preimage whose opening is in a slot
// continues from its state; any other is hashed whole, and its state
// after the opening replaces the oldest slot. Slots are read and replaced
// atomically and a stored Midstate never changes, so the zero Openings is
// ready for use and safe for concurrent use.
type Openings struct {
	slots [4]atomic.Pointer[Midstate]
	next  atomic.Uint32
}

// Sum256 is sha256.Sum256(b), where b's first n bytes are its opening:
// the whole blocks of it are hashed from a slot's state when one holds
// them, and kept in a slot otherwise. r is the hash to use, or nil for
// one from the pool.
func (c *Openings) Sum256(b []byte, n int, r *Resumer) [sha256.Size]byte {
	n &^= sha256.BlockSize - 1
	if n <= 0 || n > len(b) || !resumable {
		return sha256.Sum256(b)
	}
	for i := range c.slots {
		if m := c.slots[i].Load(); m != nil && len(m.prefix) == n && string(b[:n]) == m.prefix {
			return m.resume(b, r)
		}
	}
	if r == nil {
		r = GetResumer()
		defer PutResumer(r)
	}
	r.h.Reset()
	r.h.Write(b[:n])
	if st, err := r.m.MarshalBinary(); err == nil {
		c.slots[c.next.Add(1)%uint32(len(c.slots))].Store(&Midstate{prefix: string(b[:n]), state: st})
	}
	r.h.Write(b[n:])
	r.h.Sum(r.sum[:0])
	return r.sum
}
