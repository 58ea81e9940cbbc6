package workflow

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
	"pgregory.net/rapid"
)

// noteText draws strings cjson escapes, non-ASCII text, and strings it
// refuses (not NFC, not UTF-8), so the writers' fallback is reached too.
var noteText = rapid.OneOf(
	rapid.StringMatching(`[a-zA-Z_:0-9é "\\\n\t~\x00\x1f\x7f\x{2028}\x{1F600}]{0,16}`),
	rapid.SampledFrom([]string{"", "e\u0301", "\xff", "\xed\xa0\x80", "caf\u00e9", string(mrp.Decide), string(mrp.Options)}),
)

var noteStates = rapid.OneOf(noteText.AsAny(), rapid.SampledFrom([]mrp.State{mrp.Hold, mrp.Options, mrp.Test, mrp.Decide}).AsAny())

func drawState(rt *rapid.T, l string) mrp.State {
	switch s := noteStates.Draw(rt, l).(type) {
	case string:
		return mrp.State(s)
	default:
		return s.(mrp.State)
	}
}

func drawJourney(rt *rapid.T) []mrp.Entry {
	if rapid.Bool().Draw(rt, "nil_journey") {
		return nil
	}
	var j []mrp.Entry
	for i := rapid.IntRange(0, 5).Draw(rt, "entries"); i > 0; i-- {
		rejected := ""
		if rapid.IntRange(0, 3).Draw(rt, "rejected") == 0 {
			rejected = noteText.Draw(rt, "rej")
		}
		j = append(j, mrp.Entry{Seq: rapid.Int().Draw(rt, "seq"), From: drawState(rt, "from"), To: drawState(rt, "to"),
			Trigger: mrp.Trigger(noteText.Draw(rt, "trig")), ActorID: noteText.Draw(rt, "actor"), Role: noteText.Draw(rt, "role"),
			Cause: noteText.Draw(rt, "cause"), Row: noteText.Draw(rt, "row"), Rejected: rejected, Summary: noteText.Draw(rt, "sum"),
			Refusal: rapid.Bool().Draw(rt, "refusal"), SafeMode: rapid.Bool().Draw(rt, "esafe")})
	}
	return j
}

// checkNote holds a note writer to cjson.Marshal of the note's map form:
// the same bytes, or a refusal exactly where cjson refuses.
func checkNote(rt *rapid.T, got []byte, ok bool, body map[string]any) {
	want, err := cjson.Marshal(body)
	if ok != (err == nil) {
		rt.Fatalf("writer ok=%v, cjson.Marshal error %v", ok, err)
	}
	if ok && !bytes.Equal(got, want) {
		rt.Fatalf("writer\n%s\ncjson.Marshal\n%s", got, want)
	}
}

func drawNoteFHR(rt *rapid.T) mrp.FHR {
	f := mrp.FHR{Kind: noteText.Draw(rt, "kind"), Turn: rapid.Int64().Draw(rt, "turn"), Scorecard: noteText.Draw(rt, "score"),
		State: drawState(rt, "state"), SafeMode: rapid.Bool().Draw(rt, "safe"), Prev: noteText.Draw(rt, "prev"),
		Digest: noteText.Draw(rt, "digest"), Transitions: drawJourney(rt),
		Budgets: mrp.Budgets{TurnLimit: rapid.Int().Draw(rt, "tl"), SessionUsed: rapid.Int().Draw(rt, "su")}}
	if rapid.Bool().Draw(rt, "filled") {
		f.Signals = []mrp.SignalRecord{{Ticket: noteText.Draw(rt, "st"), Tier: 2, Kind: "GATE", Source: noteText.Draw(rt, "ss"), Decision: "ALLOW", Rule: noteText.Draw(rt, "rule")}}
		f.Resolutions = []mrp.ResolutionRecord{{Ticket: "t", HighestTier: 1, Decision: noteText.Draw(rt, "rd"), Move: mrp.MoveOptions,
			Options: rapid.SliceOfN(noteText, 0, 3).Draw(rt, "options"), Ties: 2, Outcome: "HELD"}}
		f.Tickets = []mrp.TicketView{{TicketID: noteText.Draw(rt, "tid"), MissingFields: rapid.SliceOfN(noteText, 0, 2).Draw(rt, "mf"), Complete: true}}
	}
	return f
}

func TestFHRNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := drawNoteFHR(rt)
		event, chain := noteText.Draw(rt, "event"), noteText.Draw(rt, "chain")
		got, ok := fhrNote(f, event, chain)
		checkNote(rt, got, ok, fhrNoteMap(f, event, chain))
	})
}

// The h.fhr note written around the FHR's sealed bytes is the note
// fhrNote writes for the sealed FHR, whether the FHR fit the buffer or
// was moved out of it; it declines only where there are no bytes or the
// event is not a plain one that fits the room.
func TestFHRNoteFromIsFHRNote(t *testing.T) {
	events := rapid.OneOf(noteText, rapid.SampledFrom([]string{authority.EventNoEffects, authority.EventApprovalRequired, authority.EventEffectAuthorized, "an event too long for the room before the FHR"}))
	rapid.Check(t, func(rt *rapid.T) {
		f := drawNoteFHR(rt)
		event, chain := events.Draw(rt, "event"), noteText.Draw(rt, "chain")
		buf := fhrNoteBuf(rapid.IntRange(-1280, 200).Draw(rt, "room"))
		sealed, canon, sok, err := f.SealAppend(buf[fhrNoteHead:])
		if err != nil || !sok {
			canon = nil
		}
		got, ok := fhrNoteFrom(buf, canon, event, chain)
		want, wok := fhrNote(sealed, event, chain)
		if !ok {
			if wok && canon != nil && cjson.Plain(event) && len(event) <= 18 {
				rt.Fatalf("declined the note of a sealed FHR, event %q", event)
			}
			return
		}
		if !wok || !bytes.Equal(got, want) {
			rt.Fatalf("fhrNoteFrom\n%s\nfhrNote (ok %v)\n%s", got, wok, want)
		}
	})
}

func TestJourneyNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := mrp.Machine{State: drawState(rt, "state"), SafeMode: rapid.Bool().Draw(rt, "safe"), Journey: drawJourney(rt)}
		pending, open := rapid.IntRange(0, 1<<20).Draw(rt, "pending"), rapid.IntRange(0, 1<<20).Draw(rt, "open")
		got, ok := journeyNote(nil, m, pending, open)
		checkNote(rt, got, ok, journeyNoteMap(m, pending, open))
	})
}

// A note whose writer refuses is recorded as its map form would be: the
// "unencodable" body note writes, not a partial one.
func TestNoteBytesFallsBackToMap(t *testing.T) {
	tk := &tick{}
	f := mrp.FHR{Scorecard: "e\u0301"}
	body, ok := fhrNote(f, "E", "c")
	if ok {
		t.Fatal("fhrNote wrote a non-NFC scorecard")
	}
	tk.noteBytes("h.fhr", body, ok, func() map[string]any { return fhrNoteMap(f, "E", "c") })
	want, err := cjson.Marshal(fhrNoteMap(f, "E", "c"))
	if err == nil {
		t.Fatalf("cjson.Marshal accepted the non-NFC record: %s", want)
	}
	if len(tk.trace) != 1 || tk.trace[0].Kind != "h.fhr" || !bytes.Contains(tk.trace[0].Body, []byte(`"unencodable"`)) {
		t.Fatalf("trace %+v", tk.trace)
	}
}

func TestOutcomeNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := func(l string) string { return noteText.Draw(rt, l) }
		opt := func(l string) *string {
			if rapid.Bool().Draw(rt, l+"_has") {
				v := s(l)
				return &v
			}
			return nil
		}
		list := func(l string) []string {
			if rapid.Bool().Draw(rt, l+"_nil") {
				return nil
			}
			return rapid.SliceOfN(noteText, 0, 3).Draw(rt, l)
		}
		r := &outcomeRec{proposalID: s("proposal"), kind: s("kind"), ticketID: s("ticket"), mrpState: s("mrp"), preview: s("preview"),
			held: s("held"), ticketDigest: s("tdigest"), actionDigest: s("adigest"), assessedRisk: s("risk"),
			options: list("options"), audit: list("audit"), intentID: opt("intent"), requestID: opt("request"), requestDigest: opt("rdigest")}
		if rapid.Bool().Draw(rt, "rejected") {
			r.rejection = &[2]string{s("code"), s("path")}
		}
		if rapid.Bool().Draw(rt, "quorate") {
			r.quorum, r.quorumRule = rapid.IntRange(2, 100).Draw(rt, "quorum"), s("quorum_rule")
		}
		got, ok := r.bytes(nil)
		checkNote(rt, got, ok, r.asMap())
	})
}

func TestVerdictNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		list := func(l string) []string {
			if rapid.Bool().Draw(rt, l+"_nil") {
				return nil
			}
			return rapid.SliceOfN(noteText, 0, 3).Draw(rt, l)
		}
		r := &verdictRec{proposalID: noteText.Draw(rt, "proposal"), projectionDigest: noteText.Draw(rt, "digest"),
			frontier: list("frontier"), verdict: rapid.Bool().Draw(rt, "verdict"), status: noteText.Draw(rt, "status"), supports: list("supports")}
		got, ok := r.bytes(nil)
		checkNote(rt, got, ok, r.asMap())
	})
}

func TestTransitionNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		id, typ, digest := noteText.Draw(rt, "id"), noteText.Draw(rt, "type"), noteText.Draw(rt, "digest")
		facts, proposals := rapid.IntRange(0, 1<<30).Draw(rt, "facts"), rapid.IntRange(0, 1<<30).Draw(rt, "proposals")
		got, ok := transitionNote(nil, id, typ, digest, facts, proposals)
		checkNote(rt, got, ok, transitionNoteMap(id, typ, digest, facts, proposals))
	})
}

func TestReceiptNoteIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		intent, proposal, outcome := noteText.Draw(rt, "intent"), noteText.Draw(rt, "proposal"), noteText.Draw(rt, "outcome")
		got, ok := receiptNote(nil, intent, proposal, outcome)
		checkNote(rt, got, ok, receiptNoteMap(intent, proposal, outcome))
	})
}
