package kernel

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// TestLoadedProfileVerdictIsFromScratch holds the profile verdict Load
// decides once to the one profileValid gives for the profile, over
// generated version labels (valid or not) in a declarative document, and
// a step of the loaded domain to a step of the same domain that decides it
// from scratch on every call.
func TestLoadedProfileVerdictIsFromScratch(tt *testing.T) {
	src, err := os.ReadFile("testdata/declarative/shop.json")
	if err != nil {
		tt.Fatal(err)
	}
	rapid.Check(tt, func(t *rapid.T) {
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			t.Fatal(err)
		}
		label := rapid.OneOf(rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:+/-]{0,20}`), rapid.String())
		for _, k := range []string{"workflow", "state_schema", "event_schema"} {
			if rapid.Bool().Draw(t, "change "+k) {
				doc[k] = label.Draw(t, k)
			}
		}
		b, _ := json.Marshal(doc)
		d, err := Load(b)
		if err != nil {
			return
		}
		if d.profile == nil {
			t.Fatal("Load kept no profile")
		}
		if d.profileOK != profileValid(d.Profile()) {
			t.Fatalf("Load decided %v, profileValid %v", d.profileOK, !d.profileOK)
		}
		scratch := *d
		scratch.profile, scratch.profileOK = nil, false
		s := NewSnapshot(d, "shop:1", shopVersions)
		ev := shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", rapid.Int64Range(0, 3).Draw(t, "amount"), true))
		got, gerr := Step(d, s, ev)
		want, werr := Step(&scratch, s, ev)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("steps differ: %v %v", gerr, werr)
		}
	})
}
