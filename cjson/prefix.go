package cjson

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
	"sync/atomic"
)

// Prefix digests preimages that begin with the same bytes, call after
// call: a domain tag, a contract version, a profile's digest. It keeps
// SHA-256's running state after each of the first few 64-byte blocks of
// a preimage it hashed, and a later preimage whose leading blocks are the
// same bytes resumes from the state after the last of them instead of
// hashing them again. SHA-256 is a Merkle–Damgård construction: its state
// after whole blocks depends on those blocks' bytes alone, so every sum
// is the one a pass from scratch gives, byte for byte; which preimage the
// state was kept from changes only how much is hashed.
//
// A Prefix keeps one preimage's blocks, the first it met or the last that
// shared no whole block with them. The zero Prefix is ready for use, and
// it is safe for concurrent use.
type Prefix struct {
	last atomic.Pointer[prefixState]
}

// prefixBlocks is how many leading blocks a Prefix keeps states for.
const prefixBlocks = 4

// prefixState is the leading blocks of one preimage and the hash state
// after each: saved[i] is the state after lead[:64*(i+1)]. It is one
// allocation.
type prefixState struct {
	lead  []byte
	saved [prefixBlocks][]byte
	arena [prefixBlocks * (64 + savedSize)]byte
}

// savedSize bounds the length of a saved SHA-256 state (108 bytes: magic,
// chaining value, pending block, length).
const savedSize = 112

// match returns how many of b's leading blocks are the state's.
func (st *prefixState) match(b []byte) int {
	k := 0
	for k < len(st.lead)/64 && len(b) >= 64*(k+1) && string(b[64*k:64*(k+1)]) == string(st.lead[64*k:64*(k+1)]) {
		k++
	}
	return k
}

// prefixScratch is a recycled hash, the one midstates continue in, and a
// preimage buffer.
type prefixScratch struct {
	Resumer
	buf []byte
}

var prefixScratches = sync.Pool{New: func() any { return &prefixScratch{Resumer: newResumer()} }}

// resumable reports whether this build's SHA-256 saves and restores its
// state; when it does not, a Prefix hashes every preimage from scratch.
var resumable = func() bool {
	h := sha256.New()
	_, ok1 := h.(encoding.BinaryAppender)
	_, ok2 := h.(encoding.BinaryUnmarshaler)
	return ok1 && ok2
}()

// Sum returns SHA-256 of b.
func (c *Prefix) Sum(b []byte) [sha256.Size]byte {
	if len(b) < 64 || !resumable {
		return sha256.Sum256(b)
	}
	s := prefixScratches.Get().(*prefixScratch)
	sum := c.sum(s, b)
	prefixScratches.Put(s)
	return sum
}

// SumWritten is SumWritten (the package function) through c: write
// appends the preimage to a recycled buffer it must keep no reference
// to.
func (c *Prefix) SumWritten(write func(b []byte) []byte) [sha256.Size]byte {
	// Small enough to be inlined, so that write, usually a closure or a
	// method value, need not escape.
	s := prefixScratches.Get().(*prefixScratch)
	return c.written(s, write(s.buf[:0]))
}

// written is SumWritten's sum of the b written into s's buffer; it gives
// s back to the pool.
func (c *Prefix) written(s *prefixScratch, b []byte) [sha256.Size]byte {
	var sum [sha256.Size]byte
	if len(b) < 64 || !resumable {
		sum = sha256.Sum256(b)
	} else {
		sum = c.sum(s, b)
	}
	if cap(b) <= maxScratch && cap(b) > cap(s.buf) {
		s.buf = b[:0]
	}
	prefixScratches.Put(s)
	return sum
}

// DigestWritten is DigestWritten (the package function) through c.
func (c *Prefix) DigestWritten(write func(b []byte) []byte) string {
	sum := c.SumWritten(write)
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	HexSum((*[64]byte)(out[len("sha256:"):]), &sum)
	return string(out[:])
}

// HexDigestWritten is HexDigestWritten (the package function) through c.
func (c *Prefix) HexDigestWritten(write func(b []byte) []byte) string {
	sum := c.SumWritten(write)
	var out [2 * sha256.Size]byte
	HexSum(&out, &sum)
	return string(out[:])
}

// sum hashes b (at least one block) with s's hash state, resuming from
// c's kept state when b begins with its blocks and keeping b's leading
// blocks when it shares none.
func (c *Prefix) sum(s *prefixScratch, b []byte) [sha256.Size]byte {
	h := s.h
	st := c.last.Load()
	k := 0
	if st != nil {
		k = st.match(b)
	}
	if k > 0 && s.u.UnmarshalBinary(st.saved[k-1]) == nil {
		h.Write(b[64*k:])
	} else {
		h.Reset()
		c.keep(h, b)
	}
	h.Sum(s.sum[:0])
	return s.sum
}

// keep hashes b into the reset h, saving the state after each of b's
// first blocks, and makes them the blocks c resumes from.
func (c *Prefix) keep(h hash.Hash, b []byte) {
	n := min(prefixBlocks, len(b)/64)
	st := new(prefixState)
	st.lead = append(st.arena[:0:64*n], b[:64*n]...)
	rest := st.arena[64*n:]
	a := h.(encoding.BinaryAppender)
	for i := range n {
		h.Write(b[64*i : 64*(i+1)])
		saved, err := a.AppendBinary(rest[:0:savedSize])
		if err != nil {
			h.Write(b[64*(i+1):])
			return
		}
		st.saved[i], rest = saved, rest[savedSize:]
	}
	h.Write(b[64*n:])
	c.last.Store(st)
}
