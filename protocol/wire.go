package protocol

import (
	"encoding/json"

	"flrh.dev/flrh/cjson"
)

// Wire is implemented by every wire object type of this package.
type Wire interface {
	// WireKind returns the kind member value of the type.
	WireKind() string
}

func (AcceptedEvent) WireKind() string              { return KindAcceptedEvent }
func (FactDelta) WireKind() string                  { return KindFactDelta }
func (EffectProposal) WireKind() string             { return KindEffectProposal }
func (EligibilityVerdict) WireKind() string         { return KindEligibilityVerdict }
func (StableProposalBatch) WireKind() string        { return KindStableProposalBatch }
func (EffectIntent) WireKind() string               { return KindEffectIntent }
func (ActionReceipt) WireKind() string              { return KindActionReceipt }
func (GraphEnvelope) WireKind() string              { return KindGraphEnvelope }
func (GraphDelta) WireKind() string                 { return KindGraphDelta }
func (ResolvedCompositionReceipt) WireKind() string { return KindResolvedCompositionReceipt }

// Decode validates jsonText as a T (see Validate) and decodes it. On any
// failure it returns the zero T and the validation error.
func Decode[T Wire](jsonText []byte) (T, error) {
	var zero, out T
	if err := Validate(zero.WireKind(), jsonText); err != nil {
		return zero, err
	}
	if err := json.Unmarshal(jsonText, &out); err != nil {
		// Unreachable for text that passed Validate; reported, not hidden.
		return zero, errorf(zero.WireKind(), CodeSchema, "/", "decode: %v", err)
	}
	return out, nil
}

// Check validates a Go value of a wire type exactly as Validate validates
// its canonical JSON. Producers call it before handing an object across a
// boundary, so that nothing the runtime emits could be refused on re-read.
func Check(w Wire) error {
	b, err := cjson.Marshal(w)
	if err != nil {
		return err
	}
	v, err := cjson.Decode(b)
	if err != nil {
		return err
	}
	return ValidateValue(w.WireKind(), v)
}

// Canonical returns the flrh-cjson/1 bytes of a wire object. The object is
// validated first: an invalid object has no canonical form here.
func Canonical(w Wire) ([]byte, error) {
	if err := Check(w); err != nil {
		return nil, err
	}
	return cjson.Marshal(w)
}

// Digest returns the sha256 digest of the canonical bytes of a valid wire object.
func Digest(w Wire) (string, error) {
	b, err := Canonical(w)
	if err != nil {
		return "", err
	}
	return cjson.Digest(b), nil
}

// KindOf returns the kind member of a JSON object, for callers that route
// objects of several kinds. It reports an error for anything else.
func KindOf(jsonText []byte) (string, error) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return "", err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", errorf("", CodeNotObject, "/", "a wire object must be a JSON object")
	}
	k, ok := obj["kind"].(string)
	if !ok {
		return "", errorf("", CodeMissingField, "/kind", "a wire object has a string kind member")
	}
	if !KnownKind(k) {
		return "", errorf(k, CodeUnknownKind, "/kind", "%q is not a wire kind of protocol v1", k)
	}
	return k, nil
}
