package effect

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// outputDigests sort differently as strings and as their encodings
// ("a!" and "a " before "a", "a#" after it), and one is not plain.
var outputDigests = []string{"a", "a!", "a ", "a#", "ab", "b", "sha256:01", "sha256:0", "sha256:1", "é"}

// TestReceiptEncodingMatchesMarshal holds the receipt's direct encoding
// to cjson.Marshal's: marshalReceipt gives what cjson.Marshal gives
// (bytes, or a refusal) for every receipt, including those appendReceipt
// leaves to cjson (another kind, strings that are not plain, repeated
// output digests).
func TestReceiptEncodingMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Mostly every string plain, as the receipts adapters observe:
		// only then is the direct path taken.
		s := rapid.StringMatching(`[a-z0-9:._ !#-]{0,12}`)
		if rapid.IntRange(0, 3).Draw(t, "mixed") == 0 {
			s = rapid.OneOf(s, rapid.StringMatching(`[a !#"\\]{0,3}`),
				rapid.SampledFrom([]string{"e\u0301", "é", "\x00", "\u2028", "<&>", "\xff"}), rapid.String())
		}
		r := protocol.ActionReceipt{
			Kind:     rapid.SampledFrom([]string{protocol.KindActionReceipt, protocol.KindActionReceipt, protocol.KindActionReceipt, protocol.KindEffectIntent, "x"}).Draw(t, "kind"),
			IntentID: s.Draw(t, "intent_id"), ActionDigest: s.Draw(t, "action_digest"), CommandDigest: s.Draw(t, "command_digest"),
			InputRootDigest: s.Draw(t, "input_root_digest"), PlatformDigest: s.Draw(t, "platform_digest"), CauseID: s.Draw(t, "cause_id"),
			CorrelationID: s.Draw(t, "correlation_id"), Capability: s.Draw(t, "capability"), AuthorityDigest: s.Draw(t, "authority_digest"),
			DestinationDigest: s.Draw(t, "destination_digest"), GoalID: s.Draw(t, "goal_id"), ObligationID: s.Draw(t, "obligation_id"),
			AdapterVersion: s.Draw(t, "adapter_version"), AssessedRisk: s.Draw(t, "assessed_risk"),
			ApprovalRequired: rapid.Bool().Draw(t, "approval_required"), AttemptID: s.Draw(t, "attempt_id"),
			IdempotencyKey: s.Draw(t, "idempotency_key"), Outcome: s.Draw(t, "outcome"), RecordedAt: s.Draw(t, "recorded_at"),
		}
		if rapid.Bool().Draw(t, "approval") {
			d := s.Draw(t, "approval_digest")
			r.ApprovalDigest = &d
		}
		if rapid.Bool().Draw(t, "trace") {
			d := s.Draw(t, "trace_ref")
			r.TraceRef = &d
		}
		switch rapid.IntRange(0, 3).Draw(t, "outputs") {
		case 0: // nil, written as an empty set
		case 1:
			r.OutputDigests = protocol.DigestSet{}
		case 2: // distinct, as a set
			r.OutputDigests = rapid.SliceOfNDistinct(rapid.SampledFrom(outputDigests), 0, 10, rapid.ID[string]).Draw(t, "digests")
		default: // perhaps repeated, which cjson refuses
			r.OutputDigests = rapid.SliceOfN(rapid.SampledFrom(outputDigests), 0, 11).Draw(t, "digests")
		}
		before := append(protocol.DigestSet(nil), r.OutputDigests...)
		encodesAsMarshal(t, &r)
		for i := range before {
			if r.OutputDigests[i] != before[i] {
				t.Fatalf("output digests changed: %q, were %q", r.OutputDigests, before)
			}
		}
	})
}

// TestReceiptEncodingIsDirect checks the direct path is the one an
// ordinary receipt takes (the property test above would pass were it
// never taken).
func TestReceiptEncodingIsDirect(t *testing.T) {
	r := protocol.ActionReceipt{Kind: protocol.KindActionReceipt, IntentID: "i-1", IdempotencyKey: "k-1",
		OutputDigests: protocol.DigestSet{"sha256:02", "sha256:01"}, Outcome: protocol.OutcomeConfirmedSuccess}
	b, ok := appendReceipt(nil, &r)
	if !ok {
		t.Fatal("an ordinary receipt was left to cjson")
	}
	want, err := cjson.Marshal(r)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("got %s, want %s (%v)", b, want, err)
	}
	if got := testing.AllocsPerRun(50, func() { _, _ = marshalReceipt(&r) }); got != 1 {
		t.Errorf("marshalReceipt allocates %v times, want 1", got)
	}
}

// encodesAsMarshal holds marshalReceipt to cjson.Marshal on r: the same
// bytes, or the same refusal. It returns marshalReceipt's answer.
func encodesAsMarshal(t interface {
	Helper()
	Fatalf(string, ...any)
}, r *protocol.ActionReceipt) ([]byte, error) {
	t.Helper()
	want, wantErr := cjson.Marshal(*r)
	got, gotErr := marshalReceipt(r)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("errors: marshalReceipt %v, cjson.Marshal %v", gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("marshalReceipt\n%s\ncjson.Marshal\n%s", got, want)
	}
	return got, gotErr
}

// sampleReceipt is a conforming receipt with every member set, its
// digests d.
func sampleReceipt(d string) protocol.ActionReceipt {
	approval, trace := d, "trace-1"
	return protocol.ActionReceipt{Kind: protocol.KindActionReceipt, IntentID: "i-1", ActionDigest: d, CommandDigest: d,
		InputRootDigest: d, PlatformDigest: d, CauseID: "c", CorrelationID: "k", Capability: "refund.pay", AuthorityDigest: d,
		DestinationDigest: d, GoalID: "g", ObligationID: "o", AdapterVersion: "fake/1+2", AssessedRisk: protocol.RiskReversible,
		ApprovalRequired: true, ApprovalDigest: &approval, TraceRef: &trace, AttemptID: "i-1/attempt/1", IdempotencyKey: "key-1",
		Outcome: protocol.OutcomeConfirmedSuccess, OutputDigests: protocol.DigestSet{d}, RecordedAt: "2026-12-01T08:00:00Z"}
}
