package cjson

import (
	"crypto/sha256"
	"sync/atomic"
)

// Memo remembers the last preimage digested through it and its digest, so
// that the same bytes written again are not hashed again: a destination
// every proposal of a run, and of the runs replay meets, names alike. The
// key is the preimage itself, compared byte for byte; a preimage that
// differs in any byte is hashed (through the Prefix given) and becomes the
// one remembered. The zero Memo is ready for use, and it is safe for
// concurrent use.
type Memo struct {
	last atomic.Pointer[memoEntry]
}

// memoEntry is one preimage and its digest, as DigestWritten spells it.
type memoEntry struct {
	pre    []byte
	digest string
}

// DigestWritten is c.DigestWritten(write), served from m when write
// appends the bytes m last digested.
func (m *Memo) DigestWritten(c *Prefix, write func(b []byte) []byte) string {
	// Small enough to be inlined, so that write need not escape.
	s := prefixScratches.Get().(*prefixScratch)
	return m.written(c, s, write(s.buf[:0]))
}

// written is DigestWritten's digest of the b written into s's buffer; it
// gives s back to the pool.
func (m *Memo) written(c *Prefix, s *prefixScratch, b []byte) string {
	if e := m.last.Load(); e != nil && string(e.pre) == string(b) {
		if cap(b) <= maxScratch && cap(b) > cap(s.buf) {
			s.buf = b[:0]
		}
		prefixScratches.Put(s)
		return e.digest
	}
	// The entry copies b before written gives the buffer back.
	e := &memoEntry{pre: append([]byte(nil), b...)}
	sum := c.written(s, b)
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	HexSum((*[64]byte)(out[len("sha256:"):]), &sum)
	e.digest = string(out[:])
	m.last.Store(e)
	return e.digest
}
