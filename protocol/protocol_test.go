package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

func TestValidTimestamp(t *testing.T) {
	cases := map[string]bool{
		"2026-08-08T01:00:00Z":         true,
		"2026-08-08t01:00:01z":         true, // lower-case markers are RFC 3339
		"2026-08-08T01:00:00.123456Z":  true,
		"2026-08-08T01:00:00+05:30":    true,
		"2026-08-08T01:00:00-23:59":    true,
		"2024-02-29T00:00:00Z":         true, // leap year
		"2000-02-29T00:00:00Z":         true, // divisible by 400
		"2026-06-30T23:59:60Z":         true, // leap second: lexically fine
		"1900-02-29T00:00:00Z":         false,
		"2026-02-29T00:00:00Z":         false,
		"2026-04-31T00:00:00Z":         false,
		"0000-01-01T00:00:00Z":         false,
		"2026-99-99T99:99:99Z":         false,
		"2026-08-08T01:00:01+24:00":    false,
		"2026-08-08T01:00:01+05:60":    false,
		"2026-08-08T24:00:00Z":         false,
		"2026-08-08T01:00:00.Z":        false,
		"2026-08-08T01:00:00":          false,
		"2026-08-08 01:00:00Z":         false,
		"2026-08-08T01:00:00Z\n":       false,
		"2026-8-08T01:00:00Z":          false,
		"+2026-08-08T01:00:00Z":        false,
		"2026-08-08T01:00:00+0530":     false,
		"2026-08-08T01:00:00.5+05:30 ": false,
		"２０２６-08-08T01:00:00Z":         false,
		"":                             false,
	}
	for s, want := range cases {
		if got := ValidTimestamp(s); got != want {
			t.Errorf("ValidTimestamp(%q) = %v, want %v", s, got, want)
		}
	}
}

func validEffectIntent() map[string]any {
	v, _ := cjson.Decode(mustRead("valid", "effect-intent"))
	return v.(map[string]any)
}

func mustRead(dir, id string) []byte {
	b, err := readFile("testdata/m0/" + dir + "/" + id + ".json")
	if err != nil {
		panic(err)
	}
	return b
}

func TestRulesTable(t *testing.T) {
	d := "sha256:" + strings.Repeat("1", 64)
	cases := []struct {
		name  string
		kind  string
		base  string
		patch map[string]any
		code  string
		ptr   string
	}{
		{"intent high risk needs approval", KindEffectIntent, "effect-intent", map[string]any{"approval_required": false, "approval_digest": nil}, CodeHighRiskNeedsApproval, "/approval_required"},
		{"intent reversible without approval", KindEffectIntent, "effect-intent", map[string]any{"assessed_risk": "reversible", "approval_required": false, "approval_digest": nil}, "", ""},
		{"intent read-only with approval", KindEffectIntent, "effect-intent", map[string]any{"assessed_risk": "read_only"}, "", ""},
		{"intent unknown risk is not assessed", KindEffectIntent, "effect-intent", map[string]any{"assessed_risk": "unknown"}, CodeNotAllowed, "/assessed_risk"},
		{"receipt unrequired with digest", KindActionReceipt, "action-receipt", map[string]any{"assessed_risk": "reversible", "approval_required": false, "approval_digest": d}, CodeUnrequiredApprovalBind, "/approval_digest"},
		{"receipt bad outcome", KindActionReceipt, "action-receipt", map[string]any{"outcome": "probably_fine"}, CodeNotAllowed, "/outcome"},
		{"receipt bad time", KindActionReceipt, "action-receipt", map[string]any{"recorded_at": "yesterday"}, CodeMalformed, "/recorded_at"},
		{"equivalence needs reachable root", KindResolvedCompositionReceipt, "resolved-composition-receipt", map[string]any{"production_root_reachable": false}, CodeFalseEquivalence, "/production_root_reachable"},
		{"inconclusive may have deltas", KindResolvedCompositionReceipt, "resolved-composition-receipt", map[string]any{"equivalence_status": "inconclusive", "forbidden_delta_count": int64(3)}, "", ""},
		{"batch watermark equal is not stable", KindStableProposalBatch, "stable-proposal-batch", map[string]any{"low_watermark": int64(7)}, CodeBatchNotStable, "/low_watermark"},
		{"proposal carries capability", KindEffectProposal, "effect-proposal", map[string]any{"capability": "capability:publish"}, CodeAuthorityField, "/capability"},
		{"verdict carries approval digest", KindEligibilityVerdict, "eligibility-verdict", map[string]any{"approval_digest": d}, CodeAuthorityField, "/approval_digest"},
		{"fact delta unknown member", KindFactDelta, "fact-delta", map[string]any{"weight": int64(2)}, CodeUnknownField, "/weight"},
		{"fact delta empty tuple", KindFactDelta, "fact-delta", map[string]any{"tuple": map[string]any{}}, CodeEmptyObject, "/tuple"},
		{"event negative time", KindAcceptedEvent, "accepted-event", map[string]any{"logical_time": int64(-1)}, CodeOutOfRange, "/logical_time"},
		{"event id pattern", KindAcceptedEvent, "accepted-event", map[string]any{"event_id": "-bad"}, CodeMalformed, "/event_id"},
		{"event id too long", KindAcceptedEvent, "accepted-event", map[string]any{"event_id": strings.Repeat("a", 129)}, CodeMalformed, "/event_id"},
		{"event versions type", KindAcceptedEvent, "accepted-event", map[string]any{"versions": "v1"}, CodeWrongType, "/versions"},
		{"envelope graph profile", KindGraphEnvelope, "graph-envelope", map[string]any{"profile_version": "flrh-graph/v1"}, CodeNotAllowed, "/profile_version"},
		{"envelope absent base revision", KindGraphEnvelope, "graph-envelope", map[string]any{"base_revision_id": deleteMarker{}}, "", ""},
		{"kind mismatch", KindFactDelta, "effect-intent", nil, CodeKindMismatch, "/kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, _ := cjson.Decode(mustRead("valid", c.base))
			m := v.(map[string]any)
			for k, val := range c.patch {
				if _, del := val.(deleteMarker); del {
					delete(m, k)
				} else {
					m[k] = val
				}
			}
			text, err := cjson.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(c.kind, text)
			if c.code == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != c.code || pe.Pointer != c.ptr {
				t.Fatalf("got %v; want %s at %s", err, c.code, c.ptr)
			}
		})
	}
}

type deleteMarker struct{}

func TestNotAnObjectAndUnknownKind(t *testing.T) {
	for text, code := range map[string]string{`[1]`: CodeNotObject, `"x"`: CodeNotObject, `{}`: CodeMissingField} {
		var pe *Error
		if err := Validate(KindFactDelta, []byte(text)); !errors.As(err, &pe) || pe.Code != code {
			t.Errorf("%s: %v, want %s", text, err, code)
		}
	}
	var pe *Error
	if err := Validate("Capability", []byte(`{"kind":"Capability"}`)); !errors.As(err, &pe) || pe.Code != CodeUnknownKind {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := KindOf([]byte(`{"kind":"Nope"}`)); err == nil {
		t.Error("KindOf accepted an unknown kind")
	}
}

func TestReceiptBinding(t *testing.T) {
	intent, err := Decode[EffectIntent](mustRead("valid", "effect-intent"))
	if err != nil {
		t.Fatal(err)
	}
	receipt, err := Decode[ActionReceipt](mustRead("valid", "action-receipt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckReceiptBinding(intent, receipt); err != nil {
		t.Fatalf("fixture receipt does not bind its intent: %v", err)
	}
	other := "sha256:" + strings.Repeat("2", 64)
	mutations := map[string]func(r *ActionReceipt){
		"/intent_id":          func(r *ActionReceipt) { r.IntentID = "intent:2" },
		"/action_digest":      func(r *ActionReceipt) { r.ActionDigest = other },
		"/destination_digest": func(r *ActionReceipt) { r.DestinationDigest = other },
		"/authority_digest":   func(r *ActionReceipt) { r.AuthorityDigest = other },
		"/capability":         func(r *ActionReceipt) { r.Capability = "capability:other" },
		"/assessed_risk":      func(r *ActionReceipt) { r.AssessedRisk = RiskReversible },
		"/approval_digest":    func(r *ActionReceipt) { r.ApprovalDigest = &other },
		"/idempotency_key":    func(r *ActionReceipt) { r.IdempotencyKey = "effect:2" },
		"/adapter_version":    func(r *ActionReceipt) { r.AdapterVersion = "publisher/2" },
	}
	for ptr, mutate := range mutations {
		r := receipt
		d := *r.ApprovalDigest
		r.ApprovalDigest = &d
		mutate(&r)
		var pe *Error
		if err := CheckReceiptBinding(intent, r); !errors.As(err, &pe) || pe.Code != CodeReceiptBinding || pe.Pointer != ptr {
			t.Errorf("%s: %v", ptr, err)
		}
	}
	// The outcome and attempt are the receipt's own: they may differ.
	r := receipt
	r.Outcome, r.AttemptID = OutcomeUnknown, "attempt:2"
	if err := CheckReceiptBinding(intent, r); err != nil {
		t.Errorf("outcome change flagged: %v", err)
	}
}

func TestNilSetsEncodeEmpty(t *testing.T) {
	v := EligibilityVerdict{Kind: KindEligibilityVerdict, VerdictID: "v:1", ProposalID: "p:1",
		Status: VerdictIneligible, CauseID: "e:1", RuleSetVersion: "rules/0"}
	b, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"support_derivation_ids":[]`)) {
		t.Errorf("nil set not encoded as []: %s", b)
	}
}

func TestValidateDoesNotMutateAndIsDeterministic(t *testing.T) {
	for _, id := range []string{"effect-intent", "action-receipt", "graph-envelope"} {
		v, _ := cjson.Decode(mustRead("valid", id))
		kind := v.(map[string]any)["kind"].(string)
		determinism.Check(t, v, func(x any) string { return errString(ValidateValue(kind, x)) })
		bad, _ := cjson.Decode(mustRead("invalid", "high-risk-without-approval"))
		determinism.Check(t, bad, func(x any) string { return errString(ValidateValue(KindEffectIntent, x)) })
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPropertyProposalRoundTrip: any well-formed proposal built in Go is
// valid, its canonical bytes do not depend on precondition order, and it
// decodes back to the same canonical bytes.
func TestPropertyProposalRoundTrip(t *testing.T) {
	idGen := rapid.StringMatching(`[a-z0-9][a-z0-9:._/-]{0,20}`)
	digest := rapid.StringMatching(`sha256:[0-9a-f]{64}`)
	rapid.Check(t, func(t *rapid.T) {
		pre := rapid.SliceOfDistinct(idGen, func(s string) string { return s }).Draw(t, "pre")
		p := EffectProposal{
			Kind: KindEffectProposal, ProposalID: idGen.Draw(t, "id"), EffectType: idGen.Draw(t, "type"),
			ActionDigest: digest.Draw(t, "action"), CauseID: idGen.Draw(t, "cause"), CorrelationID: idGen.Draw(t, "corr"),
			ProposalDedupKey: idGen.Draw(t, "dedup"), DestinationDigest: digest.Draw(t, "dest"),
			GoalID: idGen.Draw(t, "goal"), ObligationID: idGen.Draw(t, "ob"),
			DeclaredRiskHint: rapid.SampledFrom([]string{RiskReadOnly, RiskReversible, RiskHighRiskExternal, RiskUnknown}).Draw(t, "risk"),
			Preconditions:    IDSet(pre),
			Versions:         VersionEnvelope{"w/1", "s/1", "e/1", "g/0", "r/0", "d/0", "flrh-cjson/1", "t/0", "m/0", "o/1", "g/1", "r/0", "c/0"},
		}
		b, err := Canonical(p)
		if err != nil {
			t.Fatalf("valid proposal refused: %v", err)
		}
		rev := p
		rev.Preconditions = make(IDSet, len(pre))
		for i := range pre {
			rev.Preconditions[i] = pre[len(pre)-1-i]
		}
		b2, err := Canonical(rev)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("precondition order changed the canonical bytes")
		}
		back, err := Decode[EffectProposal](b)
		if err != nil {
			t.Fatal(err)
		}
		b3, _ := Canonical(back)
		if !bytes.Equal(b, b3) {
			t.Fatalf("round trip changed bytes")
		}
		if len(pre) > 0 {
			dup := p
			dup.Preconditions = append(IDSet{pre[0]}, pre...)
			if Check(dup) == nil {
				t.Fatal("duplicate precondition accepted")
			}
		}
	})
}

func FuzzValidate(f *testing.F) {
	for _, id := range []string{"accepted-event", "effect-intent", "action-receipt", "graph-envelope", "fact-delta"} {
		f.Add(mustRead("valid", id))
	}
	f.Add(mustRead("invalid", "high-risk-without-approval"))
	f.Fuzz(func(t *testing.T, text []byte) {
		for _, kind := range Kinds {
			err := Validate(kind, text)
			if err == nil {
				canon, cerr := cjson.Canonicalize(text)
				if cerr != nil {
					t.Fatalf("valid %s is not canonicalizable: %v", kind, cerr)
				}
				got, derr := decodeAndCanonical(kind, text)
				if derr != nil {
					t.Fatalf("valid %s does not decode: %v", kind, derr)
				}
				if !bytes.Equal(got, canon) {
					t.Fatalf("%s round trip differs:\n%s\n%s", kind, got, canon)
				}
				continue
			}
			var pe *Error
			var ce *cjson.Error
			if !errors.As(err, &pe) && !errors.As(err, &ce) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
		}
		var probe any
		_ = json.Unmarshal(text, &probe)
	})
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
