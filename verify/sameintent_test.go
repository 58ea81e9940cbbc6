package verify

import (
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// drawIntent draws an intent as a workflow plans one: mostly every string
// plain, at times one cjson escapes or normalizes (which the runner's
// writer leaves to cjson.Marshal), preconditions perhaps repeated.
func drawIntent(t *rapid.T) protocol.EffectIntent {
	s := rapid.StringMatching(`[a-z0-9:._-]{0,10}`)
	if rapid.IntRange(0, 4).Draw(t, "mixed") == 0 {
		s = rapid.OneOf(s, rapid.SampledFrom([]string{"é", "e\u0301", `q"`, "\x00", "a b"}))
	}
	pi := protocol.EffectIntent{
		Kind:     rapid.SampledFrom([]string{protocol.KindEffectIntent, protocol.KindEffectIntent, "ActionReceipt"}).Draw(t, "kind"),
		IntentID: s.Draw(t, "intent_id"), ProposalID: s.Draw(t, "proposal_id"), EffectType: s.Draw(t, "effect_type"),
		ActionDigest: s.Draw(t, "action_digest"), Capability: s.Draw(t, "capability"), CauseID: s.Draw(t, "cause_id"),
		IdempotencyKey: s.Draw(t, "idempotency_key"), AssessedRisk: s.Draw(t, "assessed_risk"),
		ApprovalRequired: rapid.Bool().Draw(t, "approval_required"),
		Versions:         protocol.VersionEnvelope{Workflow: s.Draw(t, "workflow"), Tool: s.Draw(t, "tool")},
	}
	if rapid.Bool().Draw(t, "preconditions") {
		pi.Preconditions = rapid.SliceOfN(rapid.SampledFrom([]string{"p-1", "p-2", "p-10", "é"}), 0, 4).Draw(t, "ids")
	}
	return pi
}

// TestSameIntentAsWritesAsMarshal holds sameIntentAs, which writes the
// planned intent with the runner's intent writer, to the same comparison
// written by cjson.Marshal: for committed bytes that are the planned
// intent naming the same grant, another grant or none, another intent,
// or not an intent's encoding at all.
func TestSameIntentAsWritesAsMarshal(t *testing.T) {
	digests := []*string{nil, ptr("sha256:"), ptr("sha256:00ff"), ptr("é")}
	rapid.Check(t, func(t *rapid.T) {
		planned := drawIntent(t)
		d := rapid.SampledFrom(digests).Draw(t, "d")
		var committed []byte
		switch rapid.IntRange(0, 3).Draw(t, "committed") {
		case 0, 1: // the planned intent, naming a grant drawn apart from d
			c := planned
			c.ApprovalDigest = rapid.SampledFrom(digests).Draw(t, "named")
			committed, _ = cjson.Marshal(c)
		case 2:
			committed, _ = cjson.Marshal(drawIntent(t))
		default:
			committed = []byte(rapid.SampledFrom([]string{"", "{}", "null", `{"kind":"EffectIntent"}`}).Draw(t, "text"))
		}
		intentWriter = false
		want := sameIntentAs(planned, committed, d)
		intentWriter = true
		if got := sameIntentAs(planned, committed, d); got != want {
			t.Fatalf("sameIntentAs %v, written by cjson.Marshal %v\n%s", got, want, committed)
		}
	})
}

// TestSameIntentAsAllocatesNothing: a plain intent is written on the stack.
func TestSameIntentAsAllocatesNothing(t *testing.T) {
	d := "sha256:00ff"
	planned := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "intent:1", ApprovalDigest: &d,
		Preconditions: protocol.IDSet{"p-1", "p-2"}}
	committed, err := cjson.Marshal(planned)
	if err != nil {
		t.Fatal(err)
	}
	if !sameIntentAs(planned, committed, &d) {
		t.Fatal("the planned intent is not its own encoding")
	}
	if n := testing.AllocsPerRun(100, func() { sameIntentAs(planned, committed, &d) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func ptr(s string) *string { return &s }
