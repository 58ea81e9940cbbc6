package mrp

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
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

// fhrText draws strings cjson escapes, non-ASCII, non-NFC and invalid
// UTF-8 among them, so the differential test below reaches every branch
// of the writer's string handling.
var fhrText = rapid.OneOf(
	rapid.StringMatching(`[a-zé "\\\n\t~\x00\x1f\x7f\x{2028}\x{1F600}]{0,16}`),
	rapid.SampledFrom([]string{"", "e\u0301", "\xff", "\xed\xa0\x80", "sha256:ab", "caf\u00e9"}),
)

func drawFHR(rt *rapid.T) FHR {
	str := func(l string) string { return fhrText.Draw(rt, l) }
	strs := func(l string) []string {
		if rapid.Bool().Draw(rt, l+"_nil") {
			return nil
		}
		return rapid.SliceOfN(fhrText, 0, 3).Draw(rt, l)
	}
	n := func(l string) int { return rapid.IntRange(-1, 3).Draw(rt, l) }
	f := FHR{Kind: str("kind"), Turn: rapid.Int64().Draw(rt, "turn"), Scorecard: str("score"), State: State(str("state")),
		SafeMode: rapid.Bool().Draw(rt, "safe"), Prev: str("prev"), Digest: str("digest"),
		Budgets: Budgets{TurnLimit: rapid.Int().Draw(rt, "tl"), TurnUsed: rapid.Int().Draw(rt, "tu"), DeepLimit: rapid.Int().Draw(rt, "dl"),
			DeepUsed: rapid.Int().Draw(rt, "du"), SessionLimit: rapid.Int().Draw(rt, "sl"), SessionUsed: rapid.Int().Draw(rt, "su"),
			NoProgressLimit: rapid.Int().Draw(rt, "nl"), NoProgressRun: rapid.Int().Draw(rt, "nr"), EscalateOnNoProgress: rapid.Bool().Draw(rt, "esc")}}
	for i := n("signals"); i >= 0; i-- {
		f.Signals = append(f.Signals, SignalRecord{Ticket: str("st"), Tier: rapid.Int().Draw(rt, "tier"), Kind: str("sk"),
			Source: str("ss"), Decision: str("sd"), Rule: str("sr")})
	}
	for i := n("resolutions"); i >= 0; i-- {
		f.Resolutions = append(f.Resolutions, ResolutionRecord{Ticket: str("rt"), HighestTier: rapid.Int().Draw(rt, "ht"),
			Decision: str("rd"), Move: Move(rapid.IntRange(-1, int(MoveFailsafe)+1).Draw(rt, "move")), Options: strs("ro"),
			Ties: rapid.Int().Draw(rt, "ties"), Outcome: str("rout"), Contestable: rapid.Bool().Draw(rt, "contest")})
	}
	for i := n("tickets"); i >= 0; i-- {
		f.Tickets = append(f.Tickets, TicketView{TicketID: str("tid"), TicketDigest: str("tdg"), Status: str("tst"), MissingFields: strs("mf"),
			Complete: rapid.Bool().Draw(rt, "c"), ConfirmationReceived: rapid.Bool().Draw(rt, "cr"), ConfirmationRequired: rapid.Bool().Draw(rt, "cq"),
			PreviewRequired: rapid.Bool().Draw(rt, "pr"), PreviewShown: rapid.Bool().Draw(rt, "ps"), VerificationOnly: rapid.Bool().Draw(rt, "vo")})
	}
	for i := n("transitions"); i >= 0; i-- {
		f.Transitions = append(f.Transitions, Entry{Seq: rapid.Int().Draw(rt, "seq"), From: State(str("from")), To: State(str("to")),
			Trigger: Trigger(str("trig")), ActorID: str("actor"), Role: str("role"), Cause: str("cause"), Row: str("row"),
			Rejected: str("rej"), Summary: str("sum"), Refusal: rapid.Bool().Draw(rt, "refusal"), SafeMode: rapid.Bool().Draw(rt, "esafe")})
	}
	return f
}

// AppendCanonical writes what cjson.Marshal writes, and refuses what it
// refuses, leaving the buffer as it was.
func TestFHRAppendCanonicalIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := drawFHR(rt)
		prefix := []byte(fhrText.Draw(rt, "prefix"))
		got, err := f.AppendCanonical(prefix)
		want, werr := cjson.Marshal(f)
		if (err != nil) != (werr != nil) {
			rt.Fatalf("AppendCanonical error %v, cjson.Marshal error %v", err, werr)
		}
		if werr != nil {
			if string(got) != string(prefix) {
				rt.Fatalf("refused record left %q, want the prefix %q", got, prefix)
			}
			return
		}
		if string(got) != string(prefix)+string(want) {
			rt.Fatalf("AppendCanonical\n%s\ncjson.Marshal\n%s", got[len(prefix):], want)
		}
	})
}

// A move without a name is refused, as cjson.Marshal refuses it.
func TestFHRAppendCanonicalRejectsUnknownMove(t *testing.T) {
	for _, m := range []Move{-1, MoveFailsafe + 1} {
		f := FHR{Resolutions: []ResolutionRecord{{Ticket: "t", Move: m}}}
		if _, err := cjson.Marshal(f); err == nil {
			t.Fatalf("cjson.Marshal accepted move %d", m)
		}
		if b, err := f.AppendCanonical([]byte("x")); err == nil || string(b) != "x" {
			t.Fatalf("move %d: AppendCanonical = %q, %v", m, b, err)
		}
	}
	if _, err := (FHR{Resolutions: []ResolutionRecord{{Move: MoveFailsafe}}}).AppendCanonical(nil); err != nil {
		t.Fatal(err)
	}
}

// drawMachine draws a machine whose budgets and journey are a drawn FHR's,
// its options nil or drawn.
func drawMachine(rt *rapid.T) Machine {
	f := drawFHR(rt)
	m := Machine{State: State(fhrText.Draw(rt, "state")), Refusal: rapid.Bool().Draw(rt, "refusal"),
		SafeMode: rapid.Bool().Draw(rt, "safe"), SafeWhy: fhrText.Draw(rt, "why"), Cooldown: rapid.Bool().Draw(rt, "cool"),
		Budgets: f.Budgets, Journey: f.Transitions}
	if !rapid.Bool().Draw(rt, "options_nil") {
		m.Options = rapid.SliceOfN(fhrText, 0, 3).Draw(rt, "options")
	}
	return m
}

// Machine.AppendCanonical writes what cjson.Marshal writes, and refuses
// what it refuses, leaving the buffer as it was.
func TestMachineAppendCanonicalIsMarshal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := drawMachine(rt)
		prefix := []byte(fhrText.Draw(rt, "prefix"))
		got, err := m.AppendCanonical(prefix)
		want, werr := cjson.Marshal(m)
		if (err != nil) != (werr != nil) {
			rt.Fatalf("AppendCanonical error %v, cjson.Marshal error %v", err, werr)
		}
		if werr != nil {
			if string(got) != string(prefix) {
				rt.Fatalf("refused machine left %q, want the prefix %q", got, prefix)
			}
			return
		}
		if string(got) != string(prefix)+string(want) {
			rt.Fatalf("AppendCanonical\n%s\ncjson.Marshal\n%s", got[len(prefix):], want)
		}
	})
}

// AppendCanonicalKept, handed the bytes a machine with the same first n
// entries wrote for them, writes what AppendCanonical writes, and says
// where the journey's entries are in it: for drawn machines (refused
// ones included, which leave the prefix as it was) and every n.
func TestAppendCanonicalKeptIsAppendCanonical(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := drawMachine(rt)
		prefix := []byte(fhrText.Draw(rt, "prefix"))
		want, werr := m.AppendCanonical(append([]byte{}, prefix...))
		n := rapid.IntRange(0, len(m.Journey)).Draw(rt, "kept")
		// The kept bytes, from another machine with the same first n
		// entries, written after a prefix of its own.
		other := m
		other.Journey = m.Journey[:n:n]
		other.State, other.Options = "OTHER", []string{"x"}
		ob, os, oe, oerr := other.AppendCanonicalKept([]byte("{}"), nil, 0)
		if oerr != nil {
			return // an entry cjson refuses: nothing to keep
		}
		var kept []byte
		if m.Journey != nil {
			kept = ob[os:oe]
		}
		got, s, e, err := m.AppendCanonicalKept(append([]byte{}, prefix...), kept, n)
		if (err != nil) != (werr != nil) || string(got) != string(want) {
			rt.Fatalf("kept %d: %q (%v), AppendCanonical %q (%v)", n, got, err, want, werr)
		}
		if err != nil {
			return
		}
		if m.Journey == nil {
			if s != -1 || e != -1 {
				rt.Fatalf("a nil journey at %d, %d", s, e)
			}
			return
		}
		all, _, _, _ := Machine{Journey: m.Journey}.AppendCanonicalKept(nil, nil, 0)
		_, ws, we, _ := Machine{Journey: m.Journey}.AppendCanonicalKept(nil, nil, 0)
		if string(got[s:e]) != string(all[ws:we]) || got[s-1] != '[' || got[e] != ']' {
			rt.Fatalf("the journey's entries at %d, %d: %q, want %q", s, e, got[s:e], all[ws:we])
		}
	})
}

// SealAppend seals as Seal seals and appends what AppendCanonical writes
// for the sealed record; where it declines (ok false) it leaves the
// buffer as it was, and it declines only where the record holds a list
// item the preimage writes unchecked. The records drawn are the
// generator's and the same with plain lists, so both sides are met.
func TestFHRSealAppendIsSealThenAppendCanonical(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := drawFHR(rt)
		if rapid.Bool().Draw(rt, "plain_scalars") {
			// Scalars Seal accepts, so the lists decide.
			f.Kind, f.Scorecard, f.State, f.Prev, f.Digest = "k", "s", "st", "p", "d"
			for i := range f.Signals {
				f.Signals[i] = SignalRecord{Ticket: "t", Tier: i, Kind: "k", Source: "s", Decision: "d", Rule: "r"}
			}
			for i := range f.Resolutions {
				r := &f.Resolutions[i]
				r.Ticket, r.Decision, r.Outcome = "t", "d", "o"
			}
			for i := range f.Tickets {
				v := &f.Tickets[i]
				v.TicketID, v.TicketDigest, v.Status = "t", "g", "s"
			}
			for i := range f.Transitions {
				f.Transitions[i] = Entry{Seq: i, From: "a", To: "b", Trigger: "t", ActorID: "x", Role: "r", Cause: "c"}
			}
		}
		if rapid.Bool().Draw(rt, "plain_lists") {
			for i := range f.Resolutions {
				f.Resolutions[i].Move = Move(rapid.IntRange(0, int(MoveFailsafe)).Draw(rt, "pmove"))
				f.Resolutions[i].Options = nil
			}
			for i := range f.Tickets {
				f.Tickets[i].MissingFields = []string{"a", "b c"}
			}
		}
		prefix := []byte(fhrText.Draw(rt, "prefix"))
		buf := append(make([]byte, 0, len(prefix)+rapid.IntRange(0, 4096).Draw(rt, "room")), prefix...)
		sealed, got, ok, err := f.SealAppend(buf)
		want, werr := f.Seal()
		if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
			rt.Fatalf("SealAppend error %v, Seal error %v", err, werr)
		}
		if werr != nil || !ok {
			if ok || string(got) != string(prefix) {
				rt.Fatalf("declined seal (ok %v) left %q, want the prefix %q", ok, got, prefix)
			}
			if werr == nil && sealed.Digest != want.Digest {
				rt.Fatalf("declined seal's digest %s, Seal's %s", sealed.Digest, want.Digest)
			}
			if _, aerr := want.AppendCanonical(nil); werr == nil && aerr == nil && f.listsPlain() {
				rt.Fatalf("declined a record whose lists are plain")
			}
			return
		}
		if sealed.Digest != want.Digest || sealed.Kind != want.Kind {
			rt.Fatalf("SealAppend sealed %s %s, Seal %s %s", sealed.Kind, sealed.Digest, want.Kind, want.Digest)
		}
		canon, aerr := want.AppendCanonical(nil)
		if aerr != nil {
			rt.Fatalf("SealAppend wrote a record AppendCanonical refuses: %v", aerr)
		}
		if string(got) != string(prefix)+string(canon) {
			rt.Fatalf("SealAppend\n%s\nAppendCanonical\n%s", got[len(prefix):], canon)
		}
	})
}

// TestSealInIsSeal: SealIn and SealAppendIn seal as Seal and SealAppend
// do, the digest appended to the builder and cut from it.
func TestSealInIsSeal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := drawFHR(rt)
		var sb strings.Builder
		sb.WriteString(rapid.StringN(0, 8, -1).Draw(rt, "before"))
		n := sb.Len()
		want, wantErr := f.Seal()
		got, gotErr := f.SealIn(&sb)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			rt.Fatalf("SealIn = %+v, %v; Seal = %+v, %v", got, gotErr, want, wantErr)
		}
		if wantErr == nil && sb.String()[n:] != want.Digest {
			rt.Fatalf("the builder holds %q after the digest %q", sb.String()[n:], want.Digest)
		}
		w, wb, wok, werr := f.SealAppend([]byte("x"))
		g, gb, gok, gerr := f.SealAppendIn([]byte("x"), &sb)
		if !reflect.DeepEqual(g, w) || !bytes.Equal(gb, wb) || gok != wok || !reflect.DeepEqual(gerr, werr) {
			rt.Fatalf("SealAppendIn = %+v, %q, %v, %v; SealAppend = %+v, %q, %v, %v", g, gb, gok, gerr, w, wb, wok, werr)
		}
	})
}

// AppendCanonicalKept over a machine of plain entries, for every n: the
// drawn machines above are often refused, so every split is met here.
func TestAppendCanonicalKeptSplits(t *testing.T) {
	m := Machine{State: Decide, Budgets: Budgets{TurnLimit: 3}, Options: []string{"a"}}
	for i := range 4 {
		m.Journey = append(m.Journey, Entry{Seq: i + 1, From: Hold, To: Decide, Trigger: Trigger("T" + strconv.Itoa(i)),
			ActorID: "actor", Role: "role", Cause: "cause " + strconv.Itoa(i), Row: "R1"})
	}
	want, err := m.AppendCanonical([]byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= len(m.Journey); n++ {
		other := Machine{Journey: m.Journey[:n:n]}
		ob, s, e, err := other.AppendCanonicalKept(nil, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, gs, ge, err := m.AppendCanonicalKept([]byte("x"), ob[s:e], n)
		if err != nil || string(got) != string(want) {
			t.Fatalf("kept %d: %s (%v), want %s", n, got, err, want)
		}
		if got[gs-1] != '[' || got[ge] != ']' || strings.Count(string(got[gs:ge]), `"seq":`) != len(m.Journey) {
			t.Fatalf("kept %d: the entries at %d, %d: %s", n, gs, ge, got[gs:ge])
		}
	}
}
