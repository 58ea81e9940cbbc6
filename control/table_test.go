package control

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// The reference run-fsm.v1 table, transcribed as facts from the reference
// corpus (gj3447/agent-coding-paradigm, spec/run-fsm.v1.json): every
// transition as (id, from, event, to, guard), every event's authority pair,
// every final state's outcome category and the interrupt deferral states.
// The embedded table must say exactly this.
var refTransitions = [][5]string{
	{"start", "INIT", "START", "INGEST", ""},
	{"accept-event", "INGEST", "EVENT_ACCEPTED", "STABILIZE", ""},
	{"stabilize-epoch", "STABILIZE", "EPOCH_STABLE", "PLAN_EFFECTS", "frontier_passed"},
	{"rule-budget-pathology", "STABILIZE", "RULE_BUDGET_EXHAUSTED", "RULE_BUDGET_EXHAUSTED", ""},
	{"verify-without-effects", "PLAN_EFFECTS", "NO_EFFECTS", "VERIFY_COMPLETION", ""},
	{"request-approval", "PLAN_EFFECTS", "APPROVAL_REQUIRED", "WAIT_APPROVAL", ""},
	{"authorize-low-risk", "PLAN_EFFECTS", "EFFECT_AUTHORIZED", "COMMIT_INTENT", ""},
	{"consume-approval", "WAIT_APPROVAL", "APPROVAL_GRANTED", "COMMIT_INTENT", "approval_matches"},
	{"reject-approval", "WAIT_APPROVAL", "APPROVAL_DENIED", "FAILED_PERMANENT", ""},
	{"expire-approval", "WAIT_APPROVAL", "APPROVAL_EXPIRED", "PLAN_EFFECTS", ""},
	{"dispatch-after-commit", "COMMIT_INTENT", "INTENT_COMMITTED", "EXECUTE", "intent_durable"},
	{"begin-reconciliation", "EXECUTE", "ATTEMPT_RECORDED", "RECONCILE", ""},
	{"receipt-confirmed", "RECONCILE", "EFFECT_RESULT_CONFIRMED", "HONOR_PENDING_INTERRUPT", ""},
	{"outcome-unknown", "RECONCILE", "OUTCOME_UNKNOWN", "HUMAN_RECONCILIATION", ""},
	{"human-reconciled", "HUMAN_RECONCILIATION", "HUMAN_RECEIPT_CONFIRMED", "HONOR_PENDING_INTERRUPT", ""},
	{"human-abandoned", "HUMAN_RECONCILIATION", "ABANDON", "EFFECT_OUTCOME_UNKNOWN", ""},
	{"resume-after-receipt", "HONOR_PENDING_INTERRUPT", "NO_PENDING_INTERRUPT", "INGEST", ""},
	{"effect-then-cancel", "HONOR_PENDING_INTERRUPT", "PENDING_CANCEL", "CANCELED", ""},
	{"effect-then-timeout", "HONOR_PENDING_INTERRUPT", "PENDING_TIMEOUT", "TIMED_OUT", ""},
	{"effect-then-budget", "HONOR_PENDING_INTERRUPT", "PENDING_BUDGET_EXHAUSTED", "BUDGET_EXHAUSTED", ""},
	{"succeed-after-verification", "VERIFY_COMPLETION", "VERIFIED_COMPLETE", "SUCCEEDED", "completion_closed"},
	{"continue-after-verification", "VERIFY_COMPLETION", "MORE_WORK", "INGEST", ""},
	{"fail-after-verification", "VERIFY_COMPLETION", "VERIFIED_FAILURE", "FAILED_PERMANENT", ""},
	{"no-progress", "VERIFY_COMPLETION", "NO_PROGRESS", "NO_PROGRESS", ""},
	{"retry-exhausted", "INGEST", "RETRIES_EXHAUSTED", "RETRY_EXHAUSTED", ""},
}

var refAuthority = map[string][2]string{
	"START": {"runner", "control.start"}, "EVENT_ACCEPTED": {"ingress_validator", "event.accept"},
	"EPOCH_STABLE": {"stabilizer", "epoch.close"}, "RULE_BUDGET_EXHAUSTED": {"rule_budget_governor", "budget.halt_rules"},
	"NO_EFFECTS": {"runner", "effect.plan_empty"}, "APPROVAL_REQUIRED": {"policy_evaluator", "approval.request"},
	"EFFECT_AUTHORIZED": {"policy_evaluator", "effect.authorize_low_risk"}, "APPROVAL_GRANTED": {"human_approver", "approval.grant_exact_hash"},
	"APPROVAL_DENIED": {"human_approver", "approval.deny"}, "APPROVAL_EXPIRED": {"approval_timer", "approval.expire"},
	"INTENT_COMMITTED": {"outbox_dispatcher", "effect.dispatch_committed"}, "ATTEMPT_RECORDED": {"outbox_dispatcher", "effect.record_attempt"},
	"EFFECT_RESULT_CONFIRMED": {"independent_receipt_verifier", "receipt.confirm"}, "OUTCOME_UNKNOWN": {"outcome_reconciler", "receipt.mark_unknown"},
	"HUMAN_RECEIPT_CONFIRMED": {"human_reconciler", "receipt.confirm_external"}, "ABANDON": {"human_reconciler", "receipt.abandon_unknown"},
	"NO_PENDING_INTERRUPT": {"interrupt_reconciler", "interrupt.resume"}, "PENDING_CANCEL": {"interrupt_reconciler", "interrupt.honor_cancel"},
	"PENDING_TIMEOUT": {"interrupt_reconciler", "interrupt.honor_timeout"}, "PENDING_BUDGET_EXHAUSTED": {"interrupt_reconciler", "interrupt.honor_budget"},
	"VERIFIED_COMPLETE": {"independent_completion_verifier", "completion.succeed"}, "MORE_WORK": {"independent_completion_verifier", "completion.continue"},
	"VERIFIED_FAILURE": {"independent_completion_verifier", "completion.fail"}, "NO_PROGRESS": {"no_progress_detector", "progress.halt"},
	"RETRIES_EXHAUSTED": {"retry_controller", "retry.halt"}, "CANCEL": {"authorized_requester", "run.cancel"},
	"TIMEOUT": {"deadline_controller", "run.timeout"}, "BUDGET_EXHAUSTED": {"budget_governor", "run.halt_budget"},
}

var refFinal = map[string]string{
	"SUCCEEDED": "success", "FAILED_PERMANENT": "permanent_failure", "RETRY_EXHAUSTED": "retry_exhausted",
	"BUDGET_EXHAUSTED": "budget_exhausted", "TIMED_OUT": "timeout", "CANCELED": "canceled",
	"RULE_BUDGET_EXHAUSTED": "pathology", "NO_PROGRESS": "saturated", "EFFECT_OUTCOME_UNKNOWN": "unknown_external_outcome",
}

var refAtomic = []string{"INIT", "INGEST", "STABILIZE", "PLAN_EFFECTS", "WAIT_APPROVAL", "COMMIT_INTENT", "EXECUTE", "RECONCILE", "HUMAN_RECONCILIATION", "HONOR_PENDING_INTERRUPT", "VERIFY_COMPLETION"}

var refDeferred = []string{"COMMIT_INTENT", "EXECUTE", "RECONCILE", "HUMAN_RECONCILIATION", "HONOR_PENDING_INTERRUPT"}

var refInterrupts = map[string]string{"CANCEL": "CANCELED", "TIMEOUT": "TIMED_OUT", "BUDGET_EXHAUSTED": "BUDGET_EXHAUSTED"}

var refGuardReads = map[string][]string{
	"frontier_passed": {"frontier_passed"}, "approval_matches": {"approval_matches"},
	"intent_durable": {"intent_durable"}, "completion_closed": {"independent_receipt_closed", "no_unknown_effects"},
}

func TestEmbeddedTableMatchesReference(t *testing.T) {
	m := Default()
	if m.InitialState() != "INIT" {
		t.Errorf("initial %s, want INIT", m.InitialState())
	}
	var atomic []string
	final := map[string]string{}
	for _, s := range m.States() {
		if s.Final() {
			final[s.ID] = s.Outcome
		} else {
			atomic = append(atomic, s.ID)
		}
	}
	if !slices.Equal(atomic, refAtomic) {
		t.Errorf("atomic states %v, want %v", atomic, refAtomic)
	}
	if len(final) != 9 {
		t.Errorf("%d final states, want 9", len(final))
	}
	for id, cat := range refFinal {
		if final[id] != cat {
			t.Errorf("final %s has category %q, want %q", id, final[id], cat)
		}
	}
	ts := m.Transitions()
	if len(ts) != len(refTransitions) {
		t.Fatalf("%d transitions, want %d", len(ts), len(refTransitions))
	}
	byID := map[string]Transition{}
	for _, tr := range ts {
		byID[tr.ID] = tr
		if len(tr.Emit) != 1 || tr.Emit[0] != "PersistControlTransition" {
			t.Errorf("%s emits %v", tr.ID, tr.Emit)
		}
		if len(tr.Evidence) == 0 {
			t.Errorf("%s requires no evidence", tr.ID)
		}
	}
	for _, r := range refTransitions {
		tr, ok := byID[r[0]]
		if !ok {
			t.Errorf("transition %s missing", r[0])
			continue
		}
		if got := [5]string{tr.ID, tr.From, tr.Event, tr.To, tr.Guard}; got != r {
			t.Errorf("transition %v, want %v", got, r)
		}
	}
	events := m.Events()
	if len(events) != len(refAuthority) {
		t.Errorf("%d events, want %d", len(events), len(refAuthority))
	}
	for _, e := range events {
		want := refAuthority[e.ID]
		if len(e.Authority) != 1 || e.Authority[0] != (AuthorityPair{want[0], want[1]}) {
			t.Errorf("event %s authority %v, want %v", e.ID, e.Authority, want)
		}
	}
	if !slices.Equal(m.DeferredIn(), refDeferred) {
		t.Errorf("deferred in %v, want %v", m.DeferredIn(), refDeferred)
	}
	for _, in := range m.Interrupts() {
		if refInterrupts[in.Event] != in.To {
			t.Errorf("interrupt %s -> %s, want %s", in.Event, in.To, refInterrupts[in.Event])
		}
	}
	if len(m.Interrupts()) != 3 {
		t.Errorf("%d interrupts, want 3", len(m.Interrupts()))
	}
	for name, reads := range refGuardReads {
		g, ok := m.Guard(name)
		if !ok || !slices.Equal(g.AllTrue, reads) {
			t.Errorf("guard %s reads %v, want %v", name, g.AllTrue, reads)
		}
	}
	if !cjson.ValidDigest(m.Digest()) {
		t.Errorf("digest %q", m.Digest())
	}
}

// TestDigestIsCanonical: the digest covers meaning, not layout. Reformatting
// the table does not change it; changing one fact does.
func TestDigestIsCanonical(t *testing.T) {
	v, err := cjson.Decode(defaultTable)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := cjson.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Load(canon)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Digest() != Default().Digest() {
		t.Errorf("reformatted table digest %s != %s", m2.Digest(), Default().Digest())
	}
	m3, err := Load(mutateTable(t, func(r map[string]any) {
		tr := r["transitions"].([]any)[0].(map[string]any)
		tr["evidence"] = []any{"workflow_digest"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if m3.Digest() == Default().Digest() {
		t.Error("changing a transition's evidence left the digest unchanged")
	}
}

// mutateTable decodes the embedded table, applies f and re-encodes it.
func mutateTable(t testing.TB, f func(root map[string]any)) []byte {
	t.Helper()
	v, err := cjson.Decode(defaultTable)
	if err != nil {
		t.Fatal(err)
	}
	f(v.(map[string]any))
	b, err := cjson.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func findTransition(r map[string]any, id string) map[string]any {
	for _, x := range r["transitions"].([]any) {
		if tr := x.(map[string]any); tr["id"] == id {
			return tr
		}
	}
	panic("no transition " + id)
}

func findEvent(r map[string]any, id string) map[string]any {
	for _, x := range r["events"].([]any) {
		if e := x.(map[string]any); e["id"] == id {
			return e
		}
	}
	panic("no event " + id)
}

func appendTransition(r map[string]any, tr map[string]any) {
	r["transitions"] = append(r["transitions"].([]any), tr)
}

func tr(id, from, on, to string) map[string]any {
	return map[string]any{"id": id, "from": from, "on": on, "to": to, "emit": []any{"PersistControlTransition"}, "evidence": []any{"x"}}
}

func TestLoadRejectsMalformedTables(t *testing.T) {
	cases := []struct {
		name    string
		text    []byte
		mutate  func(r map[string]any)
		code    Code
		pointer string
	}{
		{name: "not json", text: []byte("{"), code: CodeSyntax},
		{name: "float", text: []byte(`{"format": 1.5}`), code: CodeSyntax, pointer: "/format"},
		{name: "not an object", text: []byte(`[]`), code: CodeSchema, pointer: ""},
		{name: "wrong format", mutate: func(r map[string]any) { r["format"] = "flrh-control-fsm/2" }, code: CodeFormat, pointer: "/format"},
		{name: "unknown member", mutate: func(r map[string]any) { r["colour"] = "red" }, code: CodeSchema, pointer: "/colour"},
		{name: "unknown member in transition", mutate: func(r map[string]any) { findTransition(r, "start")["priority"] = int64(1) }, code: CodeSchema, pointer: "/transitions/0/priority"},
		{name: "missing initial", mutate: func(r map[string]any) { delete(r, "initial") }, code: CodeSchema, pointer: "/initial"},
		{name: "unknown initial", mutate: func(r map[string]any) { r["initial"] = "NOWHERE" }, code: CodeUnknownRef, pointer: "/initial"},
		{name: "final initial", mutate: func(r map[string]any) { r["initial"] = "SUCCEEDED" }, code: CodeFinal, pointer: "/initial"},
		{name: "duplicate state", mutate: func(r map[string]any) {
			r["states"] = append(r["states"].([]any), map[string]any{"id": "INGEST"})
		}, code: CodeDuplicate, pointer: "/states/20/id"},
		{name: "unreachable state", mutate: func(r map[string]any) {
			r["states"] = append(r["states"].([]any), map[string]any{"id": "ORPHAN"})
		}, code: CodeUnreachable, pointer: "/states/20"},
		{name: "unknown outcome category", mutate: func(r map[string]any) {
			r["states"].([]any)[11].(map[string]any)["outcome"] = "victory"
		}, code: CodeOutcome, pointer: "/states/11/outcome"},
		{name: "repeated outcome category", mutate: func(r map[string]any) {
			r["states"].([]any)[12].(map[string]any)["outcome"] = "success"
		}, code: CodeOutcome, pointer: "/states/12/outcome"},
		{name: "transition to unknown state", mutate: func(r map[string]any) { findTransition(r, "start")["to"] = "NOWHERE" }, code: CodeUnknownRef, pointer: "/transitions/0/to"},
		{name: "transition from unknown state", mutate: func(r map[string]any) { findTransition(r, "start")["from"] = "NOWHERE" }, code: CodeUnknownRef, pointer: "/transitions/0/from"},
		{name: "transition on unknown event", mutate: func(r map[string]any) { findTransition(r, "start")["on"] = "BEGIN" }, code: CodeUnknownRef, pointer: "/transitions/0/on"},
		{name: "unknown guard", mutate: func(r map[string]any) { findTransition(r, "start")["guard"] = "lucky" }, code: CodeUnknownRef, pointer: "/transitions/0/guard"},
		{name: "unknown effect", mutate: func(r map[string]any) { findTransition(r, "start")["emit"] = []any{"Launch"} }, code: CodeUnknownRef, pointer: "/transitions/0/emit/0"},
		{name: "audit effect on a transition", mutate: func(r map[string]any) { findTransition(r, "start")["emit"] = []any{"AuditInvalidTransition"} }, code: CodeSchema, pointer: "/transitions/0/emit/0"},
		{name: "no evidence", mutate: func(r map[string]any) { findTransition(r, "start")["evidence"] = []any{} }, code: CodeSchema, pointer: "/transitions/0/evidence"},
		{name: "duplicate transition id", mutate: func(r map[string]any) { appendTransition(r, tr("start", "PLAN_EFFECTS", "MORE_WORK", "INGEST")) }, code: CodeDuplicate, pointer: "/transitions/25/id"},
		{name: "duplicate transition edge", mutate: func(r map[string]any) { appendTransition(r, tr("again", "INIT", "START", "INGEST")) }, code: CodeAmbiguous, pointer: "/transitions/25"},
		{name: "exit from a final state", mutate: func(r map[string]any) { appendTransition(r, tr("revive", "SUCCEEDED", "START", "INGEST")) }, code: CodeFinal, pointer: "/transitions/25/from"},
		{name: "event without authority", mutate: func(r map[string]any) { findEvent(r, "START")["authority"] = []any{} }, code: CodeAuthority, pointer: "/events/0/authority"},
		{name: "event with authority member missing", mutate: func(r map[string]any) { delete(findEvent(r, "START"), "authority") }, code: CodeAuthority, pointer: "/events/0/authority"},
		{name: "model authority", mutate: func(r map[string]any) {
			findEvent(r, "APPROVAL_GRANTED")["authority"] = []any{map[string]any{"role": "model", "capability": "approval.grant_exact_hash"}}
		}, code: CodeAuthority, pointer: "/events/7/authority/0/role"},
		{name: "untrusted authority", mutate: func(r map[string]any) {
			findEvent(r, "CANCEL")["authority"] = []any{map[string]any{"role": "untrusted_tool", "capability": "run.cancel"}}
		}, code: CodeAuthority, pointer: "/events/25/authority/0/role"},
		{name: "duplicate event", mutate: func(r map[string]any) {
			r["events"] = append(r["events"].([]any), map[string]any{"id": "START", "authority": []any{map[string]any{"role": "runner", "capability": "control.start"}}})
		}, code: CodeDuplicate, pointer: "/events/28/id"},
		{name: "guard reads undeclared context", mutate: func(r map[string]any) {
			r["guards"].(map[string]any)["frontier_passed"] = map[string]any{"all_true": []any{"vibes"}}
		}, code: CodeUnknownRef, pointer: "/guards/frontier_passed/all_true/0"},
		{name: "effect with unknown field", mutate: func(r map[string]any) {
			r["effects"].(map[string]any)["PersistControlTransition"].(map[string]any)["fields"] = []any{"event_id", "secret"}
		}, code: CodeUnknownRef, pointer: "/effects/PersistControlTransition/fields/1"},
		{name: "interrupt to atomic state", mutate: func(r map[string]any) {
			r["interrupts"].(map[string]any)["events"].([]any)[0].(map[string]any)["to"] = "INGEST"
		}, code: CodeInterrupt, pointer: "/interrupts/events/0/to"},
		{name: "interrupt deferred in final state", mutate: func(r map[string]any) {
			r["interrupts"].(map[string]any)["deferred_in"] = []any{"EXECUTE", "SUCCEEDED"}
		}, code: CodeInterrupt, pointer: "/interrupts/deferred_in/1"},
		{name: "interrupt labelling a transition", mutate: func(r map[string]any) { appendTransition(r, tr("cancel-plan", "PLAN_EFFECTS", "CANCEL", "CANCELED")) }, code: CodeInterrupt, pointer: "/interrupts/events/0/event"},
		{name: "interrupt never honored", mutate: func(r map[string]any) {
			r["interrupts"].(map[string]any)["events"].([]any)[0].(map[string]any)["honored_by"] = "MORE_WORK"
		}, code: CodeInterrupt, pointer: "/interrupts/events/0/honored_by"},
		{name: "pending interrupts could leak", mutate: func(r map[string]any) { findTransition(r, "begin-reconciliation")["to"] = "PLAN_EFFECTS" }, code: CodeInterrupt, pointer: "/transitions/12"},
		{name: "effect-intent-first: execute from planning", mutate: func(r map[string]any) {
			x := tr("shortcut", "PLAN_EFFECTS", "INTENT_COMMITTED", "EXECUTE")
			x["guard"] = "intent_durable"
			appendTransition(r, x)
		}, code: CodeSafety, pointer: "/transitions/25"},
		{name: "effect-intent-first: unguarded dispatch", mutate: func(r map[string]any) { delete(findTransition(r, "dispatch-after-commit"), "guard") }, code: CodeSafety, pointer: "/transitions/11"},
		{name: "verified-success-only: unguarded success", mutate: func(r map[string]any) { delete(findTransition(r, "succeed-after-verification"), "guard") }, code: CodeSafety, pointer: "/transitions/21"},
		{name: "verified-success-only: closure guard without unknown-effect check", mutate: func(r map[string]any) {
			r["guards"].(map[string]any)["completion_closed"] = map[string]any{"all_true": []any{"independent_receipt_closed"}}
		}, code: CodeSafety, pointer: "/transitions/21"},
		{name: "verified-success-only: second way to success", mutate: func(r map[string]any) { appendTransition(r, tr("lucky", "PLAN_EFFECTS", "MORE_WORK", "SUCCEEDED")) }, code: CodeSafety, pointer: "/transitions"},
		{name: "unknown-is-not-success: abandon elsewhere", mutate: func(r map[string]any) { findTransition(r, "human-abandoned")["to"] = "FAILED_PERMANENT" }, code: CodeUnreachable, pointer: "/states/19"},
		{name: "unknown-is-not-success: unknown outcome category moved", mutate: func(r map[string]any) {
			r["states"].([]any)[19].(map[string]any)["outcome"] = "saturated"
			r["states"].([]any)[18].(map[string]any)["outcome"] = "unknown_external_outcome"
		}, code: CodeSafety, pointer: "/states"},
		{name: "receipt-reingestion: confirmation bypasses interrupts", mutate: func(r map[string]any) { findTransition(r, "receipt-confirmed")["to"] = "FAILED_PERMANENT" }, code: CodeSafety, pointer: "/transitions/13"},
		{name: "rejection effect not an audit", mutate: func(r map[string]any) { r["rejection"] = map[string]any{"effect": "PersistControlTransition"} }, code: CodeSchema, pointer: "/rejection/effect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if tc.mutate != nil {
				text = mutateTable(t, tc.mutate)
			}
			m, err := Load(text)
			if err == nil {
				t.Fatalf("loaded a malformed table (digest %s)", m.Digest())
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *control.Error", err, err)
			}
			if e.Code != tc.code || (tc.code != CodeSyntax || tc.pointer != "") && e.Pointer != tc.pointer {
				t.Errorf("got %s at %q (%s), want %s at %q", e.Code, e.Pointer, e.Detail, tc.code, tc.pointer)
			}
			if !strings.Contains(err.Error(), string(tc.code)) {
				t.Errorf("message %q does not name the code", err)
			}
		})
	}
}

// Name gives the same string as a conversion, and the table's own copy of a
// name the table declares.
func TestNameIsTheTablesCopy(t *testing.T) {
	m := Default()
	for _, e := range m.Events() {
		for _, s := range append([]string{e.ID}, e.Authority[0].Role, e.Authority[0].Capability) {
			got := m.Name([]byte(s))
			if got != s {
				t.Fatalf("Name(%q) = %q", s, got)
			}
			if n := testing.AllocsPerRun(10, func() { _ = m.Name([]byte(s)) }); n != 0 {
				t.Fatalf("Name(%q) allocates %v times", s, n)
			}
		}
	}
	for _, s := range []string{"", "NOT_AN_EVENT", "é"} {
		if got := m.Name([]byte(s)); got != s {
			t.Fatalf("Name(%q) = %q", s, got)
		}
	}
	var none *Machine
	if got := none.Name([]byte("x")); got != "x" {
		t.Fatalf("a nil machine's Name(%q) = %q", "x", got)
	}
}
