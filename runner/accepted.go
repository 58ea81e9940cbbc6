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
