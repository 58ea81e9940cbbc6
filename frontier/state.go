package frontier

import (
	"bytes"
	"slices"
)

// storedValue is an RStoredValue: an active delivery in an open epoch.
type storedValue struct {
	deliveryID  string
	sourceID    string
	logicalTime int64
	value       Value
}

func (s *storedValue) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = appendKey(b, "delivery_id", true)
	b = appendString(b, s.deliveryID)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RStoredValue")
	b = appendKey(b, "logical_time", false)
	b = appendInt(b, s.logicalTime)
	b = appendKey(b, "source_id", false)
	b = appendString(b, s.sourceID)
	b = appendKey(b, "value", false)
	b = append(b, s.value.canon...)
	b = appendKey(b, "value_digest", false)
	b = appendString(b, s.value.digest)
	b = appendKey(b, "value_kind", false)
	b = appendString(b, string(s.value.kind))
	return append(b, '}')
}

// epoch is an ROpenEpoch. Its values are in delivery-id order, which is the
// canonical-byte order of RStoredValue. An epoch is never modified once it
// is part of a State; a transition that changes it builds a new one.
type epoch struct {
	time   int64
	values []*storedValue
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
	body          []byte // canonical bytes without state_digest, for hashing
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
	s.seal()
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
	b = append(b, s.body[:len(s.body)-1]...)
	b = appendKey(b, "state_digest", false)
	b = appendString(b, s.digest)
	return append(b, '}')
}

// canonicalSize is the length of AppendCanonical's output.
func (s *State) canonicalSize() int { return len(s.body) + len(`,"state_digest":""`) + 71 }

// seal computes the canonical body and the state digest.
func (s *State) seal() {
	size := 1024 + 128*len(s.sources)
	for _, e := range s.epochs {
		for _, v := range e.values {
			size += len(v.value.canon) + 320
		}
	}
	for _, r := range s.ready {
		size += len(r.canon) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	b = appendKey(b, "canonicalization_version", true)
	b = appendString(b, Canonicalization)
	b = appendKey(b, "contract_version", false)
	b = appendString(b, ContractVersion)
	b = appendKey(b, "dataflow_version", false)
	b = appendString(b, s.dataflow)
	b = appendKey(b, "global_low_watermark", false)
	low, ok := s.GlobalLowWatermark()
	b = appendNullableInt(b, low, ok)
	b = appendKey(b, "kind", false)
	b = appendString(b, "RReactiveState")
	b = appendKey(b, "open_epochs", false)
	b = append(b, '[')
	for i, e := range s.epochs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendKey(b, "kind", true)
		b = appendString(b, "ROpenEpoch")
		b = appendKey(b, "logical_time", false)
		b = appendInt(b, e.time)
		b = appendKey(b, "values", false)
		b = append(b, '[')
		for j, v := range e.values {
			if j > 0 {
				b = append(b, ',')
			}
			b = v.appendCanonical(b)
		}
		b = append(b, ']', '}')
	}
	b = append(b, ']')
	b = appendKey(b, "outstanding_demand", false)
	b = appendInt(b, s.demand)
	b = appendKey(b, "profile_digest", false)
	b = appendString(b, s.profileDigest)
	b = appendKey(b, "profile_id", false)
	b = appendString(b, ProfileID)
	b = appendKey(b, "ready_batches", false)
	b = append(b, '[')
	for i, r := range s.ready {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.canon...)
	}
	b = append(b, ']')
	b = appendKey(b, "schema_version", false)
	b = appendString(b, StateSchema)
	b = appendKey(b, "source_frontiers", false)
	b = appendSourceFrontiers(b, s.sources, s.marks, s.known)
	b = append(b, '}')
	s.body = b
	h := newHasher()
	h.str(`{"contract_version":"` + ContractVersion + `","kind":"M3StatePreimage","state_without_state_digest":`)
	h.bytes(b)
	h.str(`}`)
	s.digest = h.digest()
}

// appendSourceFrontiers writes the RSourceFrontier set. The set is ordered by
// each member's canonical bytes, and a member's watermark precedes its
// source id in those bytes, so the order depends on the watermarks' decimal
// spelling (10 sorts before 9, numbers before null).
func appendSourceFrontiers(b []byte, sources []string, marks []int64, known []bool) []byte {
	members := make([][]byte, len(sources))
	for i, id := range sources {
		var m []byte
		m = append(m, '{')
		m = appendKey(m, "kind", true)
		m = appendString(m, "RSourceFrontier")
		m = appendKey(m, "low_watermark", false)
		m = appendNullableInt(m, marks[i], known[i])
		m = appendKey(m, "source_id", false)
		m = appendString(m, id)
		members[i] = append(m, '}')
	}
	slices.SortFunc(members, bytes.Compare)
	b = append(b, '[')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}
