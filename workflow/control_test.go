package workflow

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/mrp"
)

func controlInput(seq int64, body map[string]any, actor, role, capability string) Input {
	b, _ := cjson.Marshal(body)
	return Input{Seq: seq, Kind: KindControl, Body: b, Digest: cjson.Digest(b), Actor: actor, ActorRole: role, Capability: capability}
}

func trig(t mrp.Trigger) map[string]any { return map[string]any{"trigger": string(t)} }

// A person's control input steps the deliberation machine under the
// person's name and role; a bad one is refused with its code and changes
// nothing.
func TestControlInputs(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	v, _ := w.Inspect(st)
	if v.MRPState != "OPTIONS" || len(v.Offers) != 1 {
		t.Fatalf("view %+v", v)
	}
	proposal := v.Offers[0].ProposalID
	refusals := []struct {
		name string
		in   Input
		code string
	}{
		{"an agent", controlInput(2, trig(mrp.Pause), "bot", "agent", "mrp.pause"), ControlNotAPerson},
		{"a model", controlInput(2, trig(mrp.Pause), "llm", "model", "mrp.pause"), ControlNotAPerson},
		{"the controller", controlInput(2, trig(mrp.Pause), ControllerActorID, ControllerRole, "mrp.pause"), ControlNotAPerson},
		{"another capability", controlInput(2, trig(mrp.Pause), "dana", "operator", "mrp.exit"), ControlCapability},
		{"no capability", controlInput(2, trig(mrp.Pause), "dana", "operator", ""), ControlCapability},
		{"a runtime trigger", controlInput(2, trig(mrp.Tier1Allow), "dana", "operator", "mrp.pause"), ControlTrigger},
		{"choose through control", controlInput(2, trig(mrp.ChooseOption), "dana", "operator", "mrp.choose_option"), ControlTrigger},
		{"resume from OPTIONS", controlInput(2, trig(mrp.Resume), "dana", "operator", "mrp.resume"), ControlMRPRefused},
		{"leave safe mode outside it", controlInput(2, trig(mrp.LeaveSafeMode), "dana", "operator", "mrp.leave_safe_mode"), ControlMRPRefused},
		{"reject an unknown offer", controlInput(2, map[string]any{"trigger": "REJECT_ALL", "proposal_id": "proposal:nope"}, "dana", "operator", "mrp.reject_all"), ControlNotPending},
		{"resume naming an unknown proposal", controlInput(2, map[string]any{"trigger": "RESUME", "proposal_id": "proposal:nope"}, "dana", "operator", "mrp.resume"), ControlNotPending},
		{"an unknown member", controlInput(2, map[string]any{"trigger": "PAUSE", "actor": "x"}, "dana", "operator", "mrp.pause"), ControlMalformed},
		{"a number trigger", controlInput(2, map[string]any{"trigger": int64(1)}, "dana", "operator", "mrp.pause"), ControlMalformed},
		{"a bad proposal id", controlInput(2, map[string]any{"trigger": "REJECT_ALL", "proposal_id": "a b"}, "dana", "operator", "mrp.reject_all"), ControlMalformed},
		{"a long reason", controlInput(2, map[string]any{"trigger": "PAUSE", "reason": strings.Repeat("x", MaxControlReason+1)}, "dana", "operator", "mrp.pause"), ControlMalformed},
		{"not an object", Input{Seq: 2, Kind: KindControl, Body: []byte(`"PAUSE"`), ActorRole: "operator", Capability: "mrp.pause"}, ControlMalformed},
	}
	for _, c := range refusals {
		got, err := w.Decide(st, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.HasPrefix(got.Refusal, c.code+":") || string(got.State) != string(st) || len(got.Effects) != 0 {
			t.Errorf("%s: refusal %q, state changed %v", c.name, got.Refusal, string(got.State) != string(st))
		}
	}

	pause := controlInput(2, map[string]any{"trigger": "PAUSE", "reason": "waiting for the customer"}, "dana", "operator", "mrp.pause")
	got, err := w.Decide(st, pause)
	if err != nil || got.Refusal != "" || len(got.Effects) != 0 {
		t.Fatalf("pause: %v %q", err, got.Refusal)
	}
	v, _ = w.Inspect(got.State)
	e := v.Journey[len(v.Journey)-1]
	if v.MRPState != "HOLD" || e.Trigger != mrp.Pause || e.Row != "H01" || e.ActorID != "dana" || e.Role != "operator" ||
		!strings.Contains(e.Cause, "waiting for the customer") || len(v.Offers) != 1 {
		t.Fatalf("after pause: %s %+v offers %d", v.MRPState, e, len(v.Offers))
	}
	notes := notes(got, "mrp.control")
	if len(notes) != 1 || notes[0]["from"] != "OPTIONS" || notes[0]["to"] != "HOLD" || notes[0]["actor"] != "dana" {
		t.Fatalf("control note %v", notes)
	}
	// Paused, the offer is still on record but a choice is refused.
	ch, _ := w.Decide(got.State, choiceInput(3, proposal, "path:store-credit", "dana", "operator", "mrp.choose_option"))
	if !strings.HasPrefix(ch.Refusal, ChoiceMRPRefused) {
		t.Fatalf("a choice while paused: %q", ch.Refusal)
	}
	determinism.Check(t, decideCase{st, pause}, func(c decideCase) string {
		r, err := w.Decide(c.State, c.In)
		if err != nil {
			return err.Error()
		}
		b, _ := json.Marshal(r)
		return string(b)
	})

	// REJECT_ALL withdraws the named offer and returns to HOLD.
	rej, err := w.Decide(st, controlInput(2, map[string]any{"trigger": "REJECT_ALL", "proposal_id": proposal}, "lee", "human_approver", "mrp.reject_all"))
	if err != nil || rej.Refusal != "" {
		t.Fatalf("reject_all: %v %q", err, rej.Refusal)
	}
	v, _ = w.Inspect(rej.State)
	if v.MRPState != "HOLD" || len(v.Offers) != 0 || v.Journey[len(v.Journey)-1].Row != "H04" {
		t.Fatalf("after reject_all: %s offers %v", v.MRPState, v.Offers)
	}
	ch, _ = w.Decide(rej.State, choiceInput(3, proposal, "path:store-credit", "dana", "operator", "mrp.choose_option"))
	if !strings.HasPrefix(ch.Refusal, ChoiceNotPending) {
		t.Fatalf("a choice after reject_all: %q", ch.Refusal)
	}
}

// Whatever a non-person sends — any trigger, any capability, any role
// outside mrp.HumanRoles — the control input is refused and the state does
// not change. And a person's accepted control never plans an effect.
func TestControlNeverFromANonPerson(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	triggers := append(slices.Clone(ControlTriggers), mrp.ChooseOption, mrp.Tier1Allow, mrp.EnterSafeMode)
	rapid.Check(t, func(rt *rapid.T) {
		tr := rapid.SampledFrom(triggers).Draw(rt, "trigger")
		capName, _ := mrp.RequiredCapability(tr)
		capability := rapid.SampledFrom([]string{capName, "mrp.pause", "input.propose", ""}).Draw(rt, "capability")
		role := rapid.SampledFrom([]string{"agent", "model", "aif_controller", "runner", "viewer", "authorized_requester", "", "human_approver", "operator", "reviewer"}).Draw(rt, "role")
		in := controlInput(2, map[string]any{"trigger": string(tr)}, "someone", role, capability)
		got, err := w.Decide(st, in)
		if err != nil {
			rt.Fatal(err)
		}
		if len(got.Effects) != 0 {
			rt.Fatalf("a control input planned %d effects", len(got.Effects))
		}
		person := slices.Contains(mrp.HumanRoles, role)
		if !person && (got.Refusal == "" || string(got.State) != string(st)) {
			rt.Fatalf("role %q issued %s: refusal %q", role, tr, got.Refusal)
		}
		if got.Refusal == "" {
			if !person || capability != capName || !slices.Contains(ControlTriggers, tr) {
				rt.Fatalf("accepted %s from %q exercising %q", tr, role, capability)
			}
			v, _ := w.Inspect(got.State)
			if e := v.Journey[len(v.Journey)-1]; e.Trigger != tr || e.Role != role || e.ActorID != "someone" {
				rt.Fatalf("journey entry %+v", e)
			}
		}
	})
}

func FuzzParseControl(f *testing.F) {
	for _, s := range []string{`{"trigger":"PAUSE"}`, `{"trigger":"REJECT_ALL","proposal_id":"p:1","reason":"no"}`, `{}`, `[]`, `{"trigger":"EXIT","x":1}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseControl(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "CONTROL_") {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		if !slices.Contains(ControlTriggers, c.Trigger) || (c.ProposalID != "" && !cjson.ValidID(c.ProposalID)) || len(c.Reason) > MaxControlReason {
			t.Fatalf("accepted %q as %+v", body, c)
		}
	})
}
