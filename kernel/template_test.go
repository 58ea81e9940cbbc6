package kernel

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// The declarative domain compiles its templates, references and guards
// once, at Load. These tests hold the compiled forms to the interpreter
// they replaced (kept below as the reference), value and fault alike.

var templateRefs = []string{"$event_id", "$aggregate_id", "$correlation_id", "$event_type", "$logical_time",
	"$payload.a", "$payload.a.b", "$payload.b/c", "$payload.m~n.x", "$payload.", "$payload", "$state.orders",
	"$state.x.y", "$event_id.x", "$other.a", "$$literal", "plain"}

func genTemplate(t *rapid.T, depth int, label string) any {
	switch n := rapid.IntRange(0, 7).Draw(t, label); {
	case n <= 2:
		return rapid.SampledFrom(templateRefs).Draw(t, label+"ref")
	case n == 3:
		return rapid.SampledFrom([]any{nil, true, int64(4), "x"}).Draw(t, label+"lit")
	case n <= 5 && depth < 3:
		m := map[string]any{}
		for i := rapid.IntRange(0, 3).Draw(t, label+"n"); i > 0; i-- {
			m[rapid.SampledFrom([]string{"a", "b", "z", "k/1"}).Draw(t, label+"k")] = genTemplate(t, depth+1, label+"m")
		}
		return m
	case depth < 3:
		var a []any
		for i := rapid.IntRange(0, 3).Draw(t, label+"n"); i > 0; i-- {
			a = append(a, genTemplate(t, depth+1, label+"a"))
		}
		return a
	}
	return "$payload.a"
}

func genEnv(t *rapid.T) env {
	payload := protocol.Object{"a": genValue(t, 1, "pa"), "b/c": genValue(t, 1, "pb")}
	if rapid.Bool().Draw(t, "nested") {
		payload["a"] = map[string]any{"b": genValue(t, 2, "pab")}
	}
	payload["m~n"] = map[string]any{"x": rapid.Bool().Draw(t, "flag")}
	return env{
		s: Snapshot{AggregateID: "agg:1", State: protocol.Object{"state": map[string]any{"orders": genValue(t, 2, "orders"),
			"x": map[string]any{"y": rapid.Bool().Draw(t, "y")}}}},
		e: Event{ID: "evt:1", CorrelationID: "run:1", Type: "t/1", LogicalTime: 3, Payload: payload},
	}
}

func TestCompiledTemplatesMatchInterpreter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := genEnv(t)
		tmpl := genTemplate(t, 0, "t")
		got, gf := x.render(compileTemplate(tmpl))
		want, wf := x.renderValue(tmpl)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gf, wf) {
			t.Fatalf("compiled %#v %#v\ninterpreted %#v %#v", got, gf, want, wf)
		}
		ref := rapid.SampledFrom(templateRefs).Draw(t, "cond")
		var c any = ref
		if rapid.IntRange(0, 3).Draw(t, "litCond") == 0 {
			c = rapid.Bool().Draw(t, "b")
		}
		if strings.HasPrefix(ref, "$") && !strings.HasPrefix(ref, "$$") || c != any(ref) {
			gb, gf := x.condition(compileCondition(c), "/p")
			wb, wf := x.conditionValue(c, "/p")
			if gb != wb || !reflect.DeepEqual(gf, wf) {
				t.Fatalf("condition %v: compiled %v %#v, interpreted %v %#v", c, gb, gf, wb, wf)
			}
		}
	})
}

func TestCompiledGuardsMatchInterpreter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := genEnv(t)
		r := eventRule{payload: map[string]string{}, state: map[string]update{}, close: false}
		for i := rapid.IntRange(0, 3).Draw(t, "n"); i > 0; i-- {
			ref := rapid.SampledFrom(templateRefs[:14]).Draw(t, "ref")
			equals := genValue(t, 0, "equals")
			if rapid.Bool().Draw(t, "same") {
				if v, f := x.resolveText(ref); f == nil {
					equals = v
				}
			}
			r.rejectIf = append(r.rejectIf, guard{ref: ref, equals: equals, reason: "r"})
		}
		r.compile()
		d := &Declarative{events: map[string]eventRule{"t/1": r}}
		got, want := d.guards(x), d.guardsValue(x)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("compiled %#v, interpreted %#v", got, want)
		}
	})
}

// The interpreter the compiled forms replaced.

func (x env) resolveText(ref string) (any, *Fault) {
	switch ref {
	case "$event_id":
		return x.e.ID, nil
	case "$aggregate_id":
		return x.s.AggregateID, nil
	case "$correlation_id":
		return x.e.CorrelationID, nil
	case "$event_type":
		return x.e.Type, nil
	case "$logical_time":
		return x.e.LogicalTime, nil
	}
	root, rest, _ := strings.Cut(ref, ".")
	var cur any
	var base string
	switch root {
	case "$payload":
		cur, base = map[string]any(x.e.Payload), "/accepted_event/payload"
	case "$state":
		cur, base = x.s.State["state"], "/snapshot/state"
	}
	path := base
	for _, tok := range strings.Split(rest, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, &Fault{Code: CodeDomainRejected, Path: path, Context: map[string]any{"missing": ref}}
		}
		path += "/" + cjson.EscapePointer(tok)
		if cur, ok = m[tok]; !ok {
			return nil, &Fault{Code: CodeDomainRejected, Path: path, Context: map[string]any{"missing": ref}}
		}
	}
	return deepCopy(cur), nil
}

func (x env) renderValue(tmpl any) (any, *Fault) {
	switch t := tmpl.(type) {
	case string:
		if strings.HasPrefix(t, "$$") {
			return t[1:], nil
		}
		if strings.HasPrefix(t, "$") {
			return x.resolveText(t)
		}
		return t, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range sortedKeys(t) {
			r, f := x.renderValue(t[k])
			if f != nil {
				return nil, f
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			r, f := x.renderValue(v)
			if f != nil {
				return nil, f
			}
			out[i] = r
		}
		return out, nil
	}
	return tmpl, nil
}

func (x env) conditionValue(c any, path string) (bool, *Fault) {
	if b, ok := c.(bool); ok {
		return b, nil
	}
	v, f := x.resolveText(c.(string))
	if f != nil {
		return false, f
	}
	b, ok := v.(bool)
	if !ok {
		return false, &Fault{Code: CodeDomainRejected, Path: path, Context: map[string]any{"not_boolean": c.(string)}}
	}
	return b, nil
}

func (d *Declarative) guardsValue(x env) *Fault {
	for _, g := range d.events[x.e.Type].rejectIf {
		v, f := x.resolveText(g.ref)
		if f != nil {
			return f
		}
		a, err1 := cjson.Encode(v)
		b, err2 := cjson.Encode(g.equals)
		if err1 == nil && err2 == nil && string(a) == string(b) {
			return &Fault{Code: CodeDomainRejected, Path: "/accepted_event/payload", Context: map[string]any{"reason": g.reason}}
		}
	}
	return nil
}
