package workflow

import (
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/protocol"
)

// TestStampPayloadIsTheCopy holds stampPayload to the payload as it was
// built before: the stamps in a map of their own, every member copied over
// them.
func TestStampPayloadIsTheCopy(t *testing.T) {
	names := []string{"event_type", "aggregate_id", "expected_revision", "amount", "payee", "refund_id", "intent_id"}
	rapid.Check(t, func(rt *rapid.T) {
		var members map[string]any
		if rapid.Bool().Draw(rt, "some") {
			members = map[string]any{}
			for _, k := range rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(rt, "names") {
				members[k] = rapid.OneOf(rapid.Just[any](nil), rapid.Map(rapid.String(), func(s string) any { return s }),
					rapid.Map(rapid.Int64(), func(n int64) any { return n })).Draw(rt, k)
			}
		}
		evType, agg, rev := rapid.String().Draw(rt, "type"), rapid.String().Draw(rt, "aggregate"), rapid.Int64().Draw(rt, "revision")
		want := protocol.Object{"event_type": evType, "aggregate_id": agg, "expected_revision": rev}
		for k, v := range members {
			want[k] = v
		}
		if got := stampPayload(members, evType, any(agg), rev); !reflect.DeepEqual(got, want) {
			rt.Fatalf("stampPayload %v, the copy %v", got, want)
		}
	})
}

// TestAggregateValueOf holds state.aggregateValueOf to the id boxed
// afresh, for drawn sequences of ids (repeated and changed), and shows
// that a repeated id is not boxed again.
func TestAggregateValueOf(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		st := new(state)
		ids := rapid.SliceOf(rapid.SampledFrom([]string{"", "run-1", "run-2", "a longer run id:7"})).Draw(rt, "ids")
		for _, id := range ids {
			if got := st.aggregateValueOf(id); got != any(id) {
				rt.Fatalf("aggregateValueOf(%q) = %#v", id, got)
			}
			if kept := st.aggregateValue; kept != any(id) {
				rt.Fatalf("aggregateValueOf(%q) kept %#v", id, kept)
			}
		}
	})
	st := new(state)
	id := strings.Repeat("run-", 3)
	st.aggregateValueOf(id)
	if n := testing.AllocsPerRun(100, func() { st.aggregateValueOf(id) }); n != 0 {
		t.Fatalf("a repeated id allocated %v times", n)
	}
}
