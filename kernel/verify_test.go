package kernel

import (
	"errors"
	"testing"

	"flrh.dev/flrh/protocol"
)

func TestCheckTransition(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	tr := mustStep(t, s, e)
	if err := CheckTransition(Observation{}, tr); err != nil {
		t.Fatalf("genuine transition refused: %v", err)
	}
	edits := map[string]func(x *Transition){
		"fact tuple":         func(x *Transition) { x.FactDeltas[0].Tuple = protocol.Object{"predicate": "other"} },
		"fact logical time":  func(x *Transition) { x.FactDeltas[0].LogicalTime = 9 },
		"proposal risk":      func(x *Transition) { x.EffectProposals[0].DeclaredRiskHint = protocol.RiskReadOnly },
		"proposal action":    func(x *Transition) { x.EffectProposals[0].ActionDigest = tr.EffectProposals[0].DestinationDigest },
		"next snapshot":      func(x *Transition) { x.NextSnapshot.Phase = PhaseClosed },
		"prior digest":       func(x *Transition) { x.PriorSnapshotDigest = x.TransitionDigest },
		"event id":           func(x *Transition) { x.EventID = "evt:other" },
		"dropped proposal":   func(x *Transition) { x.EffectProposals = nil },
		"transition digest":  func(x *Transition) { x.TransitionDigest = x.PriorSnapshotDigest },
		"contract version":   func(x *Transition) { x.ContractVersion = "flrh-f-kernel/2" },
		"fact identity only": func(x *Transition) { x.FactDeltas[0].DerivationID = "derivation:0" },
	}
	for name, edit := range edits {
		x := *tr
		x.FactDeltas = append([]protocol.FactDelta(nil), tr.FactDeltas...)
		x.EffectProposals = append([]protocol.EffectProposal(nil), tr.EffectProposals...)
		edit(&x)
		if CheckTransition(Observation{}, &x) == nil {
			t.Errorf("%s: edit not detected", name)
		}
	}
	// Reordered preconditions are the same set: still genuine.
	x := *tr
	p := x.EffectProposals[0]
	p.Preconditions = protocol.IDSet{p.Preconditions[1], p.Preconditions[0]}
	x.EffectProposals = []protocol.EffectProposal{p}
	if err := CheckTransition(Observation{}, &x); err != nil {
		t.Errorf("set order flagged: %v", err)
	}
}

func TestReplay(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	var events []protocol.AcceptedEvent
	var want []string
	for i, amount := range []int64{3, 4, 5} {
		ev := shopEvent(s, "evt:"+string(rune('a'+i)), int64(i), "order.placed/1", order("order:"+string(rune('a'+i)), amount, i == 1))
		tr, err := Step(d, s, ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckTransition(d, tr); err != nil {
			t.Fatalf("declarative transition refused: %v", err)
		}
		events, want, s = append(events, ev), append(want, tr.TransitionDigest), tr.NextSnapshot
	}
	got, final, err := Replay(d, NewSnapshot(d, "shop:1", shopVersions), events)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("replay digest %d differs", i)
		}
	}
	a, _ := final.Digest()
	b, _ := s.Digest()
	if a != b {
		t.Error("replayed snapshot differs")
	}
	// A log with a reordered event is caught at that event.
	events[1], events[2] = events[2], events[1]
	_, _, err = Replay(d, NewSnapshot(d, "shop:1", shopVersions), events)
	var r *Rejection
	if !errors.As(err, &r) || r.Code != CodeStaleRevision {
		t.Errorf("reordered log: %v", err)
	}
}
