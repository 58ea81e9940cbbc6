package evidence

import (
	"strings"
	"testing"

	"flrh.dev/flrh/protocol"
)

var good = &Tags{Independent: true, Measured: true, Settled: true}

func TestCounts(t *testing.T) {
	cases := []struct {
		r    Record
		want string
	}{
		{Record{"r1", "reviewer", "model", good}, ""},
		{Record{"r2", "reviewer", "model", nil}, ReasonUntagged},
		{Record{"r3", "reviewer", "model", &Tags{false, true, true}}, ReasonNotIndependent},
		{Record{"r4", "reviewer", "model", &Tags{true, false, true}}, ReasonFallback},
		{Record{"r5", "reviewer", "model", &Tags{true, true, false}}, ReasonTransient},
		{Record{"r6", "model", "model", good}, ReasonSelfProduced},
	}
	for _, c := range cases {
		ok, why := Counts(c.r)
		if ok != (c.want == "") || why != c.want {
			t.Errorf("%s: (%v, %q), want %q", c.r.ID, ok, why, c.want)
		}
	}
	counted, refused := Filter([]Record{cases[0].r, cases[1].r, cases[5].r})
	if len(counted) != 1 || len(refused) != 2 || refused[0].Reason != ReasonUntagged {
		t.Fatalf("filter: %v %v", counted, refused)
	}
}

func TestCalibrationFailsClosed(t *testing.T) {
	witnessed := []Record{{"o1", "reviewer", "model", good}}
	l1 := &Layer1{Predictions: 10, Agreements: 10, Passed: true}
	cases := []struct {
		name string
		c    Calibration
		want string
	}{
		{"cleared", Calibration{Model: "model", Layer1: l1, Layer2: &Layer2{"reviewer", true, witnessed}}, CalCleared},
		{"layer 1 alone", Calibration{Model: "model", Layer1: l1}, CalLayer1NotEnough},
		{"nothing", Calibration{Model: "model"}, CalMissing},
		{"failed", Calibration{Model: "model", Layer2: &Layer2{"reviewer", false, witnessed}}, CalFailed},
		{"self-witnessed", Calibration{Model: "model", Layer2: &Layer2{"model", true, witnessed}}, CalSelfWitnessed},
		{"author-controlled", Calibration{Model: "model", AuthorControlled: []string{"staging-bot"}, Layer2: &Layer2{"staging-bot", true, witnessed}}, CalAuthorControl},
		{"untagged evidence", Calibration{Model: "model", Layer2: &Layer2{"reviewer", true, []Record{{"o1", "reviewer", "model", nil}}}}, CalNoEvidence},
		{"model-produced evidence", Calibration{Model: "model", Layer2: &Layer2{"reviewer", true, []Record{{"o1", "model", "plan", good}}}}, CalNoEvidence},
	}
	for _, c := range cases {
		v := Check(c.c)
		if v.Reason != c.want || v.ClearsValue != (c.want == CalCleared) {
			t.Errorf("%s: %+v, want %s", c.name, v, c.want)
		}
	}
	// Layer 1 passing is reported, and never turns into clearance.
	if v := Check(Calibration{Model: "model", Layer1: l1}); !v.Layer1Consistent || v.ClearsValue {
		t.Fatalf("%+v", v)
	}
}

func TestLoopClosesOnlyOnExternalReceipt(t *testing.T) {
	d := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	ok := Witness{WitnessKindReceipt, d, "destination", "verifier", true, good}
	if c, why := Closes(ok, "agent"); !c {
		t.Fatalf("valid receipt refused: %s", why)
	}
	for _, c := range []struct {
		mut  func(*Witness)
		want string
	}{
		{func(w *Witness) { w.Kind = "self_report" }, CloseWrongKind},
		{func(w *Witness) { w.ReceiptDigest = "sha256:xyz" }, CloseBadDigest},
		{func(w *Witness) { w.Verified = false }, CloseUnverified},
		{func(w *Witness) { w.VerifiedBy = "agent" }, CloseSelfVerified},
		{func(w *Witness) { w.Producer = "agent" }, CloseSelfProduced},
		{func(w *Witness) { w.Tags = nil }, ReasonUntagged},
		{func(w *Witness) { w.Tags = &Tags{true, true, false} }, ReasonTransient},
	} {
		w := ok
		c.mut(&w)
		if closed, why := Closes(w, "agent"); closed || why != c.want {
			t.Errorf("got (%v, %s), want %s", closed, why, c.want)
		}
	}
}

func TestObserver(t *testing.T) {
	var o Observer
	o, live := o.Tick("s0", "s1", true)
	if !live || o.LiveTicks != 1 {
		t.Fatalf("state change not live: %+v", o)
	}
	for i := 0; i < 2; i++ {
		if o, live = o.Tick("s1", "s1", true); live || o.Disabled {
			t.Fatalf("no-op %d: %+v", i, o)
		}
	}
	o, live = o.Tick("s1", "s1", true)
	if live || !o.Disabled || o.Reason != ObsNoOpLimit {
		t.Fatalf("third no-op did not disable: %+v", o)
	}
	if o, live = o.Tick("s1", "s2", true); live || o.Reason != ObsAlreadyFrozen {
		t.Fatalf("disabled schedule counted live: %+v", o)
	}
	var sealed Observer
	if sealed, live = sealed.Tick("a", "b", false); live || !sealed.Disabled || sealed.Reason != ObsOnlyNoOp {
		t.Fatalf("sealed loop not disabled: %+v", sealed)
	}
}

func testReceipt(outcome string) protocol.ActionReceipt {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	approval := d("5")
	return protocol.ActionReceipt{
		Kind: "ActionReceipt", IntentID: "intent:7", ActionDigest: d("1"), CommandDigest: d("2"),
		InputRootDigest: d("3"), PlatformDigest: d("4"), CauseID: "evt:7", CorrelationID: "run:7",
		Capability: "capability:restart", AuthorityDigest: d("6"), DestinationDigest: d("7"),
		GoalID: "goal:7", ObligationID: "obligation:7", AdapterVersion: "http/1", AssessedRisk: "reversible",
		ApprovalRequired: true, ApprovalDigest: &approval, AttemptID: "attempt:7", IdempotencyKey: "effect:7",
		OutputDigests: protocol.DigestSet{d("8")}, Outcome: outcome, RecordedAt: "2026-08-08T00:00:02Z",
	}
}

func TestFromReceipt(t *testing.T) {
	w, success, err := FromReceipt(testReceipt(OutcomeSuccess), "destination", "verifier", true)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Closes(w, "agent"); !ok || !success {
		t.Fatalf("verified success did not close the loop: %s", why)
	}
	// Unknown is not success and never settles.
	w, success, err = FromReceipt(testReceipt(OutcomeUnknown), "destination", "verifier", true)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := Closes(w, "agent"); ok || success || why != ReasonTransient {
		t.Fatalf("unknown outcome: closes=%v success=%v why=%s", ok, success, why)
	}
	// A receipt its producer verifies is not independent.
	w, _, _ = FromReceipt(testReceipt(OutcomeFailure), "destination", "destination", true)
	if ok, _ := Closes(w, "agent"); ok {
		t.Fatal("self-verified receipt closed the loop")
	}
	bad := testReceipt(OutcomeSuccess)
	bad.ActionDigest = "nope"
	if _, _, err := FromReceipt(bad, "destination", "verifier", true); err == nil {
		t.Fatal("invalid receipt accepted")
	}
}

func TestComputedCalibration(t *testing.T) {
	pred := []float64{0.8, 0.6, 0.9, 0.4}
	// Layer 1 against the model's own later scores: consistent.
	l1, err := SelfConsistency(pred, []float64{0.8, 0.62, 0.88, 0.41}, 0.05, 0.75)
	if err != nil || !l1.Passed || l1.Agreements != 4 {
		t.Fatalf("layer 1 %+v %v", l1, err)
	}
	rec := func(id string, tags *Tags) Record { return Record{id, "reviewer", "model", tags} }
	outcomes := []Witnessed{
		{rec("o1", good), 0.8}, {rec("o2", good), 0.1}, {rec("o3", good), 0.9}, {rec("o4", nil), 0.4},
	}
	// Two of four agree with counting outcomes; the untagged one cannot help.
	l2, err := ExternalCalibration("reviewer", pred, outcomes, 0.05, 0.75)
	if err != nil || l2.Passed {
		t.Fatalf("layer 2 %+v %v", l2, err)
	}
	v := Check(Calibration{Model: "model", Layer1: l1, Layer2: l2})
	if v.ClearsValue || v.Reason != CalFailed || !v.Layer1Consistent {
		t.Fatalf("consistent but wrong about the world must not clear: %+v", v)
	}
	outcomes[1].Value, outcomes[3].Record.Tags = 0.6, good
	l2, _ = ExternalCalibration("reviewer", pred, outcomes, 0.05, 0.75)
	if v := Check(Calibration{Model: "model", Layer1: l1, Layer2: l2}); !v.ClearsValue {
		t.Fatalf("witnessed agreement did not clear: %+v", v)
	}
	if _, err := SelfConsistency(pred, pred[:2], 0.1, 1); err == nil {
		t.Fatal("length mismatch accepted")
	}
}
