package kernel

import (
	"reflect"
	"testing"
)

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
		want, wf := d.emit(s, e, false, false)
		if !reflect.DeepEqual(em, want) || !reflect.DeepEqual(f, wf) {
			t.Fatalf("%s: %#v %v, rendered %#v %v", e.ID, em, f, want, wf)
		}
		if len(em.Facts) > 0 && cap(em.Facts) != len(d.events[e.Type].facts) {
			t.Fatalf("%s: facts capped at %d", e.ID, cap(em.Facts))
		}
	}
}
