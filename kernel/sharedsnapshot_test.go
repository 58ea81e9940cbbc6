package kernel

import (
	"bytes"
	"reflect"
	"testing"

	"flrh.dev/flrh/protocol"
)

// sharedStateDomain is a domain whose profile's initial state is given:
// copy-stable or not (a nil map below the object encodes as null, its
// copy as {}).
type sharedStateDomain struct {
	misbehaving
	initial protocol.Object
}

func (d sharedStateDomain) Profile() Profile {
	p := d.misbehaving.Profile()
	p.InitialState = d.initial
	return p
}

// TestNewSharedSnapshotIsNewSnapshot holds NewSharedSnapshot to
// NewSnapshot: the same snapshot, byte for byte, sharing the profile's
// initial state only when a copy would equal it.
func TestNewSharedSnapshotIsNewSnapshot(t *testing.T) {
	same := func(t *testing.T, d Domain) Snapshot {
		t.Helper()
		want, got := NewSnapshot(d, "agg:1", shopVersions), NewSharedSnapshot(d, "agg:1", shopVersions)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("shared snapshot %#v, NewSnapshot %#v", got, want)
		}
		wb, err1 := want.MarshalJSON()
		gb, err2 := got.MarshalJSON()
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(gb, wb) {
			t.Fatalf("shared snapshot encodes as %s (%v), NewSnapshot as %s (%v)", gb, err2, wb, err1)
		}
		return got
	}
	shop := loadShop(t)
	s := same(t, shop)
	if reflect.ValueOf(s.State).UnsafePointer() != reflect.ValueOf(profileOf(shop).InitialState).UnsafePointer() {
		t.Fatal("the shop's copy-stable initial state is copied, not shared")
	}
	// Stepping from the shared snapshot leaves the profile's state as it was.
	before, _ := NewSnapshot(shop, "agg:1", shopVersions).MarshalJSON()
	if _, err := Step(shop, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true))); err != nil {
		t.Fatal(err)
	}
	if after, _ := NewSnapshot(shop, "agg:1", shopVersions).MarshalJSON(); !bytes.Equal(after, before) {
		t.Fatalf("a step from the shared snapshot changed the initial state: %s, was %s", after, before)
	}
	for _, initial := range []protocol.Object{
		nil,
		{},
		{"n": int64(1), "s": "x", "list": []any{"a", map[string]any{"k": true}}},
		{"inner": map[string]any(nil)},
		{"list": []any(nil)},
		{"obj": protocol.Object{"k": "v"}},
	} {
		d := sharedStateDomain{initial: initial}
		s := same(t, d)
		if initial != nil && copyStable(map[string]any(initial)) != (reflect.ValueOf(s.State).UnsafePointer() == reflect.ValueOf(initial).UnsafePointer()) {
			t.Fatalf("initial state %#v: shared is %v, copy-stable %v", initial, !copyStable(map[string]any(initial)), copyStable(map[string]any(initial)))
		}
	}
}
