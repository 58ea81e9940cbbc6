package runner

import (
	"testing"

	"flrh.dev/flrh/store"
)

// exitBefore counts only what the workflow would take as a person's EXIT,
// handed in before the grant and not yet read.
func TestExitBefore(t *testing.T) {
	exit := store.Inbound{ID: "x", Kind: KindControl, ActorRole: "operator", Actor: "dana", Capability: "mrp.exit", Body: []byte(`{"reason":"no","trigger":"EXIT"}`), Seq: 4}
	cases := []struct {
		name string
		edit func(*store.Inbound)
		seq  int64
		want bool
	}{
		{"a person's EXIT before the grant", func(*store.Inbound) {}, 5, true},
		{"handed in after the grant", func(*store.Inbound) {}, 4, false},
		{"already read", func(in *store.Inbound) { in.Consumed = true }, 5, false},
		{"not a person", func(in *store.Inbound) { in.ActorRole = "model" }, 5, false},
		{"another capability", func(in *store.Inbound) { in.Capability = "mrp.pause" }, 5, false},
		{"another trigger", func(in *store.Inbound) { in.Body = []byte(`{"trigger":"PAUSE"}`) }, 5, false},
		{"not a control input", func(in *store.Inbound) { in.Kind = KindInput }, 5, false},
		{"a malformed body", func(in *store.Inbound) { in.Body = []byte(`{"trigger":`) }, 5, false},
	}
	for _, c := range cases {
		in := exit
		c.edit(&in)
		got, ok := exitBefore([]store.Inbound{{ID: "i", Kind: KindInput, Seq: 1}, in}, c.seq)
		if ok != c.want || ok && got.ID != "x" {
			t.Errorf("%s: found %v (%s), want %v", c.name, ok, got.ID, c.want)
		}
	}
}
