package kernel

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/protocol"
)

// TestPreconditionsAreTheRenderedArray holds the preconditions read
// element by element to the array rendered and read as strings: the same
// ids, the same fault (a reference's that is missing before an element's
// that is not a string), over literals, references of every kind, present,
// missing or of another type, and nested templates.
func TestPreconditionsAreTheRenderedArray(t *testing.T) {
	value := rapid.OneOf(
		rapid.Map(rapid.StringMatching(`[a-z:-]{1,12}`), func(s string) any { return s }),
		rapid.Map(rapid.Int64Range(-3, 300), func(n int64) any { return n }),
		rapid.Just[any](true), rapid.Just[any](nil),
		rapid.Just[any](map[string]any{"c": "inner"}), rapid.Just[any]([]any{"x"}),
	)
	elem := rapid.OneOf(
		rapid.Map(rapid.StringMatching(`[a-z:-]{1,12}`), func(s string) any { return s }),
		rapid.SampledFrom([]any{"$$lit", "$payload.a", "$payload.b", "$payload.b.c", "$payload.zz", "$state.n", "$state.m.c",
			"$event_id", "$aggregate_id", "$correlation_id", "$event_type", "$logical_time", int64(4), true, nil,
			map[string]any{"k": "$payload.a"}, map[string]any{"k": "$payload.zz"}, []any{"$payload.b"}, []any{}}),
	)
	rapid.Check(t, func(rt *rapid.T) {
		payload := protocol.Object{}
		state := map[string]any{}
		for _, k := range []string{"a", "b", "zz"} {
			if rapid.Bool().Draw(rt, "has payload "+k) {
				payload[k] = value.Draw(rt, "payload "+k)
			}
		}
		for _, k := range []string{"n", "m"} {
			if rapid.Bool().Draw(rt, "has state "+k) {
				state[k] = value.Draw(rt, "state "+k)
			}
		}
		x := env{
			s: Snapshot{AggregateID: "agg-1", State: protocol.Object{"state": state}},
			e: Event{ID: "event:1", LogicalTime: 7, CorrelationID: "run-1", Type: "t/1", Payload: payload},
		}
		tmpl := compileTemplate(rapid.SliceOfN(elem, 0, 5).Draw(rt, "preconditions"))
		got, gotF := x.preconditions(tmpl)
		want, wantF := x.preconditionsRendered(tmpl)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotF, wantF) {
			rt.Fatalf("preconditions (%#v, %#v), rendered (%#v, %#v)", got, gotF, want, wantF)
		}
	})
}
