package workflow

import (
	"fmt"
	"slices"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// testVerifier is the runtime actor that reports a test's outcome to the
// deliberation machine: the receipt of a verification-class effect.
var testVerifier = mrp.Actor{ID: "receipt", Kind: mrp.ActorSystem, Role: "test_verifier"}

// verificationClass reports whether the bundle's manifest makes the
// effect type verification-class: side_effects exactly [NONE].
func (w *Workflow) verificationClass(effectType string) bool {
	m, ok := w.policy.Manifests[effectType]
	return ok && len(m.SideEffects) == 1 && m.SideEffects[0] == authority.SideEffectNone
}

// closeTest lets the receipt of a verification-class effect decide a test
// the machine is in: TEST admits only such effects, so their receipts are
// the test's results. A confirmed failure contradicts the test at once
// (TESTS_CONTRADICT → HOLD, R17); a confirmed success passes it
// (TESTS_PASS → DECIDE, R16) once no other verification-class effect is
// still open. An unknown outcome decides nothing. Without this a TEST a
// person requested was never left (decision 0611).
func (t *tick) closeTest(o openIntent, outcome string) {
	st := t.st
	if st.Machine.State != mrp.Test || !t.w.verificationClass(o.EffectType) {
		return
	}
	ev := mrp.Event{Actor: testVerifier, Progress: true,
		Cause: fmt.Sprintf("%s (%s) %s", o.IntentID, o.EffectType, outcome)}
	switch outcome {
	case protocol.OutcomeConfirmedFailure:
		ev.Trigger, ev.Target = mrp.TestsContradict, mrp.Hold
	case protocol.OutcomeConfirmedSuccess:
		if slices.ContainsFunc(st.Open, func(x openIntent) bool { return t.w.verificationClass(x.EffectType) }) {
			return
		}
		ev.Trigger = mrp.TestsPass
	default:
		return
	}
	// Both rows leave TEST without conditions, so Step cannot refuse here;
	// a refusal would still be recorded in the journey and change nothing.
	st.Machine, _ = mrp.Step(st.Machine, ev)
}
