package authority

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

func baseSpec() TicketSpec {
	return TicketSpec{
		TicketID: "ticket:1", Action: "payment.send", Destination: "dest:bank", Scope: "scope:team",
		Parameters:   map[string]any{"amount": int64(500), "memo": "rent"},
		SideEffects:  []SideEffect{SideEffectExternal, SideEffectWrite},
		DeclaredRisk: RiskHighRiskExternal, AssessedRisk: RiskHighRiskExternal,
		RequiredParameters: []string{"amount", "memo"},
	}
}

func TestValidateSideEffects(t *testing.T) {
	cases := []struct {
		set  []SideEffect
		code string
	}{
		{[]SideEffect{SideEffectNone}, ""},
		{[]SideEffect{SideEffectRead, SideEffectWrite}, ""},
		{[]SideEffect{SideEffectNone, SideEffectRead}, "SIDE_EFFECT_NONE_NOT_ALONE"},
		{[]SideEffect{SideEffectRead, SideEffectNone}, "SIDE_EFFECT_NONE_NOT_ALONE"},
		{nil, "SIDE_EFFECTS_EMPTY"},
		{[]SideEffect{"DELETE"}, "SIDE_EFFECT_UNKNOWN"},
		{[]SideEffect{SideEffectWrite, SideEffectWrite}, "SIDE_EFFECT_DUPLICATE"},
	}
	for _, c := range cases {
		err := ValidateSideEffects(c.set)
		var te *TicketError
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%v: unexpected %v", c.set, err)
		case c.code != "" && (!errors.As(err, &te) || te.Code != c.code):
			t.Errorf("%v: got %v, want %s", c.set, err, c.code)
		}
	}
}

func TestVerificationClass(t *testing.T) {
	cases := []struct {
		m    ToolManifest
		want bool
	}{
		{ToolManifest{SideEffects: []SideEffect{SideEffectNone}}, true},
		{ToolManifest{SideEffects: []SideEffect{SideEffectRead}}, false},
		// Idempotence is not enough.
		{ToolManifest{SideEffects: []SideEffect{SideEffectWrite}, Idempotent: true}, false},
		{ToolManifest{SideEffects: nil, Idempotent: true}, false},
		{ToolManifest{SideEffects: []SideEffect{SideEffectNone, SideEffectRead}}, false},
	}
	for i, c := range cases {
		if got := VerificationClass(c.m); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
}

func TestDraftTicketCompleteness(t *testing.T) {
	tk, err := DraftTicket(baseSpec())
	if err != nil {
		t.Fatal(err)
	}
	if tk.Completeness != Complete || len(tk.MissingFields) != 0 {
		t.Fatalf("complete spec drafted as %s %v", tk.Completeness, tk.MissingFields)
	}
	if !tk.PreviewRequired || !tk.ConfirmationRequired || tk.Status != StatusAwaitingPreview {
		t.Fatalf("high-risk ticket: preview %v confirm %v status %s", tk.PreviewRequired, tk.ConfirmationRequired, tk.Status)
	}
	s := baseSpec()
	s.Destination = ""
	delete(s.Parameters, "memo")
	tk, err = DraftTicket(s)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Completeness != Incomplete || strings.Join(tk.MissingFields, ",") != "destination,parameters/memo" || tk.Status != StatusDraft {
		t.Fatalf("incomplete: %s %v %s", tk.Completeness, tk.MissingFields, tk.Status)
	}
	if !strings.Contains(tk.Preview, "Incomplete: missing destination, parameters/memo") {
		t.Errorf("preview hides what is missing:\n%s", tk.Preview)
	}
	if ok, why := tk.Reduced().Decidable(); ok || why != "ticket incomplete" {
		t.Errorf("incomplete ticket decidable=%v (%s)", ok, why)
	}
}

func TestDraftTicketRejectsMalformed(t *testing.T) {
	cases := map[string]func(*TicketSpec){
		"bad id":          func(s *TicketSpec) { s.TicketID = " x" },
		"bad action":      func(s *TicketSpec) { s.Action = "pay ment" },
		"none not alone":  func(s *TicketSpec) { s.SideEffects = []SideEffect{SideEffectNone, SideEffectWrite} },
		"bad risk":        func(s *TicketSpec) { s.AssessedRisk = "medium" },
		"float parameter": func(s *TicketSpec) { s.Parameters = map[string]any{"amount": 1.5} },
	}
	for name, mutate := range cases {
		s := baseSpec()
		mutate(&s)
		if _, err := DraftTicket(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTicketLifecycleAndReducedInterface(t *testing.T) {
	tk, _ := DraftTicket(baseSpec())
	if _, err := Advance(tk, TicketConfirm); err == nil {
		t.Fatal("confirmation accepted before the preview was shown")
	}
	if _, err := Advance(tk, TicketExecute); err == nil {
		t.Fatal("executed while awaiting preview")
	}
	tk, _ = Advance(tk, TicketShowPreview)
	if tk.Status != StatusAwaitingConfirmation {
		t.Fatalf("after preview: %s", tk.Status)
	}
	if ok, why := tk.Reduced().Decidable(); ok || why != "confirmation not received" {
		t.Fatalf("decidable=%v %s", ok, why)
	}
	tk, _ = Advance(tk, TicketConfirm)
	if tk.Status != StatusReady {
		t.Fatalf("after confirm: %s", tk.Status)
	}
	if ok, _ := tk.Reduced().Decidable(); !ok {
		t.Fatal("ready ticket not decidable")
	}
	tk, _ = Advance(tk, TicketExecute)
	if tk.Status != StatusExecuted {
		t.Fatal(tk.Status)
	}
	if _, err := Advance(tk, TicketCancel); err == nil {
		t.Fatal("terminal ticket accepted an event")
	}
	if err := tk.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestShapeIsVisibleAndChangesTheAction(t *testing.T) {
	tk, _ := DraftTicket(baseSpec())
	tk, _ = Advance(tk, TicketShowPreview)
	limit := int64(100)
	shaped, err := Shape(tk, Constraint{Gate: "G2", Rule: "g2.cap", Field: "parameters/amount", Max: &limit}, Constraint{Gate: "G3", Rule: "g3.narrow", Field: "scope", Scope: "scope:self"})
	if err != nil {
		t.Fatal(err)
	}
	if shaped.Parameters["amount"] != int64(100) || shaped.Scope != "scope:self" {
		t.Fatalf("not shaped: %v %s", shaped.Parameters, shaped.Scope)
	}
	if tk.Parameters["amount"] != int64(500) {
		t.Fatal("Shape mutated its input")
	}
	if shaped.ActionDigest == tk.ActionDigest || shaped.PreviewDigest == tk.PreviewDigest {
		t.Fatal("shaped ticket kept the original digests")
	}
	for _, want := range []string{"Constrained by G2 (g2.cap): parameters/amount limited to 100", "Constrained by G3 (g3.narrow): scope narrowed to scope:self", "amount = 100"} {
		if !strings.Contains(shaped.Preview, want) {
			t.Errorf("preview lacks %q:\n%s", want, shaped.Preview)
		}
	}
	if shaped.PreviewShown {
		t.Error("a shaped ticket must be previewed again")
	}
	if err := shaped.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestTicketVerifyDetectsTampering(t *testing.T) {
	tk, _ := DraftTicket(baseSpec())
	bad := tk
	bad.Parameters = map[string]any{"amount": int64(5000), "memo": "rent"}
	if err := bad.Verify(); err == nil {
		t.Error("changed parameters not detected")
	}
	bad = tk
	bad.Preview = strings.Replace(tk.Preview, "500", "5", 1)
	if err := bad.Verify(); err == nil {
		t.Error("changed preview not detected")
	}
	bad = tk
	bad.Status = StatusReady
	if err := bad.Verify(); err == nil {
		t.Error("forged status not detected")
	}
}

func TestTicketPropertiesRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		amount := rapid.Int64Range(0, 1_000_000).Draw(rt, "amount")
		limit := rapid.Int64Range(0, 1_000_000).Draw(rt, "limit")
		s := baseSpec()
		s.Parameters = map[string]any{"amount": amount, "memo": rapid.StringMatching(`[a-z]{0,8}`).Draw(rt, "memo")}
		a, err := DraftTicket(s)
		if err != nil {
			rt.Fatal(err)
		}
		b := determinism.Check(t, s, func(s TicketSpec) Ticket { tk, _ := DraftTicket(s); return tk })
		if a.TicketDigest != b.TicketDigest || a.Preview != b.Preview {
			rt.Fatal("drafting is not deterministic")
		}
		shaped, err := Shape(a, Constraint{Gate: "G2", Rule: "r", Field: "parameters/amount", Max: &limit})
		if err != nil {
			rt.Fatal(err)
		}
		got := shaped.Parameters["amount"].(int64)
		if got > amount || got > limit || (amount <= limit && got != amount) {
			rt.Fatalf("shape %d under cap %d gave %d", amount, limit, got)
		}
	})
}

// TestMissingFieldsAndSortedEffectsMatchPlainDefinitions holds the
// copy-free fast paths equal to their plain definitions (sort a copy of
// the required names; sort.Slice the effects) and checks the caller's
// slices are never reordered.
func TestMissingFieldsAndSortedEffectsMatchPlainDefinitions(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		required := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "amount", "b", "body", "tone"}), 0, 6).Draw(rt, "required")
		if rapid.Bool().Draw(rt, "sorted") {
			slices.Sort(required)
		}
		params := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.SampledFrom([]string{"a", "amount", "b", "body", "tone"}), 0, 5).Draw(rt, "present") {
			params[k] = rapid.SampledFrom([]any{"x", "", nil, int64(1)}).Draw(rt, "v")
		}
		tk := Ticket{Action: "artifact.publish", Scope: rapid.SampledFrom([]string{"", "s"}).Draw(rt, "scope"), Parameters: params}
		before := slices.Clone(required)
		got := missingFields(tk, required)
		if !slices.Equal(required, before) {
			rt.Fatalf("missingFields reordered its argument: %q -> %q", before, required)
		}
		var want []string
		if tk.Destination == "" {
			want = append(want, "destination")
		}
		if tk.Scope == "" {
			want = append(want, "scope")
		}
		want = append(want, "assessed_risk")
		req := slices.Clone(before)
		sort.Strings(req)
		for i, name := range req {
			if i > 0 && req[i-1] == name {
				continue
			}
			if v, ok := params[name]; !ok || v == nil || v == "" {
				want = append(want, "parameters/"+name)
			}
		}
		if !slices.Equal(got, want) {
			rt.Fatalf("missingFields(%q) = %q, want %q", before, got, want)
		}

		effects := rapid.SliceOfN(rapid.SampledFrom([]SideEffect{SideEffectNone, SideEffectRead, SideEffectWrite, SideEffectExternal, SideEffectIrreversible, "x.unknown", "y.unknown"}), 0, 8).Draw(rt, "effects")
		ref := slices.Clone(effects)
		sort.Slice(ref, func(i, j int) bool { return sideEffectRankRef[ref[i]] < sideEffectRankRef[ref[j]] })
		inEffects := slices.Clone(effects)
		if out := sortedEffects(effects); !slices.Equal(out, ref) || !slices.Equal(effects, inEffects) {
			rt.Fatalf("sortedEffects(%q) = %q, want %q (argument now %q)", inEffects, out, ref, effects)
		}
		// With room: the same list, nil when empty, in room's array when
		// it fits, never in the argument's, capped at room.
		room := make([]SideEffect, rapid.IntRange(0, 5).Draw(rt, "room"))
		out := sortedEffectsIn(room, effects)
		if !slices.Equal(out, ref) || (out == nil) != (len(effects) == 0) || !slices.Equal(effects, inEffects) {
			rt.Fatalf("sortedEffectsIn(room %d, %q) = %q, want %q (argument now %q)", len(room), inEffects, out, ref, effects)
		}
		if len(out) > 0 {
			inRoom := len(effects) <= len(room)
			got := len(room) > 0 && &out[0] == &room[0]
			if got != inRoom || &out[0] == &effects[0] || inRoom && cap(out) != len(room) {
				rt.Fatalf("sortedEffectsIn(room %d, %q): in room %v, cap %d", len(room), inEffects, got, cap(out))
			}
		}
	})
}

// sideEffectRankRef is the side-effect order as a map, the definition
// effectRank is held to.
var sideEffectRankRef = map[SideEffect]int{SideEffectNone: 0, SideEffectRead: 1, SideEffectWrite: 2, SideEffectExternal: 3, SideEffectIrreversible: 4}

// validateSideEffectsRef is ValidateSideEffects over the map and a set of
// seen classes, as it was written before effectRank.
func validateSideEffectsRef(set []SideEffect) error {
	if len(set) == 0 {
		return &TicketError{"SIDE_EFFECTS_EMPTY", "/side_effects", "a ticket declares at least one side-effect class (NONE for none)"}
	}
	seen := map[SideEffect]bool{}
	for i, s := range set {
		if _, ok := sideEffectRankRef[s]; !ok {
			return &TicketError{"SIDE_EFFECT_UNKNOWN", "/side_effects/" + strconv.Itoa(i), fmt.Sprintf("%q is not a side-effect class", s)}
		}
		if seen[s] {
			return &TicketError{"SIDE_EFFECT_DUPLICATE", "/side_effects/" + strconv.Itoa(i), fmt.Sprintf("%q appears twice", s)}
		}
		seen[s] = true
	}
	if seen[SideEffectNone] && len(set) > 1 {
		return &TicketError{"SIDE_EFFECT_NONE_NOT_ALONE", "/side_effects", "NONE cannot stand beside another side-effect class"}
	}
	return nil
}

// effectRank and riskRank are their vocabularies' orders, and
// ValidateSideEffects judges every set as the map-based check did.
func TestRanksAndSideEffectCheckMatchMaps(t *testing.T) {
	riskRef := map[string]int{RiskReadOnly: 1, RiskReversible: 2, RiskHighRiskExternal: 3}
	rapid.Check(t, func(rt *rapid.T) {
		vocab := []SideEffect{SideEffectNone, SideEffectRead, SideEffectWrite, SideEffectExternal, SideEffectIrreversible, "x.unknown", "", "none"}
		set := rapid.SliceOfN(rapid.SampledFrom(vocab), 0, 7).Draw(rt, "set")
		got, want := ValidateSideEffects(set), validateSideEffectsRef(set)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			rt.Fatalf("ValidateSideEffects(%q) = %v, want %v", set, got, want)
		}
		for _, s := range set {
			r, ok := effectRank(s)
			wr, wok := sideEffectRankRef[s]
			if r != wr || ok != wok {
				rt.Fatalf("effectRank(%q) = %d, %v; want %d, %v", s, r, ok, wr, wok)
			}
		}
		risk := rapid.SampledFrom([]string{RiskReadOnly, RiskReversible, RiskHighRiskExternal, "", "x"}).Draw(rt, "risk")
		if r, ok := riskRank(risk); r != riskRef[risk] || ok != (riskRef[risk] != 0) {
			rt.Fatalf("riskRank(%q) = %d, %v", risk, r, ok)
		}
	})
}

// A ticket this package sealed, with lifecycle events applied and sealed
// once (apply, applied), is the ticket Advance gives applying them one by
// one, an event Advance refuses skipped in both: every member, the
// digests, the preview and the status included. Tickets are drawn
// complete and incomplete, of every risk and side effect (so previews
// and confirmations are required or not), some already advanced or
// shaped, and events in any order and number.
func TestAppliedIsAdvance(t *testing.T) {
	events := []string{TicketShowPreview, TicketConfirm, TicketExecute, TicketRefuse, TicketExpire, TicketCancel, "NOT_AN_EVENT"}
	rapid.Check(t, func(rt *rapid.T) {
		s := baseSpec()
		s.Parameters = map[string]any{"amount": rapid.Int64Range(0, 1000).Draw(rt, "amount")}
		if rapid.Bool().Draw(rt, "memo") {
			s.Parameters["memo"] = rapid.StringMatching(`[a-z "\\é\n]{0,8}`).Draw(rt, "memo text")
		}
		s.SideEffects = rapid.SliceOfNDistinct(rapid.SampledFrom([]SideEffect{SideEffectRead, SideEffectWrite, SideEffectExternal, SideEffectIrreversible}), 1, 3, rapid.ID[SideEffect]).Draw(rt, "effects")
		s.DeclaredRisk = rapid.SampledFrom([]string{"", RiskReadOnly, RiskReversible, RiskHighRiskExternal}).Draw(rt, "declared")
		s.AssessedRisk = rapid.SampledFrom([]string{RiskReadOnly, RiskReversible, RiskHighRiskExternal}).Draw(rt, "assessed")
		tk, err := DraftTicket(s)
		if err != nil {
			rt.Skip(err)
		}
		if rapid.Bool().Draw(rt, "shaped") {
			limit := rapid.Int64Range(0, 1000).Draw(rt, "limit")
			if sh, err := Shape(tk, Constraint{Gate: "G2", Rule: "r", Field: "parameters/amount", Max: &limit}); err == nil {
				tk = sh
			}
		}
		for _, e := range rapid.SliceOfN(rapid.SampledFrom(events), 0, 2).Draw(rt, "before") {
			tk, _ = Advance(tk, e)
		}
		want, u := tk, tk
		for _, e := range rapid.SliceOfN(rapid.SampledFrom(events), 1, 3).Draw(rt, "events") {
			want, _ = Advance(want, e)
			u, _ = u.apply(e)
		}
		var a *strArena
		if rapid.Bool().Draw(rt, "arena") {
			a = new(strArena)
		}
		if got := tk.applied(a, u); !reflect.DeepEqual(got, want) {
			rt.Fatalf("applied:\n%+v\nAdvance:\n%+v", got, want)
		}
	})
}

// A decision given shown previews and confirmations applies them to its
// ticket as Advance does, one after the other: the outcome's ticket is
// the one the same decision makes without them, advanced by Advance.
func TestShownPreviewsAndConfirmationsAreAdvance(t *testing.T) {
	for _, audience := range []string{"internal", "public"} {
		in, _ := fixtureInput(t, audience)
		d, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		plain := d.Outcomes[0].Ticket
		for _, c := range []struct{ shown, confirmed bool }{{true, false}, {false, true}, {true, true}} {
			want := plain
			with := in
			if c.shown {
				with.PreviewsShown = []string{"sha256:other", plain.PreviewDigest}
				want, _ = Advance(want, TicketShowPreview)
			}
			if c.confirmed {
				with.Confirmations = []string{plain.ActionDigest}
				if want.PreviewShown {
					want, _ = Advance(want, TicketConfirm)
				}
			}
			d, err := Authorize(with)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Outcomes[0].Ticket; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, shown %v, confirmed %v: ticket\n%+v\nwant\n%+v", audience, c.shown, c.confirmed, got, want)
			}
		}
	}
}
