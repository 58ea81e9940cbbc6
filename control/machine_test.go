package control

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

// ev builds an event issued by the table's own authority pair for typ.
func ev(typ, id string) Event {
	a := refAuthority[typ]
	return Event{Type: typ, ActorRole: a[0], Capability: a[1], EventID: id, Payload: map[string]any{}}
}

type step struct {
	event   Event
	guards  map[string]bool
	state   string
	effects []string
}

const (
	persist = "PersistControlTransition"
	pending = "PersistPendingInterrupt"
	audit   = "AuditInvalidTransition"
)

// Trace cases transcribed from the reference corpus (spec/run-fsm-traces.v1.json
// of gj3447/agent-coding-paradigm), so the package tests stand alone.
var transcribed = map[string][]step{
	"nes": {
		{ev("START", "nes:1"), nil, "INGEST", []string{persist}},
		{ev("EVENT_ACCEPTED", "nes:2"), nil, "STABILIZE", []string{persist}},
		{ev("EPOCH_STABLE", "nes:3"), map[string]bool{"frontier_passed": true}, "PLAN_EFFECTS", []string{persist}},
		{ev("NO_EFFECTS", "nes:4"), nil, "VERIFY_COMPLETION", []string{persist}},
		{ev("VERIFIED_COMPLETE", "nes:5"), map[string]bool{"completion_closed": true}, "SUCCEEDED", []string{persist}},
	},
	"hrc": {
		{ev("START", "hrc:1"), nil, "INGEST", []string{persist}},
		{ev("EVENT_ACCEPTED", "hrc:2"), nil, "STABILIZE", []string{persist}},
		{ev("EPOCH_STABLE", "hrc:3"), map[string]bool{"frontier_passed": true}, "PLAN_EFFECTS", []string{persist}},
		{ev("EFFECT_AUTHORIZED", "hrc:4"), nil, "COMMIT_INTENT", []string{persist}},
		{ev("INTENT_COMMITTED", "hrc:5"), map[string]bool{"intent_durable": true}, "EXECUTE", []string{persist}},
		{ev("ATTEMPT_RECORDED", "hrc:6"), nil, "RECONCILE", []string{persist}},
		{ev("OUTCOME_UNKNOWN", "hrc:7"), nil, "HUMAN_RECONCILIATION", []string{persist}},
		{ev("CANCEL", "hrc:8"), nil, "HUMAN_RECONCILIATION", []string{pending}},
		{ev("HUMAN_RECEIPT_CONFIRMED", "hrc:9"), nil, "HONOR_PENDING_INTERRUPT", []string{persist}},
		{ev("PENDING_CANCEL", "hrc:10"), nil, "CANCELED", []string{persist}},
	},
	"edt": {
		{ev("START", "edt:1"), nil, "INGEST", []string{persist}},
		{ev("EVENT_ACCEPTED", "edt:2"), nil, "STABILIZE", []string{persist}},
		{ev("EPOCH_STABLE", "edt:3"), map[string]bool{"frontier_passed": true}, "PLAN_EFFECTS", []string{persist}},
		{ev("EFFECT_AUTHORIZED", "edt:4"), nil, "COMMIT_INTENT", []string{persist}},
		{ev("INTENT_COMMITTED", "edt:5"), map[string]bool{"intent_durable": true}, "EXECUTE", []string{persist}},
		{ev("TIMEOUT", "edt:6"), nil, "EXECUTE", []string{pending}},
		{ev("ATTEMPT_RECORDED", "edt:7"), nil, "RECONCILE", []string{persist}},
		{ev("EFFECT_RESULT_CONFIRMED", "edt:8"), nil, "HONOR_PENDING_INTERRUPT", []string{persist}},
		{ev("PENDING_TIMEOUT", "edt:9"), nil, "TIMED_OUT", []string{persist}},
	},
	"ag": {
		{ev("START", "ag:1"), nil, "INGEST", []string{persist}},
		{ev("EVENT_ACCEPTED", "ag:2"), nil, "STABILIZE", []string{persist}},
		{ev("EPOCH_STABLE", "ag:3"), map[string]bool{"frontier_passed": true}, "PLAN_EFFECTS", []string{persist}},
		{ev("APPROVAL_REQUIRED", "ag:4"), nil, "WAIT_APPROVAL", []string{persist}},
		{ev("APPROVAL_GRANTED", "ag:5"), map[string]bool{"approval_matches": false}, "WAIT_APPROVAL", []string{audit}},
	},
	"ic":     {{ev("CANCEL", "ic:1"), nil, "CANCELED", []string{persist}}},
	"unauth": {{Event{Type: "START", ActorRole: "model", Capability: "control.start", EventID: "unauth:1"}, nil, "INIT", []string{audit}}},
	"inv":    {{ev("VERIFIED_FAILURE", "inv:1"), nil, "INIT", []string{audit}}},
}

func TestTranscribedTraces(t *testing.T) {
	m := Default()
	for _, name := range sortedKeys(transcribed) {
		t.Run(name, func(t *testing.T) {
			c := m.Initial()
			for i, s := range transcribed[name] {
				ctx, err := m.ContextFromGuards(s.guards, "")
				if err != nil {
					t.Fatal(err)
				}
				c.Context = ctx
				r := m.Step(c, s.event)
				if r.Next.State != s.state || !slices.Equal(r.EffectNames(), s.effects) {
					t.Fatalf("step %d (%s): state %s effects %v, want %s %v", i+1, s.event.Type, r.Next.State, r.EffectNames(), s.state, s.effects)
				}
				c = r.Next
			}
		})
	}
}

// TestRunCaseDetectsDivergence: a trace whose expectation is wrong fails at
// the right step, so a passing conformance run means something.
func TestRunCaseDetectsDivergence(t *testing.T) {
	m := Default()
	var steps []TraceStep
	for _, s := range transcribed["nes"] {
		steps = append(steps, TraceStep{Event: s.event, Guards: s.guards, WantState: s.state, WantEffects: s.effects})
	}
	res, err := m.RunCase(TraceCase{ID: "nes", Steps: steps})
	if err != nil || !res.Passed {
		t.Fatalf("unmodified case: %v %v", res, err)
	}
	steps[3].WantEffects = []string{audit}
	res, _ = m.RunCase(TraceCase{ID: "nes", Steps: steps})
	if res.Passed || res.FailedStep != 4 {
		t.Errorf("wrong effects not caught at step 4: %+v", res)
	}
	steps[3].WantEffects = []string{persist}
	steps[4].Guards = map[string]bool{"completion_closed": false}
	res, _ = m.RunCase(TraceCase{ID: "nes", Steps: steps})
	if res.Passed || res.FailedStep != 5 || res.GotState != "VERIFY_COMPLETION" {
		t.Errorf("false guard not caught at step 5: %+v", res)
	}
	steps[4].Guards = map[string]bool{"good_vibes": true}
	if _, err := m.RunCase(TraceCase{ID: "nes", Pointer: "/cases/0", Steps: steps}); err == nil {
		t.Error("unknown guard name accepted")
	} else if e := new(Error); !errors.As(err, &e) || e.Pointer != "/cases/0/steps/4/guard_results/good_vibes" {
		t.Errorf("unknown guard error %v", err)
	}
}

// run drives m from the initial configuration through events, each with a
// guard context, and returns the final configuration.
func run(t *testing.T, m *Machine, events ...Event) Configuration {
	t.Helper()
	c := m.Initial()
	for _, e := range events {
		c.Context = map[string]bool{"frontier_passed": true, "approval_matches": true, "intent_durable": true, "independent_receipt_closed": true, "no_unknown_effects": true}
		r := m.Step(c, e)
		if !r.Accepted() {
			t.Fatalf("setup event %s rejected: %v", e.Type, r.Rejection)
		}
		c = r.Next
	}
	return c
}

func TestStepRejectsAndAudits(t *testing.T) {
	m := Default()
	toExecute := []Event{ev("START", "a"), ev("EVENT_ACCEPTED", "b"), ev("EPOCH_STABLE", "c"), ev("EFFECT_AUTHORIZED", "d"), ev("INTENT_COMMITTED", "e")}
	atExecute := run(t, m, toExecute...)
	atHonor := run(t, m, append(slices.Clone(toExecute), ev("ATTEMPT_RECORDED", "f"), ev("EFFECT_RESULT_CONFIRMED", "g"))...)
	honorWithCancel := m.Step(atHonor, ev("CANCEL", "h")).Next
	plan := run(t, m, ev("START", "a"), ev("EVENT_ACCEPTED", "b"), ev("EPOCH_STABLE", "c"))
	verify := run(t, m, ev("START", "a"), ev("EVENT_ACCEPTED", "b"), ev("EPOCH_STABLE", "c"), ev("NO_EFFECTS", "d"))
	done := run(t, m, ev("CANCEL", "x"))

	withCtx := func(c Configuration, ctx map[string]bool) Configuration { c.Context = ctx; return c }
	cases := []struct {
		name   string
		c      Configuration
		e      Event
		reason Reason
	}{
		{"undeclared event type", m.Initial(), Event{Type: "LAUNCH", ActorRole: "runner", Capability: "control.start", EventID: "x"}, ReasonSchema},
		{"bad role pattern", m.Initial(), Event{Type: "START", ActorRole: "Runner", Capability: "control.start", EventID: "x"}, ReasonSchema},
		{"bad capability pattern", m.Initial(), Event{Type: "START", ActorRole: "runner", Capability: "Control", EventID: "x"}, ReasonSchema},
		{"bad event id", m.Initial(), Event{Type: "START", ActorRole: "runner", Capability: "control.start", EventID: "-x"}, ReasonSchema},
		{"empty event id", m.Initial(), Event{Type: "START", ActorRole: "runner", Capability: "control.start"}, ReasonSchema},
		{"model actor", m.Initial(), Event{Type: "START", ActorRole: "model", Capability: "control.start", EventID: "x"}, ReasonAuthority},
		{"right role wrong capability", m.Initial(), Event{Type: "START", ActorRole: "runner", Capability: "effect.plan_empty", EventID: "x"}, ReasonAuthority},
		{"another event's pair", plan, Event{Type: "APPROVAL_GRANTED", ActorRole: "policy_evaluator", Capability: "approval.request", EventID: "x"}, ReasonAuthority},
		{"model approves", withCtx(plan, map[string]bool{"approval_matches": true}), Event{Type: "APPROVAL_GRANTED", ActorRole: "model", Capability: "approval.grant_exact_hash", EventID: "x"}, ReasonAuthority},
		{"final state", done, ev("START", "y"), ReasonTerminal},
		{"interrupt in final state", done, ev("TIMEOUT", "y"), ReasonTerminal},
		{"no transition", m.Initial(), ev("VERIFIED_FAILURE", "x"), ReasonNoTransition},
		{"guard false", withCtx(verify, map[string]bool{"independent_receipt_closed": true, "no_unknown_effects": false}), ev("VERIFIED_COMPLETE", "x"), ReasonGuardFalse},
		{"guard absent is false", verify, ev("VERIFIED_COMPLETE", "x"), ReasonGuardFalse},
		{"honor without pending", atHonor, ev("PENDING_CANCEL", "x"), ReasonNotPending},
		{"honor another interrupt", honorWithCancel, ev("PENDING_TIMEOUT", "x"), ReasonNotPending},
		{"resume with pending", honorWithCancel, ev("NO_PENDING_INTERRUPT", "x"), ReasonPending},
		{"foreign table", func() Configuration { c := atExecute; c.Table = "sha256:" + strings.Repeat("0", 64); return c }(), ev("ATTEMPT_RECORDED", "x"), ReasonConfiguration},
		{"unknown state", Configuration{State: "LIMBO"}, ev("START", "x"), ReasonConfiguration},
		{"unknown context field", withCtx(m.Initial(), map[string]bool{"vibes": true}), ev("START", "x"), ReasonConfiguration},
		{"pending outside deferral states", Configuration{State: "PLAN_EFFECTS", Pending: []string{"CANCEL"}, Seq: 3}, ev("NO_EFFECTS", "x"), ReasonConfiguration},
		{"pending unsorted", Configuration{State: "EXECUTE", Pending: []string{"TIMEOUT", "CANCEL"}, Seq: 5}, ev("ATTEMPT_RECORDED", "x"), ReasonConfiguration},
		{"pending unknown", Configuration{State: "EXECUTE", Pending: []string{"PANIC"}, Seq: 5}, ev("ATTEMPT_RECORDED", "x"), ReasonConfiguration},
		{"negative seq", Configuration{State: "EXECUTE", Seq: -1}, ev("ATTEMPT_RECORDED", "x"), ReasonConfiguration},
		{"bad head", Configuration{State: "EXECUTE", Seq: 5, Head: "abc"}, ev("ATTEMPT_RECORDED", "x"), ReasonConfiguration},
		{"empty state after start", Configuration{Seq: 2}, ev("START", "x"), ReasonConfiguration},
	}
	pointers := map[string]string{
		"undeclared event type": "/type", "bad role pattern": "/actor_role", "bad capability pattern": "/capability",
		"bad event id": "/event_id", "empty event id": "/event_id", "model actor": "/actor_role",
		"right role wrong capability": "/actor_role", "another event's pair": "/actor_role", "model approves": "/actor_role",
		"final state": "/type", "interrupt in final state": "/type", "no transition": "/type",
		"guard false": "/context/no_unknown_effects", "guard absent is false": "/context/independent_receipt_closed",
		"honor without pending": "/type", "honor another interrupt": "/type", "resume with pending": "/type",
		"foreign table": "/table", "unknown state": "/state", "unknown context field": "/context/vibes",
		"pending outside deferral states": "/pending_interrupts", "pending unsorted": "/pending_interrupts/1",
		"pending unknown": "/pending_interrupts/0", "negative seq": "/seq", "bad head": "/head", "empty state after start": "/state",
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := determinism.Copy(tc.c)
			r := m.Step(tc.c, tc.e)
			if r.Accepted() {
				t.Fatalf("accepted: %s -> %s", tc.c.State, r.Next.State)
			}
			if want, ok := pointers[tc.name]; !ok || r.Rejection.Pointer != want || r.Record.Pointer != want {
				t.Errorf("pointer %q, want %q", r.Rejection.Pointer, want)
			}
			if r.Rejection.Reason != tc.reason {
				t.Errorf("reason %s (%s), want %s", r.Rejection.Reason, r.Rejection.Detail, tc.reason)
			}
			if !reflect.DeepEqual(tc.c, before) {
				t.Error("Step modified its input configuration")
			}
			want := tc.c
			if want.State == "" && want.Seq == 0 {
				want.State = m.InitialState()
			}
			if want.Pending == nil {
				want.Pending = []string{}
			}
			if !reflect.DeepEqual(r.Next, want) {
				t.Errorf("rejection changed the configuration:\n got %+v\nwant %+v", r.Next, want)
			}
			if len(r.Effects) != 1 || r.Effects[0].Name != audit || r.Effects[0].Kind != KindAudit {
				t.Fatalf("effects %+v, want one audit", r.Effects)
			}
			p := r.Effects[0].Payload
			if p["reason"] != string(tc.reason) || p["event"] != tc.e.Type || p["actor_role"] != tc.e.ActorRole || p["event_id"] != tc.e.EventID || p["state"] != r.Next.State {
				t.Errorf("audit payload %v", p)
			}
			if r.Record.Accepted || r.Record.Reason != tc.reason || r.Record.From != r.Record.To {
				t.Errorf("record %+v", r.Record)
			}
		})
	}
}

func TestInterruptsImmediateAndDeferred(t *testing.T) {
	m := Default()
	for _, in := range m.Interrupts() {
		// Immediate in every non-final state outside the deferral region.
		for _, s := range m.States() {
			if s.Final() {
				continue
			}
			c := Configuration{Table: m.Digest(), State: s.ID, Pending: []string{}, Seq: 7}
			r := m.Step(c, ev(in.Event, "i"))
			if !r.Accepted() {
				t.Fatalf("%s in %s rejected: %v", in.Event, s.ID, r.Rejection)
			}
			if r.Next.Seq != 8 {
				t.Errorf("seq %d after an accepted interrupt, want 8", r.Next.Seq)
			}
			if slices.Contains(refDeferred, s.ID) {
				if r.Next.State != s.ID || !slices.Equal(r.Next.Pending, []string{in.Event}) || r.Effects[0].Name != pending || r.Effects[0].Payload["interrupt"] != in.Event {
					t.Errorf("%s in %s: %+v %+v", in.Event, s.ID, r.Next, r.Effects)
				}
				// Deferring twice is idempotent.
				r2 := m.Step(r.Next, ev(in.Event, "j"))
				if !slices.Equal(r2.Next.Pending, []string{in.Event}) {
					t.Errorf("pending after repeat %v", r2.Next.Pending)
				}
			} else if r.Next.State != in.To || r.Effects[0].Name != persist {
				t.Errorf("%s in %s: -> %s %v, want %s", in.Event, s.ID, r.Next.State, r.EffectNames(), in.To)
			}
		}
	}
	// Two different pending interrupts: either may be honored.
	c := Configuration{Table: m.Digest(), State: "HONOR_PENDING_INTERRUPT", Pending: []string{}, Seq: 1}
	c = m.Step(c, ev("TIMEOUT", "t")).Next
	c = m.Step(c, ev("CANCEL", "c")).Next
	if !slices.Equal(c.Pending, []string{"CANCEL", "TIMEOUT"}) {
		t.Fatalf("pending %v", c.Pending)
	}
	if r := m.Step(c, ev("PENDING_TIMEOUT", "p")); r.Next.State != "TIMED_OUT" || !slices.Equal(r.Next.Pending, []string{"CANCEL"}) {
		t.Errorf("honor timeout: %+v", r.Next)
	}
}

func TestContextIsConsumed(t *testing.T) {
	m := Default()
	c := m.Initial()
	c.Context = map[string]bool{"frontier_passed": true}
	r := m.Step(c, ev("START", "s"))
	if len(r.Next.Context) != 0 {
		t.Errorf("context survived an accepted event: %v", r.Next.Context)
	}
	c = m.Step(r.Next, ev("EVENT_ACCEPTED", "e")).Next
	if r := m.Step(c, ev("EPOCH_STABLE", "p")); r.Accepted() {
		t.Error("a guard passed on a fact asserted for an earlier event")
	}
}

func TestStrictEvidence(t *testing.T) {
	m := Default().WithStrictEvidence()
	if m.Digest() != Default().Digest() {
		t.Error("strict mode changed the table digest")
	}
	start := ev("START", "s")
	r := m.Step(m.Initial(), start)
	if r.Accepted() || r.Rejection.Reason != ReasonEvidence || r.Rejection.Pointer != "/payload/evidence/version_envelope_digest" {
		t.Fatalf("START without evidence: %+v", r.Rejection)
	}
	d := "sha256:" + strings.Repeat("ab", 32)
	start.Payload = map[string]any{"evidence": map[string]any{"workflow_digest": d, "version_envelope_digest": "not-a-digest"}}
	if r := m.Step(m.Initial(), start); r.Accepted() {
		t.Fatal("START with a malformed evidence digest accepted")
	}
	start.Payload = map[string]any{"evidence": map[string]any{"workflow_digest": d, "version_envelope_digest": d}}
	r = m.Step(m.Initial(), start)
	if !r.Accepted() {
		t.Fatalf("START with evidence: %v", r.Rejection)
	}
	if !reflect.DeepEqual(r.Record.Evidence, map[string]string{"workflow_digest": d, "version_envelope_digest": d}) {
		t.Errorf("recorded evidence %v", r.Record.Evidence)
	}
	// The lenient machine accepts the same event without evidence.
	if r := Default().Step(Default().Initial(), ev("START", "s")); !r.Accepted() {
		t.Error("lenient machine demanded evidence")
	}
}

func TestRecordIsCanonical(t *testing.T) {
	m := Default()
	c := m.Initial()
	c.Context = map[string]bool{}
	r := m.Step(c, ev("START", "s"))
	d1, err := cjson.DigestOf(r.Record)
	if err != nil {
		t.Fatalf("record has no canonical form: %v", err)
	}
	if r.Record.Format != RecordFormat || r.Record.Table != m.Digest() || r.Record.Transition != "start" || r.Record.Seq != 1 {
		t.Errorf("record %+v", r.Record)
	}
	d2, _ := cjson.DigestOf(m.Step(c, ev("START", "s2")).Record)
	if d1 == d2 {
		t.Error("records of different events share a digest")
	}
}

func TestStepIsDeterministic(t *testing.T) {
	m := Default()
	atHonor := run(t, m, ev("START", "a"), ev("EVENT_ACCEPTED", "b"), ev("EPOCH_STABLE", "c"), ev("EFFECT_AUTHORIZED", "d"),
		ev("INTENT_COMMITTED", "e"), ev("CANCEL", "f"), ev("ATTEMPT_RECORDED", "g"), ev("EFFECT_RESULT_CONFIRMED", "h"))
	inputs := []struct {
		c Configuration
		e Event
	}{
		{m.Initial(), ev("START", "s")},
		{atHonor, ev("PENDING_CANCEL", "p")},
		{atHonor, ev("NO_PENDING_INTERRUPT", "n")},
		{Configuration{State: "VERIFY_COMPLETION", Seq: 4, Context: map[string]bool{"independent_receipt_closed": true, "no_unknown_effects": true}}, ev("VERIFIED_COMPLETE", "v")},
		{m.Initial(), Event{Type: "START", ActorRole: "model", Capability: "control.start", EventID: "m", Payload: map[string]any{"note": "hi"}}},
	}
	for _, in := range inputs {
		determinism.Check2(t, in.c, in.e, m.Step)
	}
}

func TestReplayReproducesRecords(t *testing.T) {
	m := Default()
	var inputs []Input
	for _, s := range transcribed["hrc"] {
		ctx, _ := m.ContextFromGuards(s.guards, "")
		inputs = append(inputs, Input{Context: ctx, Event: s.event})
	}
	inputs = append(inputs, Input{Event: ev("START", "late")}) // refused: the run is final
	final, results := m.Replay(inputs)
	if final.State != "CANCELED" || len(results) != len(inputs) || results[len(results)-1].Accepted() {
		t.Fatalf("replay ended in %s with %d results", final.State, len(results))
	}
	_, again := m.Replay(determinism.Copy(inputs))
	for i := range results {
		a, _ := cjson.DigestOf(results[i].Record)
		b, _ := cjson.DigestOf(again[i].Record)
		if a == "" || a != b {
			t.Fatalf("step %d: record digests %q and %q", i, a, b)
		}
	}
}

func TestRecordsFormAHashChain(t *testing.T) {
	m := Default()
	var inputs []Input
	for _, s := range transcribed["hrc"] {
		ctx, _ := m.ContextFromGuards(s.guards, "")
		inputs = append(inputs, Input{Context: ctx, Event: s.event})
	}
	// A refused event in the middle does not advance the chain.
	inputs = append(inputs[:3:3], append([]Input{{Event: Event{Type: "NO_EFFECTS", ActorRole: "model", Capability: "effect.plan_empty", EventID: "bad"}}}, inputs[3:]...)...)
	final, results := m.Replay(inputs)
	head := ""
	for i, r := range results {
		if r.Record.Prev != head {
			t.Fatalf("step %d: prev %q, want %q", i, r.Record.Prev, head)
		}
		if !r.Accepted() {
			if r.Next.Head != head {
				t.Fatalf("step %d: a refused event moved the head", i)
			}
			continue
		}
		d, err := cjson.DigestOf(r.Record)
		if err != nil || r.Next.Head != d {
			t.Fatalf("step %d: head %q, record digest %q (%v)", i, r.Next.Head, d, err)
		}
		head = d
	}
	if final.Head != head || head == "" {
		t.Fatalf("final head %q", final.Head)
	}
	// Changing any earlier accepted event changes the final head.
	for i := range inputs {
		if !results[i].Accepted() {
			continue
		}
		changed := determinism.Copy(inputs)
		changed[i].Event.EventID += "x"
		if f, _ := m.Replay(changed); f.Head == final.Head {
			t.Errorf("changing event %d left the head unchanged", i)
		}
	}
}

func TestAwaiting(t *testing.T) {
	m := Default()
	events := func(as []Awaited) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.Event+"->"+a.To)
		}
		return out
	}
	if got := events(m.Awaiting(Configuration{})); !slices.Equal(got, []string{"START->INGEST", "CANCEL->CANCELED", "TIMEOUT->TIMED_OUT", "BUDGET_EXHAUSTED->BUDGET_EXHAUSTED"}) {
		t.Errorf("initial awaits %v", got)
	}
	honor := Configuration{State: "HONOR_PENDING_INTERRUPT", Pending: []string{"CANCEL"}, Seq: 9}
	want := []string{"PENDING_CANCEL->CANCELED", "CANCEL->HONOR_PENDING_INTERRUPT", "TIMEOUT->HONOR_PENDING_INTERRUPT", "BUDGET_EXHAUSTED->HONOR_PENDING_INTERRUPT"}
	if got := events(m.Awaiting(honor)); !slices.Equal(got, want) {
		t.Errorf("honor with a pending cancel awaits %v, want %v", got, want)
	}
	verify := m.Awaiting(Configuration{State: "VERIFY_COMPLETION", Seq: 4})
	if verify[0].Guard != "completion_closed" || verify[0].Authority[0].Role != "independent_completion_verifier" {
		t.Errorf("verify awaits %+v", verify[0])
	}
	if got := m.Awaiting(Configuration{State: "SUCCEEDED", Seq: 5}); len(got) != 0 {
		t.Errorf("a final state awaits %v", got)
	}
	if got := m.Awaiting(Configuration{State: "LIMBO"}); len(got) != 0 {
		t.Errorf("an invalid configuration awaits %v", got)
	}
}

// A configuration with several undeclared context fields names the first in
// byte order, whatever the map's order, and one with only declared fields
// passes.
func TestCheckConfigurationNamesTheFirstUndeclaredField(t *testing.T) {
	m := Default()
	c := m.Initial()
	c.Context = map[string]bool{}
	for _, f := range m.context {
		c.Context[f] = true
	}
	if ptr, detail := m.checkConfiguration(c); detail != "" {
		t.Fatalf("declared fields refused at %s: %s", ptr, detail)
	}
	for _, f := range []string{"zz_last", "mm_mid", "aa_first", "ab_second"} {
		c.Context[f] = false
	}
	for range 20 {
		if ptr, detail := m.checkConfiguration(c); ptr != "/context/aa_first" || !strings.Contains(detail, `"aa_first"`) {
			t.Fatalf("named %s: %s", ptr, detail)
		}
	}
}
