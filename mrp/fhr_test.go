package mrp

import (
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// The hand-written FHR preimage equals cjson.Marshal of the record.
func TestFHRSealMatchesCjson(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text := rapid.StringMatching(`[a-zé "\\\n~\x7f]{0,24}`)
		m := New(Budgets{TurnLimit: rapid.IntRange(0, 4).Draw(rt, "tl")})
		for i := rapid.IntRange(0, 4).Draw(rt, "steps"); i > 0; i-- {
			m, _ = Step(m, Event{Trigger: rapid.SampledFrom([]Trigger{Tier3, Tier2, Tier1Allow, Pause}).Draw(rt, "trig"), Actor: runtime, Cause: text.Draw(rt, "cause")})
		}
		f := FHR{Turn: rapid.Int64().Draw(rt, "turn"), Prev: text.Draw(rt, "prev"), Budgets: m.Budgets, Transitions: m.Journey, State: m.State, Scorecard: text.Draw(rt, "score")}
		if rapid.Bool().Draw(rt, "filled") {
			f.Signals = []SignalRecord{{Ticket: "t", Tier: 1, Kind: "GATE", Source: "G2", Decision: "ALLOW", Rule: text.Draw(rt, "rule")}}
			f.Resolutions = []ResolutionRecord{{Ticket: "t", HighestTier: 1, Decision: "ALLOW", Move: MoveTest, Options: []string{"a"}, Ties: 2, Outcome: "HELD"}, {Ticket: "u"}}
			f.Tickets = []TicketView{{TicketID: "t", MissingFields: []string{"scope"}, Complete: true}, {TicketID: "u"}}
		}
		sealed, err := f.Seal()
		if err != nil {
			rt.Fatal(err)
		}
		f.Kind, f.Digest = "FHR", ""
		want, err := cjson.Marshal(f)
		if err != nil {
			rt.Fatal(err)
		}
		if sealed.Digest != cjson.Digest(want) {
			rt.Fatalf("FHR digest differs from cjson:\n%s", want)
		}
	})
}

func TestFHRSealRejectsNonNFC(t *testing.T) {
	if _, err := (FHR{Scorecard: "e\u0301"}).Seal(); err == nil {
		t.Fatal("non-NFC text sealed")
	}
}

func TestFHRChain(t *testing.T) {
	a, _ := FHR{Turn: 1}.Seal()
	b, _ := FHR{Turn: 2, Prev: a.Digest}.Seal()
	a2, _ := FHR{Turn: 1, Scorecard: "sha256:x"}.Seal()
	b2, _ := FHR{Turn: 2, Prev: a2.Digest}.Seal()
	if b.Digest == b2.Digest {
		t.Fatal("editing an earlier turn did not change the later digest")
	}
}
