package mrp

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
)

// midstate is SHA-256's state after the whole 64-byte blocks of an
// opening most seals share (the authority package's midstates,
// decision 0620): a preimage that begins with those bytes is hashed from
// the state instead of from the start. The state after the same bytes is
// the same however it was reached, so the digest is sha256.Sum256's of
// the whole preimage; the bytes are compared before the state is used.
type midstate struct {
	prefix string // whole blocks
	state  []byte // the hash's MarshalBinary after prefix
}

// newMidstate returns the midstate after the whole blocks of opening, or
// nil when opening is shorter than a block.
func newMidstate(opening string) *midstate {
	n := len(opening) &^ (sha256.BlockSize - 1)
	if n == 0 {
		return nil
	}
	h := sha256.New()
	h.Write([]byte(opening[:n]))
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	return &midstate{prefix: opening[:n], state: st}
}

// resumer is a SHA-256 hash kept to continue from midstates without
// allocating.
type resumer struct {
	h   hash.Hash
	u   encoding.BinaryUnmarshaler
	sum [sha256.Size]byte
}

var resumers = sync.Pool{New: func() any {
	h := sha256.New()
	return &resumer{h: h, u: h.(encoding.BinaryUnmarshaler)}
}}

// fhrMidstates are the openings of an FHR's preimage with the deep and
// no-progress budgets unused (every recorded run's so far), two blocks
// and one: the first whose prefix the preimage begins with is used.
var fhrMidstates = [...]*midstate{
	newMidstate(`{"budgets":{"deep_limit":0,"deep_used":0,"escalate_on_no_progress":false,"no_progress_limit":0,"no_progress_run":0,"session_limit":`),
	newMidstate(`{"budgets":{"deep_limit":0,"deep_used":0,"escalate_on_no_progress":`),
}

// sealSum is sha256.Sum256(b), continued from the first of ms whose
// prefix b begins with.
func sealSum(b []byte, ms []*midstate) [sha256.Size]byte {
	for _, m := range ms {
		if len(b) >= len(m.prefix) && string(b[:len(m.prefix)]) == m.prefix {
			return resume(b, m)
		}
	}
	return sha256.Sum256(b)
}

// resume hashes b, which begins with m's prefix, from m's state.
func resume(b []byte, m *midstate) [sha256.Size]byte {
	r := resumers.Get().(*resumer)
	defer resumers.Put(r)
	if r.u.UnmarshalBinary(m.state) != nil {
		return sha256.Sum256(b)
	}
	r.h.Write(b[len(m.prefix):])
	r.h.Sum(r.sum[:0])
	return r.sum
}
