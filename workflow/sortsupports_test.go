package workflow

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sortSupports orders a list as slices.SortFunc by id does, whatever is
// known of its leading supports' order: a sorted list with insertions
// after it (none, the tick's one, several), ids met twice among them or
// across them, and lists not known to be in order at all.
func TestSortSupportsIsSortFunc(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		// Few distinct ids, so that some repeat; a support is made from its
		// id alone, as F names a support by its content.
		id := rapid.Custom(func(t *rapid.T) string {
			return fmt.Sprintf("f:%02x", rapid.IntRange(0, 40).Draw(t, "id"))
		})
		mk := func(id string) support {
			return support{ID: id, Predicate: "p", Args: []any{id}, Provenance: "prov:" + id}
		}
		prefix := rapid.SliceOfN(id, 0, 30).Draw(rt, "prefix")
		known := rapid.Bool().Draw(rt, "known")
		if known {
			slices.Sort(prefix)
		}
		added := rapid.SliceOfN(id, 0, 3).Draw(rt, "added")
		var got []support
		for _, s := range append(prefix, added...) {
			got = append(got, mk(s))
		}
		want := slices.Clone(got)
		ordered := 0
		if known {
			ordered = len(prefix)
		}
		sortSupports(got, ordered)
		slices.SortFunc(want, func(a, b support) int { return strings.Compare(a.ID, b.ID) })
		if !reflect.DeepEqual(got, want) {
			rt.Fatalf("sortSupports(%d known) = %v, SortFunc %v", ordered, ids(got), ids(want))
		}
	})
}

func ids(s []support) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i].ID
	}
	return out
}

// BenchmarkSortSupports orders a run's twenty supports after its tick's
// one insertion, as sortSupports does and as SortFunc did.
func BenchmarkSortSupports(b *testing.B) {
	base := make([]support, 20)
	for i := range base {
		base[i] = support{ID: fmt.Sprintf("f:%064x", i*7919), Predicate: "refund_requested", Provenance: "prov"}
	}
	slices.SortFunc(base, func(a, b support) int { return strings.Compare(a.ID, b.ID) })
	added := support{ID: fmt.Sprintf("f:%064x", 31337), Predicate: "refund_settled", Provenance: "prov"}
	list := make([]support, 0, len(base)+1)
	for _, c := range []struct {
		name string
		sort func([]support)
	}{
		{"sortSupports", func(s []support) { sortSupports(s, len(s)-1) }},
		{"SortFunc", func(s []support) { slices.SortFunc(s, func(a, b support) int { return strings.Compare(a.ID, b.ID) }) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				list = append(append(list[:0], base...), added)
				c.sort(list)
			}
		})
	}
}
