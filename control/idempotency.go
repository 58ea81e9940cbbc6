package control

import "flrh.dev/flrh/cjson"

// IdempotencyVersion is the domain tag of an idempotency key preimage.
const IdempotencyVersion = "flrh-idempotency-key/1"

// IdempotencyPrefix starts every idempotency key.
const IdempotencyPrefix = "idem:"

// KeyInput is the preimage of an effect's idempotency key: the same logical
// effect of the same run always gets the same key, across retries, crashes
// and runner processes; anything else gets a different one.
type KeyInput struct {
	RunID          string `json:"run_id"`
	TransitionID   string `json:"transition_id"`
	EffectSequence int64  `json:"effect_sequence"`
	ActionDigest   string `json:"action_digest"`
	AdapterVersion string `json:"adapter_version"`
}

// IdempotencyKey returns "idem:" and the hex SHA-256 of the canonical
// preimage {kind, version, run_id, transition_id, effect_sequence,
// action_digest, adapter_version}. The result is a protocol identifier (69
// characters) usable as an EffectIntent idempotency_key.
func IdempotencyKey(k KeyInput) (string, error) {
	for _, f := range []struct{ key, v string }{{"run_id", k.RunID}, {"transition_id", k.TransitionID}, {"adapter_version", k.AdapterVersion}} {
		if !cjson.ValidID(f.v) {
			return "", errorf(CodeInput, "/"+f.key, "%q is not a protocol identifier", f.v)
		}
	}
	if k.EffectSequence < 0 {
		return "", errorf(CodeInput, "/effect_sequence", "effect sequence %d is negative", k.EffectSequence)
	}
	if !cjson.ValidDigest(k.ActionDigest) {
		return "", errorf(CodeInput, "/action_digest", "%q is not a sha256 digest", k.ActionDigest)
	}
	b, err := cjson.Marshal(struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
		KeyInput
	}{"IdempotencyKey", IdempotencyVersion, k})
	if err != nil {
		return "", err
	}
	return IdempotencyPrefix + cjson.HexDigest(b), nil
}
