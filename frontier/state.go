package frontier

import (
	"bytes"
	"slices"
)

// storedValue is an RStoredValue: an active delivery in an open epoch.
// Its canonical bytes are pre, the value's own canonical bytes, then post;
// pre and post are written once, when the delivery enters an epoch, so the
// (large) value bytes are never copied into the state.
type storedValue struct {
	deliveryID  string
	sourceID    string
	logicalTime int64
	value       Value
	pre, post   []byte
}

// storedPieceSize bounds len(pre)+len(post) of a stored value (20 bytes
// cover any logical time), so that an arena sized with it never grows.
func storedPieceSize(deliveryID, sourceID string, kind ValueKind, valueDigest string) int {
	return len(`{"delivery_id":"","kind":"RStoredValue","logical_time":,"source_id":"","value":`) + 20 +
		len(`,"value_digest":"","value_kind":""}`) + len(deliveryID) + len(sourceID) + len(kind) + len(valueDigest)
}

// encode writes the stored value's pre and post pieces at the end of arena
// and returns the arena. The pieces are capped, so later appends to the
// arena never write into them.
func (s *storedValue) encode(arena []byte) []byte {
	// Every string here is an identifier, a digest or a kind: none holds a
	// byte JSON escapes, so they are quoted without scanning.
	start := len(arena)
	b := append(arena, `{"delivery_id":"`...)
	b = append(b, s.deliveryID...)
	b = append(b, `","kind":"RStoredValue","logical_time":`...)
	b = appendInt(b, s.logicalTime)
	b = append(b, `,"source_id":"`...)
	b = append(b, s.sourceID...)
	b = append(b, `","value":`...)
	mid := len(b)
	b = append(b, `,"value_digest":"`...)
	b = append(b, s.value.digest...)
	b = append(b, `","value_kind":"`...)
	b = append(b, s.value.kind...)
	b = append(b, `"}`...)
	s.pre = b[start:mid:mid]
	s.post = b[mid:len(b):len(b)]
	return b
}

func (s *storedValue) appendCanonical(b []byte) []byte {
	b = append(b, s.pre...)
	b = append(b, s.value.canon...)
	return append(b, s.post...)
}

// epoch is an ROpenEpoch. Its values are in delivery-id order, which is the
// canonical-byte order of RStoredValue. An epoch is never modified once it
// is part of a State; a transition that changes it builds a new one.
type epoch struct {
	time    int64
	values  []*storedValue
	open    []byte // {"kind":"ROpenEpoch","logical_time":T,"values":[
	size    int    // length of the canonical ROpenEpoch
	openBuf [80]byte
}

// seal writes the epoch's opening piece and measures it; epochs never
// change after. The piece (at most 67 bytes: 20 cover any logical time)
// is written in the epoch itself, not in a buffer of its own.
func (e *epoch) seal() *epoch {
	b := e.openBuf[:0]
	b = append(b, '{')
	b = appendKey(b, "kind", true)
	b = appendString(b, "ROpenEpoch")
	b = appendKey(b, "logical_time", false)
	b = appendInt(b, e.time)
	b = appendKey(b, "values", false)
	e.open = append(b, '[')
	n := len(e.open) + len(closeArray)
	for j, v := range e.values {
		if j > 0 {
			n++
		}
		n += len(v.pre) + len(v.value.canon) + len(v.post)
	}
	e.size = n
	return e
}

// write emits the canonical ROpenEpoch in pieces.
func (e *epoch) write(w func([]byte)) {
	w(e.open)
	for j, v := range e.values {
		if j > 0 {
			w(comma)
		}
		w(v.pre)
		w(v.value.canon)
		w(v.post)
	}
	w(closeArray)
}

// find returns the index of a delivery in e, or -1.
func (e *epoch) find(deliveryID string) int {
	i, ok := slices.BinarySearchFunc(e.values, deliveryID, func(s *storedValue, id string) int {
		return compareCanonString(s.deliveryID, id)
	})
	if !ok {
		return -1
	}
	return i
}

// State is an RReactiveState: per-source low watermarks, outstanding demand,
// open epochs and ready batches. A State is immutable; Step returns a new
// one and leaves its input untouched, sharing unchanged parts.
type State struct {
	profileDigest string
	dataflow      string
	sources       []string // canonical order, as in the profile
	marks         []int64  // low watermark per source
	known         []bool   // whether the source has reported a watermark
	demand        int64
	epochs        []*epoch          // ascending logical time
	ready         []*PublishedBatch // ascending logical time, then bytes
	digest        string
	head, tail    []byte // canonical pieces around the epochs and batches
	middle        []byte
	// snaps holds the SHA-256 state of the state preimage after each piece
	// that precedes the tail (see hashPreimage), snapSize bytes apiece; nil
	// if the hash could not be saved.
	snaps []byte
	// ownMarks says marks and known are this header's alone, written in
	// place by the next advance: only a state Publish steps through in
	// its own headers, which nothing else holds and which is dead once
	// the state after it is made.
	ownMarks bool
}

// InitialState is the state before any command: every source frontier
// null, no demand, nothing open or ready.
func InitialState(p Profile) *State {
	s := &State{
		profileDigest: p.digest,
		dataflow:      p.dataflow,
		sources:       p.sources,
		marks:         make([]int64, len(p.sources)),
		known:         make([]bool, len(p.sources)),
	}
	s.seal(nil, newHasher())
	return s
}

// GlobalLowWatermark is the minimum source watermark, or ok=false while any
// declared source has not reported.
func (s *State) GlobalLowWatermark() (int64, bool) { return globalMark(s.marks, s.known) }

func globalMark(marks []int64, known []bool) (int64, bool) {
	var low int64
	for i, m := range marks {
		if !known[i] {
			return 0, false
		}
		if i == 0 || m < low {
			low = m
		}
	}
	return low, len(marks) > 0
}

// SourceWatermark reports one source's low watermark.
func (s *State) SourceWatermark(sourceID string) (mark int64, reported, declared bool) {
	i, ok := slices.BinarySearch(s.sources, sourceID)
	if !ok {
		return 0, false, false
	}
	return s.marks[i], s.known[i], true
}

// OutstandingDemand is the number of whole batches a consumer may still take.
func (s *State) OutstandingDemand() int64 { return s.demand }

// OpenEpochs lists the logical times of open epochs, ascending.
func (s *State) OpenEpochs() []int64 {
	out := make([]int64, len(s.epochs))
	for i, e := range s.epochs {
		out[i] = e.time
	}
	return out
}

// ReadyBatches returns the stabilized batches waiting for demand, in
// publication order.
func (s *State) ReadyBatches() []*PublishedBatch { return slices.Clone(s.ready) }

// ActiveValueCount counts values in open epochs and ready batches.
func (s *State) ActiveValueCount() int {
	n := 0
	for _, e := range s.epochs {
		n += len(e.values)
	}
	for _, r := range s.ready {
		n += r.valueCount()
	}
	return n
}

// Digest is the state_digest.
func (s *State) Digest() string { return s.digest }

// MarshalJSON writes the canonical RReactiveState.
func (s *State) MarshalJSON() ([]byte, error) { return s.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical RReactiveState bytes to b.
func (s *State) AppendCanonical(b []byte) []byte {
	s.writeOpen(func(p []byte) { b = append(b, p...) })
	b = appendKey(b, "state_digest", false)
	b = appendString(b, s.digest)
	return append(b, '}')
}

// canonicalSize is the length of AppendCanonical's output.
func (s *State) canonicalSize() int {
	n := len(s.head) + len(s.middle) + len(s.tail) + len(`,"state_digest":""`) + 71
	for _, e := range s.epochs {
		n += e.size + 1
	}
	for _, r := range s.ready {
		n += r.canonicalLen() + 1
	}
	return n
}

// writeBody emits the canonical state without its state_digest member, in
// pieces: the epochs and batches are written from their cached bytes, so a
// state is hashed without being assembled.
func (s *State) writeBody(w func([]byte)) {
	s.writeOpen(w)
	w(closeBrace)
}

// writeOpen is writeBody without the closing brace, so that a state_digest
// member can follow.
func (s *State) writeOpen(w func([]byte)) {
	w(s.head)
	for i, e := range s.epochs {
		if i > 0 {
			w(comma)
		}
		e.write(w)
	}
	w(s.middle)
	for i, r := range s.ready {
		if i > 0 {
			w(comma)
		}
		w(r.canonical())
	}
	w(s.tail[:len(s.tail)-1])
}

var comma, closeBrace, closeArray = []byte{','}, []byte{'}'}, []byte{']', '}'}

// seal builds the small canonical pieces and computes the state digest.
// prior, if not nil, is a state whose saved hash states may be reused for
// the preimage prefix the two share, and whose pieces are reused where
// what they spell did not change: a delta batch changes no piece, a grant
// only the middle, an advance the tail and, when the global watermark
// moves, the head. The pieces are never written after seal, so sharing
// them shares equal bytes.
func (s *State) seal(prior *State, h *hasher) {
	low, ok := s.GlobalLowWatermark()
	if prior != nil && prior.dataflow == s.dataflow {
		if plow, pok := prior.GlobalLowWatermark(); plow == low && pok == ok {
			s.head = prior.head
		}
	}
	if s.head == nil {
		b := make([]byte, 0, 256)
		b = append(b, '{')
		b = appendVersions(b, s.dataflow)
		b = appendKey(b, "global_low_watermark", false)
		b = appendNullableInt(b, low, ok)
		b = appendKey(b, "kind", false)
		b = appendString(b, "RReactiveState")
		b = appendKey(b, "open_epochs", false)
		s.head = append(b, '[')
	}
	if prior != nil && prior.demand == s.demand && prior.profileDigest == s.profileDigest {
		s.middle = prior.middle
	} else {
		m := make([]byte, 0, 256)
		m = append(m, ']')
		m = appendKey(m, "outstanding_demand", false)
		m = appendInt(m, s.demand)
		m = appendKey(m, "profile_digest", false)
		m = appendString(m, s.profileDigest)
		m = appendKey(m, "profile_id", false)
		m = appendString(m, ProfileID)
		m = appendKey(m, "ready_batches", false)
		s.middle = append(m, '[')
	}
	if prior != nil && slices.Equal(prior.sources, s.sources) && slices.Equal(prior.marks, s.marks) && slices.Equal(prior.known, s.known) {
		s.tail = prior.tail
	} else {
		t := make([]byte, 0, 128+96*len(s.sources))
		t = append(t, ']')
		t = appendKey(t, "schema_version", false)
		t = appendString(t, StateSchema)
		t = appendKey(t, "source_frontiers", false)
		t = appendSourceFrontiers(t, s.sources, s.marks, s.known)
		s.tail = append(t, '}')
	}
	s.digest = s.hashPreimage(prior, h)
}

var statePreimageOpen = []byte(`{"contract_version":"` + ContractVersion + `","kind":"M3StatePreimage","state_without_state_digest":`)

// The M3StatePreimage is streamed in pieces: piece 0 is the preimage's
// opening and the state's head (through "open_epochs":[), then one piece per
// open epoch (with its separating comma), then the middle (through
// "ready_batches":[), then one piece per ready batch, then the tail. The
// hash state after every piece but the tail is saved in snaps, so that a
// successor sharing the first k pieces resumes after them instead of
// hashing them again. Epochs and batches are immutable and shared between
// a state and its successor, so pointer equality means equal bytes.

// pieceCount is the number of pieces before the tail.
func (s *State) pieceCount() int { return 2 + len(s.epochs) + len(s.ready) }

// writePiece writes piece i (i < pieceCount).
func (s *State) writePiece(h *hasher, i int) {
	ne := len(s.epochs)
	switch {
	case i == 0:
		h.bytes(statePreimageOpen)
		h.bytes(s.head)
	case i <= ne:
		if i > 1 {
			h.bytes(comma)
		}
		s.epochs[i-1].write(h.bytes)
	case i == ne+1:
		h.bytes(s.middle)
	default:
		j := i - ne - 2
		if j > 0 {
			h.bytes(comma)
		}
		h.bytes(s.ready[j].canonical())
	}
}

// sharedPieces counts the leading pieces of s's preimage that are
// byte-identical to p's and that p has saved hash states for.
func sharedPieces(p, s *State) int {
	if p == nil || p.snaps == nil || !bytes.Equal(p.head, s.head) {
		return 0
	}
	k := 1
	n := min(len(p.epochs), len(s.epochs))
	for i := 0; i < n; i++ {
		if p.epochs[i] != s.epochs[i] {
			return k
		}
		k++
	}
	if len(p.epochs) != len(s.epochs) || !bytes.Equal(p.middle, s.middle) {
		return k
	}
	k++
	n = min(len(p.ready), len(s.ready))
	for i := 0; i < n; i++ {
		if p.ready[i] != s.ready[i] {
			return k
		}
		k++
	}
	return k
}

// hashPreimage computes the state digest, resuming from prior's saved hash
// state where the two preimages share their leading pieces.
func (s *State) hashPreimage(prior *State, h *hasher) string {
	h.reset()
	n := s.pieceCount()
	s.snaps = make([]byte, n*snapSize)
	k := sharedPieces(prior, s)
	if k > 0 && !h.restore(prior.snaps[(k-1)*snapSize:k*snapSize]) {
		k = 0
	}
	copy(s.snaps, prior.snapsPrefix(k))
	for i := k; i < n; i++ {
		s.writePiece(h, i)
		if s.snaps != nil && !h.save(s.snaps[i*snapSize:(i+1)*snapSize]) {
			s.snaps = nil
		}
	}
	h.bytes(s.tail)
	h.bytes(closeBrace)
	return h.digest()
}

// snapsPrefix returns the saved hash states of the first k pieces.
func (s *State) snapsPrefix(k int) []byte {
	if k == 0 {
		return nil
	}
	return s.snaps[:k*snapSize]
}

// appendSourceFrontiers writes the RSourceFrontier set. The set is ordered by
// each member's canonical bytes, and a member's watermark precedes its
// source id in those bytes, so the order depends on the watermarks' decimal
// spelling (10 sorts before 9, numbers before null).
func appendSourceFrontiers(b []byte, sources []string, marks []int64, known []bool) []byte {
	// Write every member into one buffer, then order the spans.
	buf := make([]byte, 0, 96*len(sources))
	spans := make([][2]int, len(sources))
	for i, id := range sources {
		start := len(buf)
		buf = append(buf, '{')
		buf = appendKey(buf, "kind", true)
		buf = appendString(buf, "RSourceFrontier")
		buf = appendKey(buf, "low_watermark", false)
		buf = appendNullableInt(buf, marks[i], known[i])
		buf = appendKey(buf, "source_id", false)
		buf = appendString(buf, id)
		buf = append(buf, '}')
		spans[i] = [2]int{start, len(buf)}
	}
	slices.SortFunc(spans, func(x, y [2]int) int { return bytes.Compare(buf[x[0]:x[1]], buf[y[0]:y[1]]) })
	b = append(b, '[')
	for i, sp := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, buf[sp[0]:sp[1]]...)
	}
	return append(b, ']')
}
