package runner

import (
	"bytes"
	"slices"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// intentText draws an intent member: mostly ids and digests, at times a
// string cjson escapes or normalizes, or one that sorts around the
// closing quote of another (" " and "!" are below it, "#" above).
func intentText() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.StringMatching(`[a-z0-9:._-]{0,12}`),
		rapid.StringMatching(`sha256:[a-f0-9]{8}`),
		rapid.StringMatching(`[a !#"\\]{0,3}`),
		rapid.SampledFrom([]string{"", "a", "a!", "a ", "a#", "ab", "e\u0301", "é", "\x00", "\u2028", "<&>", "\xff"}),
		rapid.String(),
	)
}

// preconditionIDs sort differently as strings and as their encodings
// ("a!" and "a " before "a", "a#" after it), and one is not plain.
var preconditionIDs = []string{"a", "a!", "a ", "a#", "ab", "b", "p-1", "p-2", "p-10", "é"}

// TestIntentEncodingMatchesMarshal holds the intent's direct encoding to
// cjson.Marshal's: the same bytes and depth where appendIntent writes
// them, and intentJSON gives what encodedJSON gives (bytes, or a refusal)
// for every intent, including those appendIntent leaves to cjson (another
// kind, strings that are not plain, repeated preconditions).
func TestIntentEncodingMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Mostly every string plain, as the intents workflows plan: only
		// then is the direct path taken.
		s := rapid.StringMatching(`[a-z0-9:._ !#-]{0,12}`)
		if rapid.IntRange(0, 3).Draw(t, "mixed") == 0 {
			s = intentText()
		}
		pi := protocol.EffectIntent{
			Kind:     rapid.SampledFrom([]string{protocol.KindEffectIntent, protocol.KindEffectIntent, protocol.KindEffectIntent, "ActionReceipt", "x"}).Draw(t, "kind"),
			IntentID: s.Draw(t, "intent_id"), ProposalID: s.Draw(t, "proposal_id"), BatchID: s.Draw(t, "batch_id"),
			EffectType: s.Draw(t, "effect_type"), ActionDigest: s.Draw(t, "action_digest"), Capability: s.Draw(t, "capability"),
			AuthorityDigest: s.Draw(t, "authority_digest"), CauseID: s.Draw(t, "cause_id"), CorrelationID: s.Draw(t, "correlation_id"),
			IdempotencyKey: s.Draw(t, "idempotency_key"), DestinationDigest: s.Draw(t, "destination_digest"), GoalID: s.Draw(t, "goal_id"),
			ObligationID: s.Draw(t, "obligation_id"), AdapterVersion: s.Draw(t, "adapter_version"), AssessedRisk: s.Draw(t, "assessed_risk"),
			ApprovalRequired: rapid.Bool().Draw(t, "approval_required"),
			Versions: protocol.VersionEnvelope{Workflow: s.Draw(t, "workflow"), StateSchema: s.Draw(t, "state_schema"),
				EventSchema: s.Draw(t, "event_schema"), GraphSchema: s.Draw(t, "graph_schema"), RuleSet: s.Draw(t, "rule_set"),
				Dataflow: s.Draw(t, "dataflow"), Canonicalization: s.Draw(t, "canonicalization"), Tool: s.Draw(t, "tool"),
				Model: s.Draw(t, "model"), Oracle: s.Draw(t, "oracle"), Gate: s.Draw(t, "gate"), Resolver: s.Draw(t, "resolver"),
				CompositionProfile: s.Draw(t, "composition_profile")},
		}
		if rapid.Bool().Draw(t, "approval") {
			d := s.Draw(t, "approval_digest")
			pi.ApprovalDigest = &d
		}
		switch rapid.IntRange(0, 3).Draw(t, "preconditions") {
		case 0: // nil, written as an empty set
		case 1:
			pi.Preconditions = protocol.IDSet{}
		case 2: // distinct, as a set
			pi.Preconditions = rapid.SliceOfNDistinct(rapid.SampledFrom(preconditionIDs), 0, 10, rapid.ID[string]).Draw(t, "ids")
		default: // perhaps repeated, which cjson refuses
			pi.Preconditions = rapid.SliceOfN(rapid.SampledFrom(preconditionIDs), 0, 11).Draw(t, "ids")
		}
		before := slices.Clone(pi.Preconditions)
		want, wantErr := encodedJSON(pi)
		got, gotErr := intentJSON(&pi)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Fatalf("errors: intentJSON %v, encodedJSON %v", gotErr, wantErr)
		}
		if !bytes.Equal(got.b, want.b) || got.depth != want.depth {
			t.Fatalf("intentJSON\n%s (depth %d)\nencodedJSON\n%s (depth %d)", got.b, got.depth, want.b, want.depth)
		}
		if !slices.Equal(pi.Preconditions, before) || (pi.Preconditions == nil) != (before == nil) {
			t.Fatalf("preconditions changed: %q, were %q", pi.Preconditions, before)
		}
		if b, ok := appendIntent(nil, &pi); ok {
			if !bytes.Equal(b, want.b) {
				t.Fatalf("appendIntent\n%s\ncjson.Marshal\n%s", b, want.b)
			}
			if !cjson.IsCanonical(b) {
				t.Fatalf("not canonical: %s", b)
			}
		}
	})
}

// TestIntentEncodingIsDirect checks the direct path is the one an
// ordinary intent takes (the property test above would pass were it
// never taken).
func TestIntentEncodingIsDirect(t *testing.T) {
	pi := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "i-1", IdempotencyKey: "k-1",
		Preconditions: protocol.IDSet{"p-2", "p-1"}, Versions: protocol.VersionEnvelope{Workflow: "sha256:00"}}
	b, ok := appendIntent(nil, &pi)
	if !ok {
		t.Fatal("an ordinary intent was left to cjson")
	}
	want, err := cjson.Marshal(pi)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("got %s, want %s (%v)", b, want, err)
	}
	if got := testing.AllocsPerRun(50, func() { _, _ = intentJSON(&pi) }); got != 1 {
		t.Errorf("intentJSON allocates %v times, want 1", got)
	}
}
