package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// The cases in testdata/m0 are transcribed from the reference conformance
// corpus (fixtures/m0); see testdata/README.md.

func readCase(t *testing.T, dir, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "m0", dir, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAndCanonical decodes text into the Go type of kind and returns the
// canonical bytes of the Go value.
func decodeAndCanonical(kind string, text []byte) ([]byte, error) {
	var w Wire
	var err error
	switch kind {
	case KindAcceptedEvent:
		w, err = Decode[AcceptedEvent](text)
	case KindFactDelta:
		w, err = Decode[FactDelta](text)
	case KindEffectProposal:
		w, err = Decode[EffectProposal](text)
	case KindEligibilityVerdict:
		w, err = Decode[EligibilityVerdict](text)
	case KindStableProposalBatch:
		w, err = Decode[StableProposalBatch](text)
	case KindEffectIntent:
		w, err = Decode[EffectIntent](text)
	case KindGraphEnvelope:
		w, err = Decode[GraphEnvelope](text)
	case KindGraphDelta:
		w, err = Decode[GraphDelta](text)
	case KindActionReceipt:
		w, err = Decode[ActionReceipt](text)
	case KindResolvedCompositionReceipt:
		w, err = Decode[ResolvedCompositionReceipt](text)
	default:
		return nil, errors.New("no Go type for " + kind)
	}
	if err != nil {
		return nil, err
	}
	return Canonical(w)
}

func TestM0ValidObjects(t *testing.T) {
	cases := map[string]string{
		"accepted-event":               KindAcceptedEvent,
		"fact-delta":                   KindFactDelta,
		"effect-proposal":              KindEffectProposal,
		"eligibility-verdict":          KindEligibilityVerdict,
		"stable-proposal-batch":        KindStableProposalBatch,
		"effect-intent":                KindEffectIntent,
		"graph-envelope":               KindGraphEnvelope,
		"graph-delta":                  KindGraphDelta,
		"action-receipt":               KindActionReceipt,
		"resolved-composition-receipt": KindResolvedCompositionReceipt,
	}
	seen := map[string]bool{}
	for id, kind := range cases {
		t.Run(id, func(t *testing.T) {
			text := readCase(t, "valid", id)
			if err := Validate(kind, text); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := KindOf(text)
			if err != nil || got != kind {
				t.Fatalf("KindOf = %q, %v; want %q", got, err, kind)
			}
			// The Go type must lose nothing: the canonical bytes of the
			// decoded value equal the canonical bytes of the text.
			want, err := cjson.Canonicalize(text)
			if err != nil {
				t.Fatal(err)
			}
			canon, err := decodeAndCanonical(kind, text)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !bytes.Equal(canon, want) {
				t.Fatalf("canonical bytes differ:\n got %s\nwant %s", canon, want)
			}
			if cjson.Digest(canon) != cjson.Digest(want) {
				t.Fatal("digest differs")
			}
			// The reference freezes no digest for these objects; these are
			// ours, recorded so that any change of canonical form shows.
			if d := cjson.Digest(canon); d != validDigests[id] {
				t.Errorf("digest %s, recorded %s", d, validDigests[id])
			}
			// Every other kind refuses it.
			for _, other := range Kinds {
				if other != kind && Validate(other, text) == nil {
					t.Errorf("accepted as %s too", other)
				}
			}
		})
		seen[kind] = true
	}
	for _, k := range Kinds {
		if !seen[k] {
			t.Errorf("kind %s has no valid fixture", k)
		}
	}
}

func TestM0InvalidMutations(t *testing.T) {
	// The reference states each reason as a validator message fragment
	// (shown in the comment); we state it as our code and pointer.
	cases := []struct {
		id, kind, code, pointer string
	}{
		{"zero-fact-delta", KindFactDelta, CodeNotAllowed, "/diff"},                                                    // "0 is not one of"
		{"weighted-positive-fact-delta", KindFactDelta, CodeNotAllowed, "/diff"},                                       // "2 is not one of"
		{"weighted-negative-fact-delta", KindFactDelta, CodeNotAllowed, "/diff"},                                       // "-2 is not one of"
		{"effect-missing-cause", KindEffectIntent, CodeMissingField, "/cause_id"},                                      // "cause_id"
		{"high-risk-without-approval", KindEffectIntent, CodeHighRiskNeedsApproval, "/approval_required"},              // "True was expected"
		{"required-approval-without-binding", KindEffectIntent, CodeApprovalNeedsDigest, "/approval_digest"},           // "None is not"
		{"unrequired-approval-cannot-carry-binding", KindEffectIntent, CodeUnrequiredApprovalBind, "/approval_digest"}, // "not of type 'null'"
		{"proposal-cannot-authoritatively-assess-risk", KindEffectProposal, CodeAuthorityField, "/risk"},               // "risk"
		{"proposal-cannot-mint-effect-idempotency", KindEffectProposal, CodeAuthorityField, "/idempotency_key"},        // "idempotency_key"
		{"soup-graph-kind", KindGraphEnvelope, CodeNotAllowed, "/graph_kind"},                                          // "G_soup"
		{"high-risk-receipt-without-approval-binding", KindActionReceipt, CodeApprovalNeedsDigest, "/approval_digest"}, // "None is not"
		{"invalid-graph-digest", KindGraphDelta, CodeMalformed, "/additions_digest"},                                   // "sha256"
		{"false-equivalence-receipt", KindResolvedCompositionReceipt, CodeFalseEquivalence, "/forbidden_delta_count"},  // "0 was expected"
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			text := readCase(t, "invalid", c.id)
			before := bytes.Clone(text)
			err := Validate(c.kind, text)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Validate = %v; want *Error %s", err, c.code)
			}
			if pe.Code != c.code || pe.Pointer != c.pointer {
				t.Fatalf("got %s at %s (%s); want %s at %s", pe.Code, pe.Pointer, pe.Detail, c.code, c.pointer)
			}
			if !bytes.Equal(before, text) {
				t.Fatal("input mutated")
			}
			// The schema alone (without the Go rules) rejects it too, so an
			// external validator using our schema agrees on the verdict.
			v, _ := cjson.Decode(text)
			schemas, _ := compiled()
			if schemas[c.kind].Validate(v) == nil {
				t.Fatal("embedded schema accepts the mutation")
			}
		})
	}
}

func TestM0CanonicalPairs(t *testing.T) {
	// Equal pair: member order and set-like order do not matter at the
	// root of a GraphDelta; the digest is the reference golden.
	left := `{"kind":"GraphDelta","causal_parent_delta_ids":["delta:2","delta:1"],"producer_id":"producer:1","logical_time":8}`
	right := `{"logical_time":8,"producer_id":"producer:1","causal_parent_delta_ids":["delta:1","delta:2"],"kind":"GraphDelta"}`
	const golden = "sha256:b5e649bdc9b75efe46a3707feded39e77a9a570190fd38713cb324752944af5a"
	for _, s := range []string{left, right} {
		b, err := cjson.Canonicalize([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		if d := cjson.Digest(b); d != golden {
			t.Errorf("digest %s, want %s", d, golden)
		}
	}
	// Different pairs: a changed logical time; an application array inside
	// a payload keeps its order.
	different := [][2]string{
		{`{"kind":"GraphDelta","causal_parent_delta_ids":["delta:1"],"logical_time":8}`, `{"kind":"GraphDelta","causal_parent_delta_ids":["delta:1"],"logical_time":9}`},
		{`{"kind":"AcceptedEvent","payload":{"preconditions":["z","a"]}}`, `{"kind":"AcceptedEvent","payload":{"preconditions":["a","z"]}}`},
	}
	for _, p := range different {
		a, err1 := cjson.Canonicalize([]byte(p[0]))
		b, err2 := cjson.Canonicalize([]byte(p[1]))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if bytes.Equal(a, b) {
			t.Errorf("%s and %s canonicalize equal", p[0], p[1])
		}
	}
	// Reject cases, through Validate: the canonical code reaches the caller.
	rejects := []struct{ text, code string }{
		{`{"kind":"FactDelta","metric":0.5}`, string(cjson.CodeFloat)},
		{"{\"kind\":\"FactDelta\",\"label\":\"e\u0301\"}", string(cjson.CodeNonNFC)},
		{`{"kind":"FactDelta","logical_time":9223372036854775808}`, string(cjson.CodeIntRange)},
		{`{"kind":"GraphDelta","causal_parent_delta_ids":["delta:1","delta:1"]}`, string(cjson.CodeDuplicateSet)},
	}
	for _, r := range rejects {
		var k string
		_ = json.Unmarshal([]byte(strings.Split(r.text, ",")[0]+"}"), &struct{ Kind *string }{&k})
		err := Validate(k, []byte(r.text))
		var ce *cjson.Error
		if !errors.As(err, &ce) || string(ce.Code) != r.code {
			t.Errorf("Validate(%s) = %v; want cjson %s", r.text, err, r.code)
		}
	}
}

func TestM0IdentityCases(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	cases := []struct {
		name             string
		lid, ld, rid, rd string
		want             Identity
	}{
		// effect identity: idempotency key + intent digest
		{"exact-duplicate", "effect:1", a, "effect:1", a, IdentityDuplicate},
		{"identity-content-conflict", "effect:1", a, "effect:1", b, IdentityConflict},
		{"distinct-intents", "effect:1", a, "effect:2", b, IdentityDistinct},
		// derivation identity: derivation id + support digest
		{"exact-support-duplicate", "d:shared", a, "d:shared", a, IdentityDuplicate},
		{"support-identity-content-conflict", "d:shared", a, "d:shared", b, IdentityConflict},
		{"distinct-support-identities", "d:1", a, "d:2", a, IdentityDistinct},
	}
	for _, c := range cases {
		if got := ClassifyIdentity(c.lid, c.ld, c.rid, c.rd); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

var validDigests = map[string]string{
	"accepted-event":               "sha256:6e06d97c37d0f291f642791190d6d6d4dee3a8b4bb2e6feebef87bfd7757472d",
	"action-receipt":               "sha256:caf3e28e8c280de0bd67d3661143cfb940dfcafcf4efaae95ac6a3c6be8111f2",
	"effect-intent":                "sha256:33064c9c9083e722e7c3ec3ee47fdcced5b41c2d6e63eae4475e33e92b056a0f",
	"effect-proposal":              "sha256:41196ce0ba32fb8dba4f2309a02b21c2bbbfda354abac506ac7d0af6fad941ea",
	"eligibility-verdict":          "sha256:d74dbafd87a8b55f9f01e8def0c7734ae3b6b6b634c894b161fdbe66a7ecc3f5",
	"fact-delta":                   "sha256:b51764b9887f49114777f3eb8efbb3af9fe04b09a5026ae71f63226a2788cf9f",
	"graph-delta":                  "sha256:892acbdb4dcea0393ce8686084a4b2e2e168ae2a914b1139714db0d21a66bbd2",
	"graph-envelope":               "sha256:c831dc3bba70d8edaa1c38774ee34865ce864f22f646576fbb0e1a995dd56bec",
	"resolved-composition-receipt": "sha256:c3cc144054395a881644d1a3184465a3ce300b242c0af3aa4c76c2ac7598e604",
	"stable-proposal-batch":        "sha256:9baac03ffed3f54cbf71ec4eced8663b34a86ca60274f71536aff0ef4331e3d3",
}
