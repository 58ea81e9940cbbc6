package authority

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"flrh.dev/flrh/mrp"
	"pgregory.net/rapid"
)

func gate(g string, d Decision, opts ...string) Signal {
	s := GateSignal(g, d, Reason{Rule: g + "." + d.String()})
	s.Options = opts
	return s
}

func other(kind string, tier int) Signal { return Signal{Tier: tier, Kind: kind, Source: kind} }

func TestResolveTable(t *testing.T) {
	cases := []struct {
		name        string
		in          []Signal
		decision    Decision
		move        mrp.Move
		contestable bool
		ties        int
	}{
		{"nothing", nil, NoDecision, mrp.MoveProceed, false, 0},
		{"allow", []Signal{gate(GateG2, Allow)}, Allow, mrp.MoveProceed, false, 0},
		{"hard gate wins outright", []Signal{gate(GateG2, Allow), gate(GateG1, Refuse), other(KindAttunement, 4)}, Refuse, mrp.MoveRefuse, false, 0},
		{"watchdog fails safe", []Signal{gate(GateG2, Allow), other(KindWatchdog, 0)}, Refuse, mrp.MoveFailsafe, false, 0},
		{"conflict goes conservative", []Signal{gate(GateG2, Allow), gate(GateG3, Escalate)}, Escalate, mrp.MoveEscalate, false, 1},
		{"ask first holds", []Signal{gate(GateG2, Allow), gate(GateH1, AskFirst)}, AskFirst, mrp.MoveAskFirst, false, 1},
		{"shape constrains", []Signal{gate(GateG2, ShapeDecision)}, ShapeDecision, mrp.MoveConstrain, false, 0},
		{"tier 2 tests", []Signal{gate(GateG2, Allow), other(KindVerification, 2)}, Allow, mrp.MoveTest, false, 0},
		{"tier 3 holds", []Signal{gate(GateG2, Allow), other(KindVerification, 2), other(KindClarification, 3)}, Allow, mrp.MoveHold, false, 0},
		{"tier 4 stays", []Signal{gate(GateG2, Allow), other(KindAttunement, 4)}, Allow, mrp.MoveProceed, false, 0},
		{"lower tier cannot soften escalation", []Signal{gate(GateG2, Escalate), other(KindClarification, 3)}, Escalate, mrp.MoveEscalate, false, 0},
		{"G4 with two safe paths opens contest", []Signal{gate(GateG2, Allow), gate(GateG4, ShapeDecision, "formal", "plain")}, ShapeDecision, mrp.MoveOptions, true, 1},
		{"G4 with one path does not", []Signal{gate(GateG4, ShapeDecision, "formal")}, ShapeDecision, mrp.MoveConstrain, false, 0},
		{"G3 refusal is not contestable", []Signal{gate(GateG3, Refuse, "a", "b")}, Refuse, mrp.MoveRefuse, false, 0},
		{"G3 ask-first is", []Signal{gate(GateG3, AskFirst, "a"), gate(GateG4, AskFirst, "b")}, AskFirst, mrp.MoveOptions, true, 0},
		{"a non-contestable gate at the same level keeps it closed", []Signal{gate(GateG2, AskFirst), gate(GateG4, AskFirst, "a", "b")}, AskFirst, mrp.MoveAskFirst, false, 0},
	}
	for _, c := range cases {
		r, err := Resolve(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Decision != c.decision || r.Move != c.move || r.Contestable != c.contestable || len(r.Ties) != c.ties {
			t.Errorf("%s: decision %s move %s contest %v ties %d; want %s %s %v %d", c.name, r.Decision, r.Move, r.Contestable, len(r.Ties), c.decision, c.move, c.contestable, c.ties)
		}
	}
}

func TestResolveRejectsMalformedSignals(t *testing.T) {
	bad := []Signal{
		{Tier: 5, Kind: KindAttunement},
		{Tier: 1, Kind: KindGate, Source: "G9", Decision: Allow},
		{Tier: 1, Kind: KindGate, Source: GateG1, Decision: Refuse}, // a hard refusal is tier 0
		{Tier: 1, Kind: KindGate, Source: GateG2},
		{Tier: 2, Kind: KindWatchdog},
		{Tier: 3, Kind: KindClarification, Decision: Allow},
		{Tier: 2, Kind: "RUMOUR"},
	}
	for i, s := range bad {
		if _, err := Resolve([]Signal{s}); err == nil {
			t.Errorf("case %d accepted: %+v", i, s)
		}
	}
}

func drawSignal(rt *rapid.T, label string) Signal {
	switch rapid.IntRange(0, 5).Draw(rt, label+"/class") {
	case 0:
		g := rapid.SampledFrom(Gates).Draw(rt, label+"/gate")
		d := Decision(rapid.IntRange(int(Allow), int(Refuse)).Draw(rt, label+"/d"))
		opts := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c"}), 0, 3, rapid.ID[string]).Draw(rt, label+"/opts")
		return gate(g, d, opts...)
	case 1:
		return other(rapid.SampledFrom([]string{KindWatchdog, KindExfiltration}).Draw(rt, label+"/k"), 0)
	case 2:
		return other(KindVerification, 2)
	case 3:
		return other(KindClarification, 3)
	default:
		return other(KindAttunement, 4)
	}
}

// Property: adding a signal of a lower tier than the highest tier present
// never makes the outcome less conservative (neither the decision nor the
// move).
func TestLowerTierNeverWeakens(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "n")
		var sigs []Signal
		for i := 0; i < n; i++ {
			sigs = append(sigs, drawSignal(rt, "s"))
		}
		before, err := Resolve(sigs)
		if err != nil {
			rt.Fatal(err)
		}
		extra := drawSignal(rt, "extra")
		if extra.Tier <= before.HighestTier {
			rt.Skip("not a lower tier")
		}
		after, err := Resolve(append(append([]Signal(nil), sigs...), extra))
		if err != nil {
			rt.Fatal(err)
		}
		if after.Decision < before.Decision || after.Move < before.Move {
			rt.Fatalf("adding tier-%d %s weakened %s/%s to %s/%s", extra.Tier, extra.Kind, before.Decision, before.Move, after.Decision, after.Move)
		}
		if after.Decision != before.Decision {
			rt.Fatalf("a lower tier changed the gate decision")
		}
	})
}

// Property: the resolution does not depend on the order of the signals.
func TestResolveOrderIndependent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 7).Draw(rt, "n")
		var sigs []Signal
		for i := 0; i < n; i++ {
			sigs = append(sigs, drawSignal(rt, "s"))
		}
		perm := rapid.Permutation(sigs).Draw(rt, "perm")
		a, err1 := Resolve(sigs)
		b, err2 := Resolve(perm)
		if err1 != nil || err2 != nil {
			rt.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(a, b) {
			rt.Fatalf("order changed the resolution:\n%+v\n%+v", a, b)
		}
	})
}

// Property: a tier-0 hard block always refuses, whatever else is present.
func TestHardBlocksWinOutright(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var sigs []Signal
		for i := rapid.IntRange(0, 6).Draw(rt, "n"); i > 0; i-- {
			sigs = append(sigs, drawSignal(rt, "s"))
		}
		sigs = append(sigs, gate(rapid.SampledFrom([]string{GateG1, GateH1}).Draw(rt, "hard"), Refuse))
		r, _ := Resolve(sigs)
		if r.Decision != Refuse || r.Move < mrp.MoveRefuse || r.Contestable {
			rt.Fatalf("hard block did not win: %s %s", r.Decision, r.Move)
		}
	})
}

// TestResolveOrderMatchesSignalKeySort holds Resolve's canonical order
// (keys built once, a stable sort of indices) equal to its definition: a
// stable sort of the signals by signalKey.
func TestResolveOrderMatchesSignalKeySort(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sigs := drawSignals(rt, 8)
		want := append([]Signal(nil), sigs...)
		sort.SliceStable(want, func(i, j int) bool { return signalKey(want[i]) < signalKey(want[j]) })
		res, err := Resolve(sigs)
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(res.Signals, want) && !(len(want) == 0 && len(res.Signals) == 0) {
			rt.Fatalf("order %v, want %v", res.Signals, want)
		}
	})
}

// TestResolveSharedIsResolve holds resolveShared, which hands back the
// signals themselves when they are in order already, to Resolve: the same
// resolution, signals unchanged, and the signals' array shared exactly
// when they were sorted (or were one). Half the draws are sorted first so
// that both ways are taken.
func TestResolveSharedIsResolve(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sigs := drawSignals(rt, 6)
		if rapid.Bool().Draw(rt, "sorted") {
			sort.SliceStable(sigs, func(i, j int) bool { return signalKey(sigs[i]) < signalKey(sigs[j]) })
		}
		given := append([]Signal(nil), sigs...)
		want, err1 := Resolve(sigs)
		got, err2 := resolveShared(sigs)
		if (err1 == nil) != (err2 == nil) {
			rt.Fatalf("errors differ: %v, %v", err1, err2)
		}
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("resolveShared\n%+v\nResolve\n%+v", got, want)
		}
		if !reflect.DeepEqual(sigs, given) {
			rt.Fatalf("the signals were written: %v, were %v", sigs, given)
		}
		if err1 != nil || len(sigs) == 0 {
			return
		}
		inOrder := sort.SliceIsSorted(given, func(i, j int) bool { return signalKey(given[i]) < signalKey(given[j]) })
		if shared := &got.Signals[0] == &sigs[0]; shared != inOrder {
			rt.Fatalf("shared %v, in order %v", shared, inOrder)
		}
		if cap(got.Signals) != len(got.Signals) && &got.Signals[0] == &sigs[0] {
			rt.Fatalf("a shared list has room past its end")
		}
	})
}

// drawSignals draws up to most signals, each labelled by its position.
func drawSignals(rt *rapid.T, most int) []Signal {
	n := rapid.IntRange(0, most).Draw(rt, "n")
	var sigs []Signal
	for i := 0; i < n; i++ {
		sigs = append(sigs, drawSignal(rt, fmt.Sprint(i)))
	}
	return sigs
}
