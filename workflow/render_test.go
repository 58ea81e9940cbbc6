package workflow

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// renderBySplit is render as it was, the reference split into a list of
// its parts.
func renderBySplit(tmpl any, a action) any {
	s, ok := tmpl.(string)
	if !ok {
		return tmpl
	}
	ref, isRef := reference(s)
	if !isRef {
		return strings.TrimPrefix(s, "$")
	}
	parts := strings.Split(ref, ".")
	var cur any = a.Action
	if parts[0] == "destination" {
		cur = a.Destination
	}
	for _, p := range parts[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[p]; !ok {
			return nil
		}
	}
	switch cur.(type) {
	case string, int64:
		return cur
	}
	return nil
}

// TestRenderIsRenderBySplit holds render, which reads a reference's parts
// in place, to the split one over drawn templates and objects, empty parts
// and missing members included.
func TestRenderIsRenderBySplit(t *testing.T) {
	names := []string{"", "a", "b", "amount"}
	rapid.Check(t, func(rt *rapid.T) {
		var obj func(depth int) map[string]any
		obj = func(depth int) map[string]any {
			m := map[string]any{}
			for _, k := range rapid.SliceOfN(rapid.SampledFrom(names), 1, 4).Draw(rt, "keys") {
				switch c := rapid.IntRange(0, 6).Draw(rt, "kind"); {
				case c >= 3 && depth < 2:
					m[k] = obj(depth + 1)
				case c == 1:
					m[k] = rapid.Int64().Draw(rt, "n")
				case c == 2:
					m[k] = rapid.SampledFrom(names).Draw(rt, "s")
				case c == 3:
					m[k] = true
				case c == 0:
					m[k] = nil
				default:
					m[k] = rapid.SampledFrom(names).Draw(rt, "leaf")
				}
			}
			return m
		}
		a := action{Action: obj(0), Destination: obj(0)}
		if rapid.Bool().Draw(rt, "nilDestination") {
			a.Destination = nil
		}
		var tmpl any = rapid.SampledFrom([]string{"$", "$$", "$$x", "x", "$action", "$destination"}).Draw(rt, "head")
		if s := tmpl.(string); s == "$action" || s == "$destination" || s == "$" {
			// Mostly a path through members the object has, to reach
			// the values below it.
			var cur any = a.Action
			if s == "$destination" {
				cur = a.Destination
			}
			for range rapid.IntRange(0, 4).Draw(rt, "depth") {
				p := rapid.SampledFrom(names).Draw(rt, "part")
				if m, ok := cur.(map[string]any); ok && len(m) > 0 && rapid.IntRange(0, 3).Draw(rt, "follow") > 0 {
					p = rapid.SampledFrom(slices.Sorted(maps.Keys(m))).Draw(rt, "member")
				}
				s += "." + p
				m, _ := cur.(map[string]any)
				cur = m[p]
			}
			tmpl = s
		}
		if rapid.IntRange(0, 9).Draw(rt, "literal") == 0 {
			tmpl = rapid.Int64().Draw(rt, "lit")
		}
		if got, want := render(tmpl, a), renderBySplit(tmpl, a); !reflect.DeepEqual(got, want) {
			rt.Fatalf("render(%v) %#v, by split %#v", tmpl, got, want)
		}
	})
}
