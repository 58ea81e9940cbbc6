package frontier

import (
	"crypto/sha256"
	"slices"

	"flrh.dev/flrh/cjson"
)

// ValueDelta is one sealed RValueDelta: a signed delivery of a value from a
// declared source at a logical time. Its value digest and delivery id are
// derived once, when it is built, exactly as the contract says; callers
// cannot choose them. Its delta digest is derived from its canonical bytes
// where it is read (Digest, a transition's command digest): a delta that is
// only published, as a workflow tick's, never needs it.
type ValueDelta struct {
	sourceID    string
	logicalTime int64
	diff        int8
	dataflow    string
	value       Value
	deliveryID  string // "" only in the zero ValueDelta
}

// NewValueDelta builds the delta that delivers v from sourceID at
// logicalTime with diff +1 (insert) or -1 (retract).
func NewValueDelta(sourceID string, logicalTime int64, diff int, dataflowVersion string, v Value) (ValueDelta, *Rejection) {
	switch {
	case !cjson.ValidID(sourceID):
		return ValueDelta{}, reject(CodeUnknownFrontierSource, "/source_id")
	case logicalTime < 0:
		return ValueDelta{}, reject(CodeMalformedValueDelta, "/logical_time")
	case diff != 1 && diff != -1:
		return ValueDelta{}, reject(CodeMalformedValueDelta, "/diff")
	case !cjson.ValidVersion(dataflowVersion):
		return ValueDelta{}, reject(CodeMalformedValueDelta, "/dataflow_version")
	case !v.sealed():
		return ValueDelta{}, reject(CodeMalformedValueDelta, "/value")
	}
	var id [deliveryIDLen]byte
	putDeliveryID(&id, deliverySum(sourceID, logicalTime, dataflowVersion, v.kind, v.digest))
	return ValueDelta{sourceID: sourceID, logicalTime: logicalTime, diff: int8(diff), dataflow: dataflowVersion, value: v,
		deliveryID: string(id[:])}, nil
}

// SourceID names the source frontier the delta belongs to.
func (d ValueDelta) SourceID() string { return d.sourceID }

// LogicalTime is the delta's epoch.
func (d ValueDelta) LogicalTime() int64 { return d.logicalTime }

// Diff is +1 or -1.
func (d ValueDelta) Diff() int { return int(d.diff) }

// Value is the carried protocol value.
func (d ValueDelta) Value() Value { return d.value }

// DeliveryID is delivery:<hex of the M3DeliveryPreimage digest>.
func (d ValueDelta) DeliveryID() string { return d.deliveryID }

// Digest is the sha256 of the canonical RValueDelta.
// Digest is the delta digest: SHA-256 over the canonical RValueDelta,
// derived at each call ("" for the zero ValueDelta).
func (d ValueDelta) Digest() string {
	if d.deliveryID == "" {
		return ""
	}
	return cjson.DigestWritten(d.appendCanonical)
}

// Retraction returns the -1 delta that retracts d's delivery.
func (d ValueDelta) Retraction() ValueDelta {
	r, _ := NewValueDelta(d.sourceID, d.logicalTime, -1, d.dataflow, d.value)
	return r
}

// deliveryDigests digests delivery preimages, which open with the same
// contract version, dataflow version, kind, logical time and source id
// call after call, from a kept SHA-256 state (cjson.Prefix).
var deliveryDigests cjson.Prefix

// DeliveryID derives the delivery identity from its preimage.
func DeliveryID(sourceID string, logicalTime int64, dataflowVersion string, kind ValueKind, valueDigest string) string {
	// delivery:<hex>, spelled in one string rather than cut from a digest.
	var out [deliveryIDLen]byte
	putDeliveryID(&out, deliverySum(sourceID, logicalTime, dataflowVersion, kind, valueDigest))
	return string(out[:])
}

// deliveryIDLen is the length of a delivery id: "delivery:" and the hex
// digits of its preimage's SHA-256 sum.
const deliveryIDLen = len("delivery:") + 2*sha256.Size

// putDeliveryID spells a delivery id from its preimage's sum.
func putDeliveryID(out *[deliveryIDLen]byte, sum [sha256.Size]byte) {
	copy(out[:], "delivery:")
	cjson.HexSum((*[2 * sha256.Size]byte)(out[len("delivery:"):]), &sum)
}

// deliverySum is the SHA-256 sum of a delivery's preimage.
func deliverySum(sourceID string, logicalTime int64, dataflowVersion string, kind ValueKind, valueDigest string) [sha256.Size]byte {
	return deliveryDigests.SumWritten(func(b []byte) []byte {
		b = append(b, '{')
		b = appendKey(b, "contract_version", true)
		b = appendString(b, ContractVersion)
		b = appendKey(b, "dataflow_version", false)
		b = appendString(b, dataflowVersion)
		b = appendKey(b, "kind", false)
		b = appendString(b, "M3DeliveryPreimage")
		b = appendKey(b, "logical_time", false)
		b = appendInt(b, logicalTime)
		b = appendKey(b, "source_id", false)
		b = appendString(b, sourceID)
		b = appendKey(b, "value_digest", false)
		b = appendString(b, valueDigest)
		b = appendKey(b, "value_kind", false)
		b = appendString(b, string(kind))
		return append(b, '}')
	})
}

// appendCanonical appends the canonical RValueDelta d. Its delivery id
// is plain ASCII (putDeliveryID), written as cjson.AppendChecked writes
// it.
func (d *ValueDelta) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	b = appendKey(b, "dataflow_version", true)
	b = cjson.AppendChecked(b, d.dataflow)
	b = appendKey(b, "delivery_id", false)
	b = append(b, '"')
	b = append(b, d.deliveryID...)
	b = append(b, '"')
	b = appendKey(b, "diff", false)
	b = appendInt(b, int64(d.diff))
	b = appendKey(b, "kind", false)
	b = cjson.AppendChecked(b, "RValueDelta")
	b = appendKey(b, "logical_time", false)
	b = appendInt(b, d.logicalTime)
	b = appendKey(b, "schema_version", false)
	b = cjson.AppendChecked(b, ValueDeltaSchema)
	b = appendKey(b, "source_id", false)
	b = cjson.AppendChecked(b, d.sourceID)
	b = appendKey(b, "value", false)
	b = append(b, d.value.canon...)
	b = appendKey(b, "value_digest", false)
	b = cjson.AppendChecked(b, d.value.digest)
	b = appendKey(b, "value_kind", false)
	b = cjson.AppendChecked(b, string(d.value.kind))
	return append(b, '}')
}

// MarshalJSON writes the canonical RValueDelta.
func (d ValueDelta) MarshalJSON() ([]byte, error) { return d.appendCanonical(nil), nil }

// Command is one of ApplyDeltaBatch, AdvanceFrontier or GrantDemand.
type Command interface {
	commandKind() string
	base() (profileDigest, dataflowVersion string)
}

// ApplyDeltaBatch (RApplyDeltaBatch) applies signed value deltas. The order
// of Deltas never matters: the batch is a set.
type ApplyDeltaBatch struct {
	ProfileDigest   string
	DataflowVersion string
	Deltas          []ValueDelta
}

// AdvanceFrontier (RAdvanceFrontier) asserts that SourceID will deliver
// nothing earlier than LowWatermark.
type AdvanceFrontier struct {
	ProfileDigest   string
	DataflowVersion string
	SourceID        string
	LowWatermark    int64
}

// GrantDemand (RGrantDemand) lets a consumer take Batches more whole batches.
type GrantDemand struct {
	ProfileDigest   string
	DataflowVersion string
	Batches         int64
}

func (ApplyDeltaBatch) commandKind() string { return "RApplyDeltaBatch" }
func (AdvanceFrontier) commandKind() string { return "RAdvanceFrontier" }
func (GrantDemand) commandKind() string     { return "RGrantDemand" }

func (c ApplyDeltaBatch) base() (string, string) { return c.ProfileDigest, c.DataflowVersion }
func (c AdvanceFrontier) base() (string, string) { return c.ProfileDigest, c.DataflowVersion }
func (c GrantDemand) base() (string, string)     { return c.ProfileDigest, c.DataflowVersion }

// commandDigest hashes the M3CommandPreimage. For a delta batch the caller
// passes the sorted, de-duplicated delta digests. A large batch's preimage
// (74 bytes per digest) goes to SHA-256 through a 4 KB buffer, so it is
// never assembled in memory; a small one is hashed in one piece.
func commandDigest(c Command, deltaDigests []string, h *hasher) string {
	const chunk = 4096
	if size := 512 + 74*len(deltaDigests); size <= chunk {
		b := appendCommandPreimage(h.scratch(size), c, deltaDigests, nil)
		h.keep(b)
		return digestOf(b)
	}
	h.reset()
	flush := func(b []byte) []byte {
		if len(b) < chunk-256 {
			return b
		}
		h.bytes(b)
		return b[:0]
	}
	b := appendCommandPreimage(h.scratch(chunk), c, deltaDigests, flush)
	h.keep(b)
	h.bytes(b)
	return h.digest()
}

// appendCommandPreimage writes the M3CommandPreimage. flush, if not nil, is
// called between delta digests and returns the buffer to keep appending to.
func appendCommandPreimage(b []byte, c Command, deltaDigests []string, flush func([]byte) []byte) []byte {
	pd, df := c.base()
	b = append(b, '{')
	if g, ok := c.(GrantDemand); ok {
		b = appendKey(b, "batches", true)
		b = appendInt(b, g.Batches)
		b = appendKey(b, "command_kind", false)
	} else {
		b = appendKey(b, "command_kind", true)
	}
	b = appendString(b, c.commandKind())
	b = appendKey(b, "contract_version", false)
	b = appendString(b, ContractVersion)
	b = appendKey(b, "dataflow_version", false)
	b = appendString(b, df)
	b = appendKey(b, "kind", false)
	b = appendString(b, "M3CommandPreimage")
	switch x := c.(type) {
	case ApplyDeltaBatch:
		b = appendKey(b, "ordered_value_delta_digests", false)
		b = append(b, '[')
		for i, d := range deltaDigests {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, d)
			if flush != nil {
				b = flush(b)
			}
		}
		b = append(b, ']')
		b = appendKey(b, "profile_digest", false)
		b = appendString(b, pd)
	case AdvanceFrontier:
		b = appendKey(b, "low_watermark", false)
		b = appendInt(b, x.LowWatermark)
		b = appendKey(b, "profile_digest", false)
		b = appendString(b, pd)
		b = appendKey(b, "source_id", false)
		b = appendString(b, x.SourceID)
	default:
		b = appendKey(b, "profile_digest", false)
		b = appendString(b, pd)
	}
	return append(b, '}')
}

// appendCommand appends the canonical wire form of the command. Deltas are
// written in canonical (digest-sorted) order.
func appendCommand(b []byte, c Command) []byte {
	if x, ok := c.(ApplyDeltaBatch); ok {
		return appendDeltaBatch(b, &x)
	}
	pd, df := c.base()
	b = append(b, '{')
	switch x := c.(type) {
	case AdvanceFrontier:
		b = appendKey(b, "dataflow_version", true)
		b = appendString(b, df)
	case GrantDemand:
		b = appendKey(b, "batches", true)
		b = appendInt(b, x.Batches)
		b = appendKey(b, "dataflow_version", false)
		b = appendString(b, df)
	}
	b = appendKey(b, "kind", false)
	b = appendString(b, c.commandKind())
	if x, ok := c.(AdvanceFrontier); ok {
		b = appendKey(b, "low_watermark", false)
		b = appendInt(b, x.LowWatermark)
	}
	b = appendKey(b, "profile_digest", false)
	b = appendString(b, pd)
	b = appendKey(b, "schema_version", false)
	b = appendString(b, CommandSchema)
	if x, ok := c.(AdvanceFrontier); ok {
		b = appendKey(b, "source_id", false)
		b = appendString(b, x.SourceID)
	}
	return append(b, '}')
}

// appendDeltas appends a command's deltas as a list in canonical
// (digest-sorted) order.
func appendDeltas(b []byte, deltas []ValueDelta) []byte {
	b = append(b, '[')
	byCanon := func(a, b *ValueDelta) int { return compareDeltaCanon(a, b) }
	if slices.IsSortedFunc(deltas, func(a, b ValueDelta) int { return byCanon(&a, &b) }) {
		// Already in canonical order, as a set written out before
		// usually is: nothing to sort or copy.
		for i := range deltas {
			if i > 0 {
				b = append(b, ',')
			}
			b = deltas[i].appendCanonical(b)
		}
	} else {
		// Sort pointers, not the deltas themselves.
		ds := make([]*ValueDelta, len(deltas))
		for i := range deltas {
			ds[i] = &deltas[i]
		}
		slices.SortFunc(ds, byCanon)
		for i, d := range ds {
			if i > 0 {
				b = append(b, ',')
			}
			b = d.appendCanonical(b)
		}
	}
	b = append(b, ']')
	return b
}

// compareDeltaCanon orders deltas by canonical bytes. Every canonical
// RValueDelta starts with its dataflow version then its delivery id, and
// the diff follows; within one dataflow version that prefix decides.
func compareDeltaCanon(a, b *ValueDelta) int {
	if c := compareCanonString(a.dataflow, b.dataflow); c != 0 {
		return c
	}
	if a.deliveryID != b.deliveryID {
		if a.deliveryID < b.deliveryID {
			return -1
		}
		return 1
	}
	// "-1" sorts before "1".
	return int(a.diff) - int(b.diff)
}

// compareCanonString orders two id-or-version strings by their canonical
// encodings. Both alphabets sort above the closing quote, so plain byte
// order agrees with encoded order.
func compareCanonString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// EncodeCommand returns the canonical wire bytes of c.
func EncodeCommand(c Command) []byte { return appendCommand(make([]byte, 0, commandSize(c)), c) }

// AppendCommand appends the canonical wire bytes of c to b, for a caller
// that embeds them in a larger document and would otherwise copy them.
func AppendCommand(b []byte, c Command) []byte {
	if n := commandSize(c); cap(b)-len(b) < n {
		b = append(make([]byte, 0, len(b)+n), b...)
	}
	return appendCommand(b, c)
}

// AppendDeltaBatch is AppendCommand(b, *c): the same bytes, for a caller
// that holds the command by pointer, so that it is not copied into a
// Command to be written.
func AppendDeltaBatch(b []byte, c *ApplyDeltaBatch) []byte {
	if n := deltaBatchSize(c.Deltas); cap(b)-len(b) < n {
		b = append(make([]byte, 0, len(b)+n), b...)
	}
	return appendDeltaBatch(b, c)
}

// appendDeltaBatch appends the canonical wire form of a delta batch, its
// deltas in canonical (digest-sorted) order: appendCommand's for an
// ApplyDeltaBatch.
func appendDeltaBatch(b []byte, c *ApplyDeltaBatch) []byte {
	b = append(b, '{')
	b = appendKey(b, "dataflow_version", true)
	b = appendString(b, c.DataflowVersion)
	b = appendKey(b, "deltas", false)
	b = appendDeltas(b, c.Deltas)
	b = appendKey(b, "kind", false)
	b = appendString(b, c.commandKind())
	b = appendKey(b, "profile_digest", false)
	b = appendString(b, c.ProfileDigest)
	b = appendKey(b, "schema_version", false)
	b = appendString(b, CommandSchema)
	return append(b, '}')
}

// commandSize is an upper estimate of a command's wire length, so that the
// buffer it is written to is allocated once: a delta's members other than
// its value take under 400 bytes for identifiers and versions of ordinary
// length.
func commandSize(c Command) int {
	if x, ok := c.(ApplyDeltaBatch); ok {
		return deltaBatchSize(x.Deltas)
	}
	return 384
}

// deltaBatchSize is commandSize for an ApplyDeltaBatch of these deltas.
func deltaBatchSize(deltas []ValueDelta) int {
	n := 384
	for i := range deltas {
		d := &deltas[i]
		n += 400 + len(d.sourceID) + len(d.dataflow)
		if d.value.sealed() {
			n += len(d.value.canon)
		}
	}
	return n
}
