package frontier

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestDeclaresSourceIsSourceIDs holds DeclaresSource to a search of the
// list SourceIDs returns, for declared ids, near misses and other ids.
func TestDeclaresSourceIsSourceIDs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfNDistinct(rapid.StringMatching(`source:[a-c]{1,3}`), 1, 5, rapid.ID[string]).Draw(t, "ids")
		p, rej := NewProfile("dataflow/0", ids, wideLimits)
		if rej != nil {
			t.Skip(rej)
		}
		probe := rapid.OneOf(rapid.SampledFrom(ids), rapid.StringMatching(`source:[a-d]{0,4}`)).Draw(t, "probe")
		if got, want := p.DeclaresSource(probe), slices.Contains(p.SourceIDs(), probe); got != want {
			t.Fatalf("DeclaresSource(%q) = %v, SourceIDs %v", probe, got, p.SourceIDs())
		}
	})
}
