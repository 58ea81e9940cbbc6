package kernel

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestRenderSharedIsRender: renderShared gives what render gives, value
// and fault alike; a template made only of literals gives the one value
// rendered at Load, every time, and any other gives a value of its own.
func TestRenderSharedIsRender(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := genEnv(t)
		tmpl := compileTemplate(genTemplate(t, 0, "t"))
		got, gf := x.renderShared(tmpl)
		want, wf := x.render(tmpl)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gf, wf) {
			t.Fatalf("shared %#v %#v\nrendered %#v %#v", got, gf, want, wf)
		}
		again, _ := x.renderShared(tmpl)
		container := tmpl.shape == 'o' || tmpl.shape == 'a'
		if same := container && sameContainer(got, again); same != (container && literalOnly(tmpl)) {
			t.Fatalf("literal only %v, shared %v: %#v", literalOnly(tmpl), same, tmpl)
		}
	})
}

// sameContainer reports whether a and b are the same map or slice (not
// merely equal ones): maps or slices of either named type, at one address.
func sameContainer(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() || va.Kind() != vb.Kind() || va.Kind() != reflect.Map && va.Kind() != reflect.Slice {
		return false
	}
	return va.UnsafePointer() == vb.UnsafePointer() && va.Len() == vb.Len()
}

// TestEmitSharedIsEmit: the shared emission equals Emit's, and its
// destination made only of literals is one object from one emission to
// the next.
func TestEmitSharedIsEmit(t *testing.T) {
	d := loadShop(t)
	s := NewSnapshot(d, "shop:1", shopVersions)
	var first map[string]any
	for _, e := range []Event{
		{ID: "evt:1", Type: "order.placed/1", Payload: order("order:1", 30, true)},
		{ID: "evt:2", Type: "order.placed/1", Payload: order("order:2", 30, false)},
		{ID: "evt:3", Type: "shop.closed/1", Payload: map[string]any{}},
		{ID: "evt:4", Type: "order.placed/1", Payload: map[string]any{"notify": true}},
		{ID: "evt:5", Type: "order.placed/1", Payload: order("order:5", 40, true)},
	} {
		em, f := d.EmitShared(s, e)
		want, wf := d.Emit(s, e)
		if !reflect.DeepEqual(em, want) || !reflect.DeepEqual(f, wf) {
			t.Fatalf("%s: %#v %v, emitted %#v %v", e.ID, em, f, want, wf)
		}
		for _, p := range em.Proposals {
			if first == nil {
				first = p.Destination
			} else if !sameContainer(first, p.Destination) {
				t.Fatalf("%s: the literal destination was rendered again", e.ID)
			}
		}
	}
	if first == nil {
		t.Fatal("no proposal emitted")
	}
}
