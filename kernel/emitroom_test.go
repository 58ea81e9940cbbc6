package kernel

import (
	"reflect"
	"testing"
)

// emitRendered is Emit as each template rendered into lists of its own
// gives it: the reference the emission's shared lists are held to.
func emitRendered(d *Declarative, s Snapshot, e Event) (Emission, *Fault) {
	x := env{s, e}
	r := d.events[e.Type]
	var em Emission
	for _, fr := range r.facts {
		tuple, f := x.render(fr.tupleT)
		if f != nil {
			return Emission{}, f
		}
		prov, f := x.render(fr.provT)
		if f != nil {
			return Emission{}, f
		}
		em.Facts = append(em.Facts, Fact{Tuple: tuple.(map[string]any), Provenance: prov.(map[string]any), Diff: fr.diff})
	}
	for _, pr := range r.proposals {
		on, f := x.condition(pr.whenC, "/accepted_event/payload")
		if f != nil {
			return Emission{}, f
		}
		if !on {
			continue
		}
		action, f := x.render(pr.actionT)
		if f != nil {
			return Emission{}, f
		}
		dest, f := x.render(pr.destT)
		if f != nil {
			return Emission{}, f
		}
		ids, f := x.preconditions(pr.preT)
		if f != nil {
			return Emission{}, f
		}
		em.Proposals = append(em.Proposals, Proposal{EffectType: pr.effectType, Action: action.(map[string]any),
			Destination: dest.(map[string]any), GoalID: pr.goalID, ObligationID: pr.obligationID, RiskHint: pr.risk, Preconditions: ids})
	}
	return em, nil
}

// TestEmitListsAreTheRendered: an emission whose rule has one fact and one
// proposal, emitted or not, is the one its templates render into lists of
// their own, as are the others.
func TestEmitListsAreTheRendered(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	for _, e := range []Event{
		{ID: "evt:1", Type: "order.placed/1", Payload: order("order:1", 30, true)},
		{ID: "evt:2", Type: "order.placed/1", Payload: order("order:2", 30, false)},
		{ID: "evt:3", Type: "shop.closed/1", Payload: map[string]any{}},
		{ID: "evt:4", Type: "order.placed/1", Payload: map[string]any{"notify": true}},
	} {
		em, f := d.Emit(s, e)
		want, wf := emitRendered(d, s, e)
		if !reflect.DeepEqual(em, want) || !reflect.DeepEqual(f, wf) {
			t.Fatalf("%s: %#v %v, rendered %#v %v", e.ID, em, f, want, wf)
		}
		if len(em.Facts) > 0 && cap(em.Facts) != len(d.events[e.Type].facts) {
			t.Fatalf("%s: facts capped at %d", e.ID, cap(em.Facts))
		}
	}
}
