package control

import "slices"

// The state, event and guard names the five safety properties speak about.
// A control table must use this vocabulary: the properties are checked on
// the table at load time and again on random runs in the tests.
const (
	StateIngest            = "INGEST"
	StateCommitIntent      = "COMMIT_INTENT"
	StateExecute           = "EXECUTE"
	StateReconcile         = "RECONCILE"
	StateHumanReconcile    = "HUMAN_RECONCILIATION"
	StateHonorInterrupt    = "HONOR_PENDING_INTERRUPT"
	StateVerifyCompletion  = "VERIFY_COMPLETION"
	StateSucceeded         = "SUCCEEDED"
	StateOutcomeUnknown    = "EFFECT_OUTCOME_UNKNOWN"
	EventAbandon           = "ABANDON"
	EventEffectConfirmed   = "EFFECT_RESULT_CONFIRMED"
	EventHumanConfirmed    = "HUMAN_RECEIPT_CONFIRMED"
	GuardIntentDurable     = "intent_durable"
	GuardCompletionClosed  = "completion_closed"
	ContextReceiptClosed   = "independent_receipt_closed"
	ContextNoUnknown       = "no_unknown_effects"
	EvidenceClosureReceipt = "independent_closure_receipt"
	EvidenceNoUnknown      = "empty_unknown_effect_ledger"
)

// SafetyProperties names the five safety properties in the order the loop
// contract requires them.
var SafetyProperties = []string{
	"effect-intent-first",
	"verified-success-only",
	"unknown-is-not-success",
	"receipt-reingestion",
	"authority-is-external",
}

// checkSafety proves, on the table's graph, the structural half of each
// safety property. The dynamic half (guards, authority) is enforced by Step.
func (m *Machine) checkSafety() error {
	for _, s := range []string{StateIngest, StateCommitIntent, StateExecute, StateReconcile, StateHumanReconcile, StateHonorInterrupt, StateVerifyCompletion, StateSucceeded, StateOutcomeUnknown} {
		if _, ok := m.State(s); !ok {
			return errorf(CodeSafety, "/states", "the safety properties need state %q", s)
		}
	}

	// effect-intent-first: every edge into EXECUTE comes from COMMIT_INTENT
	// behind intent_durable, and no path reaches EXECUTE around COMMIT_INTENT.
	for i, t := range m.transitions {
		if t.To == StateExecute && (t.From != StateCommitIntent || t.Guard != GuardIntentDurable) {
			return errorf(CodeSafety, index("/transitions", i), "effect-intent-first: %q enters %s from %s with guard %q", t.ID, StateExecute, t.From, t.Guard)
		}
	}
	if m.deferredIn[StateExecute] && !m.deferredIn[StateCommitIntent] {
		return errorf(CodeSafety, "/interrupts/deferred_in", "effect-intent-first: %s defers interrupts but %s does not", StateExecute, StateCommitIntent)
	}
	if m.reachable(m.initial, StateCommitIntent)[StateExecute] {
		return errorf(CodeSafety, "/transitions", "effect-intent-first: %s is reachable without passing %s", StateExecute, StateCommitIntent)
	}

	// verified-success-only: exactly one edge into SUCCEEDED, from
	// VERIFY_COMPLETION, behind a guard that reads both closure facts and
	// requiring both closure evidences; no interrupt targets SUCCEEDED.
	var into []int
	for i, t := range m.transitions {
		if t.To == StateSucceeded {
			into = append(into, i)
		}
	}
	if len(into) != 1 {
		return errorf(CodeSafety, "/transitions", "verified-success-only: %d transitions enter %s, want exactly 1", len(into), StateSucceeded)
	}
	t := m.transitions[into[0]]
	p := index("/transitions", into[0])
	g := m.guards[t.Guard]
	if t.From != StateVerifyCompletion || t.Guard != GuardCompletionClosed ||
		!slices.Contains(g.AllTrue, ContextReceiptClosed) || !slices.Contains(g.AllTrue, ContextNoUnknown) ||
		!slices.Contains(t.Evidence, EvidenceClosureReceipt) || !slices.Contains(t.Evidence, EvidenceNoUnknown) {
		return errorf(CodeSafety, p, "verified-success-only: %q must run %s -> %s behind %q reading %s and %s and require %s and %s",
			t.ID, StateVerifyCompletion, StateSucceeded, GuardCompletionClosed, ContextReceiptClosed, ContextNoUnknown, EvidenceClosureReceipt, EvidenceNoUnknown)
	}
	for i, in := range m.interrupts {
		if in.To == StateSucceeded {
			return errorf(CodeSafety, index("/interrupts/events", i), "verified-success-only: interrupt %q targets %s", in.Event, StateSucceeded)
		}
	}

	// unknown-is-not-success: ABANDON ends in the unknown-outcome terminal,
	// and from HUMAN_RECONCILIATION only a confirmed receipt (through
	// HONOR_PENDING_INTERRUPT) or a non-success terminal follows.
	if st, _ := m.State(StateOutcomeUnknown); st.Outcome != "unknown_external_outcome" {
		return errorf(CodeSafety, "/states", "unknown-is-not-success: %s must be final with outcome unknown_external_outcome", StateOutcomeUnknown)
	}
	abandon := false
	for i, t := range m.transitions {
		if t.Event == EventAbandon {
			if t.To != StateOutcomeUnknown {
				return errorf(CodeSafety, index("/transitions", i), "unknown-is-not-success: %q abandons into %s", t.ID, t.To)
			}
			abandon = true
		}
		if t.From == StateHumanReconcile && t.To != StateHonorInterrupt && !(m.Final(t.To) && t.To != StateSucceeded) {
			return errorf(CodeSafety, index("/transitions", i), "unknown-is-not-success: %q leaves %s for %s", t.ID, StateHumanReconcile, t.To)
		}
	}
	if !abandon {
		return errorf(CodeSafety, "/transitions", "unknown-is-not-success: no %s transition reaches %s", EventAbandon, StateOutcomeUnknown)
	}

	// receipt-reingestion: confirmations go to HONOR_PENDING_INTERRUPT, and
	// completion verification is unreachable from an effect without INGEST.
	for i, t := range m.transitions {
		if (t.Event == EventEffectConfirmed || t.Event == EventHumanConfirmed) && t.To != StateHonorInterrupt {
			return errorf(CodeSafety, index("/transitions", i), "receipt-reingestion: %q confirms a receipt into %s", t.ID, t.To)
		}
	}
	if m.reachable(StateExecute, StateIngest)[StateVerifyCompletion] {
		return errorf(CodeSafety, "/transitions", "receipt-reingestion: %s reaches %s without re-entering %s", StateExecute, StateVerifyCompletion, StateIngest)
	}

	// authority-is-external: checked per event while parsing (non-empty
	// pairs, no model or untrusted role); Step refuses everything else.
	return nil
}
