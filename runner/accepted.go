package runner

import (
	"encoding/json"
	"errors"
	"fmt"

	"flrh.dev/flrh/cjson"
)

// ErrInputNotCanonical reports an accepted-input record whose input is not
// canonical JSON, so it cannot carry the digest it was recorded under.
var ErrInputNotCanonical = errors.New("the recorded input is not canonical JSON")

// acceptedRecord is the body of an EventAccepted event, as accept writes it.
type acceptedRecord struct {
	Seq        int64           `json:"seq"`
	Kind       string          `json:"kind"`
	Actor      string          `json:"actor"`
	ActorRole  string          `json:"actor_role"`
	Capability string          `json:"capability"`
	Digest     string          `json:"digest"`
	Body       json.RawMessage `json:"body"`
	Usage      *Usage          `json:"usage,omitempty"`
}

// DecodeAccepted reads the body of an EventAccepted event back into the
// input the workflow was handed, its body in canonical bytes. Whoever
// re-decides a run from its record (replay, provenance) reads inputs here,
// beside the one place that writes them. It does not check the input's
// digest: that is the caller's judgement of the record.
func DecodeAccepted(event []byte) (Accepted, error) {
	var rec acceptedRecord
	if err := json.Unmarshal(event, &rec); err != nil {
		return Accepted{}, err
	}
	body, err := cjson.Canonicalize(rec.Body)
	if err != nil {
		return Accepted{}, fmt.Errorf("%w: %v", ErrInputNotCanonical, err)
	}
	return Accepted{Seq: rec.Seq, Kind: rec.Kind, Body: body, Digest: rec.Digest, Actor: rec.Actor,
		ActorRole: rec.ActorRole, Capability: rec.Capability, Usage: rec.Usage}, nil
}

// encodeAccepted writes the body of an EventAccepted event: the input's
// identity, its usage report if one came, and its body embedded. An input's
// body is canonical bytes already, so the record is written member by
// member around them, and then checked to be canonical as a whole
// (cjson.IsCanonical: one pass, nothing built), which holds exactly when
// the general path, decoding the body into the record and encoding it all,
// would write these same bytes. A receipt's body, whose own kind names a
// set, is checked where it is embedded, where no member is a set. Decoding
// the body only to encode it again cost more than the rest of accepting
// it. Anything the check refuses (a body not canonical, nested too deep
// once embedded, a string that is not NFC) takes the general path, which
// refuses what it must. A body the runner proved canonical itself (body,
// the proof of in.Body's very bytes: a pending receipt's) is not checked
// again: then the record is canonical when its strings are (Members checks
// them), the body fits within the nesting limit one container deep, and
// the record's kind names no set-like members.
func encodeAccepted(in Accepted, body canonJSON) ([]byte, error) {
	b := make([]byte, 0, len(in.Body)+len(in.Actor)+len(in.ActorRole)+len(in.Capability)+len(in.Digest)+len(in.Kind)+160)
	if b, ok := appendAccepted(b, in, body); ok {
		return b, nil
	}
	// The general path reports the refusal as it always has.
	return encodeAcceptedValue(in)
}

// appendAccepted appends to b the bytes encodeAccepted returns, when its
// member writer writes them (ok); otherwise what it appended is of no use
// and encodeAcceptedValue says what they are. b's bytes before its length
// are left as they were.
func appendAccepted(b []byte, in Accepted, body canonJSON) ([]byte, bool) {
	// Members in sorted order: actor, actor_role, body, capability,
	// digest, kind, seq, usage.
	start := len(b)
	w := cjson.Members{B: b}
	w.Open()
	w.Str("actor", in.Actor)
	w.Str("actor_role", in.ActorRole)
	w.Key("body")
	w.B = append(w.B, in.Body...)
	w.Str("capability", in.Capability)
	w.Str("digest", in.Digest)
	w.Str("kind", in.Kind)
	w.Int("seq", in.Seq)
	if in.Usage != nil {
		w.Key("usage")
		w.Open()
		w.Int("cost_micros", in.Usage.CostMicros)
		w.Int("tokens", in.Usage.Tokens)
		w.Close()
	}
	w.Close()
	proved := body.vouches(in.Body) && body.fitsAt(1) && cjson.SetLikePaths(in.Kind) == nil
	return w.B, w.Err == nil && (proved || cjson.IsCanonical(w.B[start:]))
}

// encodeAcceptedValue is encodeAccepted through the value model: the
// record as a map, the body decoded into it, all of it encoded.
func encodeAcceptedValue(in Accepted) ([]byte, error) {
	rec := map[string]any{"seq": in.Seq, "kind": in.Kind, "actor": in.Actor, "digest": in.Digest,
		"actor_role": in.ActorRole, "capability": in.Capability}
	if in.Usage != nil {
		rec["usage"] = map[string]any{"tokens": in.Usage.Tokens, "cost_micros": in.Usage.CostMicros}
	}
	v, err := canonValue(in.Body)
	if err != nil {
		return nil, err
	}
	rec["body"] = v
	return cjson.Marshal(rec)
}
