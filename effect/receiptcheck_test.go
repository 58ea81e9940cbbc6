package effect

import (
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// receiptText draws strings around the schema's edges: ids and versions
// (with '+', at 128 and 129 characters, empty, starting with punctuation,
// with characters neither admits), digests (valid, upper case, short,
// without their prefix), timestamps, risks and outcomes.
func receiptText() *rapid.Generator[string] {
	long := strings.Repeat("a", 127)
	return rapid.OneOf(
		rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:/-]{0,12}`),
		rapid.StringMatching(`[A-Za-z0-9+._:/ -]{0,6}`),
		rapid.StringMatching(`sha256:[0-9a-f]{64}`),
		rapid.StringMatching(`sha256:[0-9a-fA-F]{63,65}`),
		rapid.SampledFrom([]string{"", "a", "a+1", "+a", "-a", "é", "a\x00", "a b", long, long + "b", long + "bc",
			"2026-01-02T03:04:05Z", "2026-01-02t03:04:05.123z", "2026-02-30T03:04:05Z", "2026-01-02T03:04:05+24:00",
			"2026-01-02 03:04:05Z", "read_only", "reversible", "high_risk_external", "unknown",
			"confirmed_success", "confirmed_failure", "outcome_unknown", protocol.KindActionReceipt,
			"sha256:" + strings.Repeat("0", 64), "SHA256:" + strings.Repeat("0", 64)}),
		rapid.String(),
	)
}

// TestReceiptConformsOnlyWhereValid holds receiptConforms to the schema:
// for receipts drawn mostly valid, member by member at the edges of what
// each member admits, it says yes exactly where protocol.Validate accepts
// the receipt's encoding. A yes where the schema refuses would let a
// receipt the protocol rejects be recorded.
func TestReceiptConformsOnlyWhereValid(t *testing.T) {
	conforming := 0
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:/-]{0,20}`)
		dg := rapid.StringMatching(`sha256:[0-9a-f]{64}`)
		// A receipt is valid throughout (fault 0), has one fault where a
		// single member is drawn from the edges (1–21), the approval
		// digest disagrees with approval_required (22) or the outputs may
		// be bad (23), or (24) each member is drawn from the edges one time
		// in five. One fault at a time is what finds a rule the typed check
		// forgot: with every member free, a receipt with exactly one bad
		// member is rare.
		const mismatchFault, outputsFault, everyFault = 22, 23, 24
		fault := rapid.IntRange(0, everyFault).Draw(t, "fault")
		member := 0
		pick := func(valid *rapid.Generator[string], name string) string {
			member++
			if member == fault || fault == everyFault && rapid.IntRange(0, 4).Draw(t, name+"_edge") == 0 {
				return receiptText().Draw(t, name)
			}
			return valid.Draw(t, name)
		}
		r := protocol.ActionReceipt{
			Kind:     pick(rapid.Just(protocol.KindActionReceipt), "kind"),
			IntentID: pick(id, "intent_id"), ActionDigest: pick(dg, "action_digest"), CommandDigest: pick(dg, "command_digest"),
			InputRootDigest: pick(dg, "input_root_digest"), PlatformDigest: pick(dg, "platform_digest"), CauseID: pick(id, "cause_id"),
			CorrelationID: pick(id, "correlation_id"), Capability: pick(id, "capability"), AuthorityDigest: pick(dg, "authority_digest"),
			DestinationDigest: pick(dg, "destination_digest"), GoalID: pick(id, "goal_id"), ObligationID: pick(id, "obligation_id"),
			AdapterVersion:   pick(rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:+/-]{0,8}`), "adapter_version"),
			AssessedRisk:     pick(rapid.SampledFrom([]string{protocol.RiskReadOnly, protocol.RiskReversible, protocol.RiskHighRiskExternal}), "assessed_risk"),
			ApprovalRequired: rapid.Bool().Draw(t, "approval_required"),
			AttemptID:        pick(id, "attempt_id"), IdempotencyKey: pick(id, "idempotency_key"),
			Outcome:    pick(rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure, protocol.OutcomeUnknown}), "outcome"),
			RecordedAt: pick(rapid.SampledFrom([]string{"2026-12-01T08:00:00Z", "2024-02-29T23:59:60.5+01:30"}), "recorded_at"),
		}
		if fault == mismatchFault || fault == everyFault && rapid.IntRange(0, 5).Draw(t, "approval_mismatch") == 0 {
			if rapid.Bool().Draw(t, "approval") {
				d := pick(dg, "approval_digest")
				r.ApprovalDigest = &d
			}
		} else if r.ApprovalRequired {
			d := pick(dg, "approval_digest")
			r.ApprovalDigest = &d
		}
		if rapid.Bool().Draw(t, "trace") {
			d := pick(id, "trace_ref")
			r.TraceRef = &d
		}
		outputs := 2
		if fault == outputsFault || fault == everyFault {
			outputs = 3
		}
		switch rapid.IntRange(0, outputs).Draw(t, "outputs") {
		case 0:
		case 1:
			r.OutputDigests = protocol.DigestSet{}
		case 2:
			r.OutputDigests = rapid.SliceOfNDistinct(dg, 0, 4, rapid.ID[string]).Draw(t, "digests")
		default: // perhaps repeated, perhaps not digests
			r.OutputDigests = rapid.SliceOfN(rapid.OneOf(dg, rapid.SampledFrom([]string{"sha256:" + strings.Repeat("a", 64), "x"})), 0, 4).Draw(t, "digests")
		}
		canon, err := marshalReceipt(&r)
		if err != nil {
			if receiptConforms(&r) {
				t.Fatalf("conforms, but its encoding is refused: %v", err)
			}
			return
		}
		verr := protocol.Validate(r.WireKind(), canon)
		got := receiptConforms(&r)
		if got {
			conforming++
		}
		if got != (verr == nil) {
			t.Fatalf("receiptConforms %v, protocol.Validate %v\n%s", got, verr, canon)
		}
	})
	if conforming == 0 {
		t.Fatal("no receipt drawn conformed: the typed check was never the one that passed")
	}
}

// TestReceiptConformsAtEveryMembersEdges puts each of receiptText's listed
// edges (ids at 127, 128 and 129 characters among them) into each string
// member of a valid receipt in turn, one at a time, and holds
// receiptConforms to protocol.Validate on every one: the deterministic
// floor under the drawn test above.
func TestReceiptConformsAtEveryMembersEdges(t *testing.T) {
	d := "sha256:" + strings.Repeat("1", 64)
	long := strings.Repeat("a", 127)
	edges := []string{"", "a", "a+1", "+a", "-a", "é", "a\x00", "a b", long, long + "b", long + "bc",
		"2026-01-02T03:04:05Z", "2026-01-02t03:04:05.123z", "2026-02-30T03:04:05Z", "2026-01-02T03:04:05+24:00",
		"2026-01-02 03:04:05Z", "read_only", "reversible", "high_risk_external", "unknown",
		"confirmed_success", "confirmed_failure", "outcome_unknown", protocol.KindActionReceipt,
		"sha256:" + strings.Repeat("0", 64), "SHA256:" + strings.Repeat("0", 64), d[:len(d)-1], d + "1"}
	base := sampleReceipt(d)
	check := func(r *protocol.ActionReceipt, what string) bool {
		t.Helper()
		canon, err := marshalReceipt(r)
		if err != nil {
			if receiptConforms(r) {
				t.Fatalf("%s: conforms, but its encoding is refused: %v", what, err)
			}
			return false
		}
		verr := protocol.Validate(r.WireKind(), canon)
		if got := receiptConforms(r); got != (verr == nil) {
			t.Fatalf("%s: receiptConforms %v, protocol.Validate %v\n%s", what, got, verr, canon)
		}
		return verr == nil
	}
	if !check(&base, "the base receipt") {
		t.Fatal("the base receipt does not conform")
	}
	refused := 0
	rt := reflect.TypeOf(base)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		for _, e := range edges {
			r := base
			v := reflect.ValueOf(&r).Elem().Field(i)
			switch {
			case f.Type.Kind() == reflect.String:
				v.SetString(e)
			case f.Type == reflect.TypeOf((*string)(nil)):
				e := e
				v.Set(reflect.ValueOf(&e))
			default:
				continue
			}
			if !check(&r, f.Name+" = "+e) {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no edge was refused: the table tests nothing")
	}
}

// TestCanonicalReceiptSkipsNoCheck: the receipts a runner builds take the
// typed check, and one it refuses still gets the schema's own error.
func TestCanonicalReceiptSkipsNoCheck(t *testing.T) {
	d := "sha256:" + strings.Repeat("1", 64)
	e := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "i-1", ActionDigest: d, CauseID: "c", CorrelationID: "k",
		Capability: "refund.pay", AuthorityDigest: d, DestinationDigest: d, GoalID: "g", ObligationID: "o", AdapterVersion: "fake/1",
		AssessedRisk: protocol.RiskReversible, IdempotencyKey: "key-1"}
	b := ReceiptBinding{CommandDigest: d, InputRootDigest: d, PlatformDigest: d}
	o := Observation{AttemptID: "i-1/attempt/1", Outcome: protocol.OutcomeConfirmedSuccess, OutputDigests: []string{d}, RecordedAt: "2026-12-01T08:00:00Z"}
	c, err := NewCanonicalActionReceipt(e, b, o)
	if err != nil {
		t.Fatal(err)
	}
	if !receiptConforms(&c.Receipt) {
		t.Fatal("an ordinary receipt does not take the typed check")
	}
	o.RecordedAt = "yesterday"
	_, err = NewCanonicalActionReceipt(e, b, o)
	want := protocol.Validate(protocol.KindActionReceipt, []byte(`x`))
	if err == nil || want == nil {
		t.Fatalf("a receipt recorded %q was accepted", o.RecordedAt)
	}
	r := c.Receipt
	r.RecordedAt = o.RecordedAt
	canon, _ := marshalReceipt(&r)
	if verr := protocol.Validate(r.WireKind(), canon); verr == nil || verr.Error() != err.Error() {
		t.Fatalf("error %v, the schema's %v", err, verr)
	}
}
