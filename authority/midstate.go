package authority

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
	"sync/atomic"
)

// midstate is SHA-256's state after the whole 64-byte blocks of an
// opening that many preimages share: a preimage that begins with those
// bytes is hashed from the state instead of from the start, so the
// blocks are not compressed again (decision 0620). SHA-256 reads its
// input in order, so the state after the same bytes is the same state
// however it was reached, and the digest is the one sha256.Sum256 gives
// for the whole preimage. Which preimage begins with the prefix is never
// assumed: the bytes are compared before the state is used, and a
// preimage that does not begin with them is hashed whole.
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

// resumer is a SHA-256 hash kept to continue from midstates: restoring a
// state into it (UnmarshalBinary) allocates nothing, where a fresh hash
// or a clone would.
type resumer struct {
	h   hash.Hash
	u   encoding.BinaryUnmarshaler
	m   encoding.BinaryMarshaler
	sum [sha256.Size]byte
}

var resumers = sync.Pool{New: func() any {
	h := sha256.New()
	return &resumer{h: h, u: h.(encoding.BinaryUnmarshaler), m: h.(encoding.BinaryMarshaler)}
}}

// sum256 is sha256.Sum256(b), continued from m when b begins with m's
// prefix (m may be nil). r is the hash to continue in, or nil for one
// from the pool.
func sum256(b []byte, m *midstate, r *resumer) [sha256.Size]byte {
	if m == nil || len(b) < len(m.prefix) || string(b[:len(m.prefix)]) != m.prefix {
		return sha256.Sum256(b)
	}
	return resume(b, m, r)
}

// resume hashes b, which begins with m's prefix, from m's state, in r or
// in a hash from the pool when r is nil.
func resume(b []byte, m *midstate, r *resumer) [sha256.Size]byte {
	if r == nil {
		r = resumers.Get().(*resumer)
		defer resumers.Put(r)
	}
	if r.u.UnmarshalBinary(m.state) != nil {
		return sha256.Sum256(b)
	}
	r.h.Write(b[len(m.prefix):])
	r.h.Sum(r.sum[:0])
	return r.sum
}

// The usual openings of the preimages whose first blocks are the same
// for every decision of a kind: a control event's members before its
// payload's first name (its type's actor role and capability, the
// contract version and kind), the policy-verdict evidence's up to the
// authority digest (an assessed risk and the decision "allow", which is
// the only decision such evidence is written for), an input's up to its
// kind (an effect sequence of one digit), and a stable batch's
// up to its dataflow version (R's "dataflow/0"). A preimage that opens
// otherwise is hashed whole.
var (
	eventMidstates = func() map[string]*midstate {
		m := make(map[string]*midstate, len(eventAuthority))
		for _, e := range []string{EventEffectAuthorized, EventApprovalRequired, EventApprovalGranted} {
			auth := eventAuthority[e]
			m[e] = newMidstate(`{"actor_role":"` + auth[0] + `","capability":"` + auth[1] +
				`","contract_version":"` + ContractVersion + `","kind":"M4AControlEventPreimage","payload":{"`)
		}
		return m
	}()
	effectAuthorizedMidstate = eventMidstates[EventEffectAuthorized]

	verdictMidstates = [...]*midstate{
		verdictOpening(RiskReadOnly), verdictOpening(RiskReversible), verdictOpening(RiskHighRiskExternal),
	}

	// An input preimage's first block ends four bytes into its kind
	// member when the effect sequence has one digit: the first ten
	// effects of every run.
	inputMidstates = func() (ms [10]*midstate) {
		for i := range ms {
			ms[i] = newMidstate(`{"contract_version":"` + ContractVersion + `","effect_sequence":` + string(rune('0'+i)) + `,"kind":"AuthorizeInputPreimage","now":`)
		}
		return ms
	}()

	stableBatchMidstate = newMidstate(`{"contract_version":"` + reactiveContract +
		`","dataflow_version":"dataflow/0","kind":"M3StableBatchPreimage","logical_time":`)
)

func verdictOpening(risk string) *midstate {
	return newMidstate(`{"assessed_risk":"` + risk + `","authority_decision":"allow","authority_digest":"sha256:`)
}

// eventMidstate is the midstate for a control event of type event, or
// nil for a type without one.
func eventMidstate(event string) *midstate {
	if event == EventEffectAuthorized {
		return effectAuthorizedMidstate
	}
	return eventMidstates[event]
}

// verdictMidstate is the midstate for policy-verdict evidence of the
// assessed risk, or nil for another risk.
func verdictMidstate(risk string) *midstate {
	switch risk {
	case RiskReadOnly:
		return verdictMidstates[0]
	case RiskReversible:
		return verdictMidstates[1]
	case RiskHighRiskExternal:
		return verdictMidstates[2]
	}
	return nil
}

// midstateCache keeps the midstates of openings that many decisions
// share but that are not known before the first of them: the authority
// snapshot's, whose first blocks hold the adapter's version, the assessed
// risk, the policy's version and the capability's id (three of its eight
// blocks for the usual ids), the same for every decision under one
// capability for one adapter, risk and policy version. The cache is
// consulted by comparing bytes, as a midstate always is, so what it holds
// changes no digest, only how much is hashed: a preimage whose opening is
// in a slot continues from its state; any other is hashed whole in a kept
// hash, whose state after the opening then replaces the oldest slot. The
// cache is process-wide, as cjson.Prefix's kept blocks are (decision
// 0511), and not a member of the policy or the capability, which a
// decision must leave as it found them. Slots are read and replaced
// atomically and a midstate never changes once stored, so decisions may
// run at once.
type midstateCache struct {
	slots [4]atomic.Pointer[midstate]
	next  atomic.Uint32
}

// snapshotOpenings is the authority snapshots' cache.
var snapshotOpenings midstateCache

// sum256 is sha256.Sum256(b), where b's first n bytes are its opening: the
// whole blocks of it are hashed from a slot's state when one holds them,
// and kept in a slot otherwise. r is the hash to use, or nil for one from
// the pool.
func (c *midstateCache) sum256(b []byte, n int, r *resumer) [sha256.Size]byte {
	n &^= sha256.BlockSize - 1
	if n <= 0 || n > len(b) {
		return sha256.Sum256(b)
	}
	for i := range c.slots {
		if m := c.slots[i].Load(); m != nil && len(m.prefix) == n && string(b[:n]) == m.prefix {
			return resume(b, m, r)
		}
	}
	if r == nil {
		r = resumers.Get().(*resumer)
		defer resumers.Put(r)
	}
	r.h.Reset()
	r.h.Write(b[:n])
	if st, err := r.m.MarshalBinary(); err == nil {
		c.slots[c.next.Add(1)%uint32(len(c.slots))].Store(&midstate{prefix: string(b[:n]), state: st})
	}
	r.h.Write(b[n:])
	r.h.Sum(r.sum[:0])
	return r.sum
}
