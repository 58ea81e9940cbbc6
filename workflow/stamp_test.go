package workflow

import (
	"reflect"
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
		if got := stampPayload(members, evType, agg, rev); !reflect.DeepEqual(got, want) {
			rt.Fatalf("stampPayload %v, the copy %v", got, want)
		}
	})
}
