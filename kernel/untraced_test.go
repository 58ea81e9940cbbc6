package kernel

import (
	"bytes"
	"reflect"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// withoutDigests is a transition with the two digests StepUntraced does
// not take, emptied; nil stays nil.
func withoutDigests(tr *Transition) *Transition {
	if tr == nil {
		return nil
	}
	c := *tr
	c.PriorSnapshotDigest, c.TransitionDigest = "", ""
	return &c
}

// StepUntraced answers as StepEncoded does, the two digests aside: the
// same rejection, or the same transition with an empty prior snapshot
// digest and transition digest, and the same next snapshot bytes; a
// second step from the untraced step's bytes answers as the second
// step from StepEncoded's. Over the observation domain, domains that
// break its invariants (which take the wire path) and the declarative
// shop domain, from valid and drawn snapshots and events, some mutated.
func TestStepUntracedIsStepEncoded(t *testing.T) {
	shop := loadShop(t)
	rapid.Check(t, func(t *rapid.T) {
		var d Domain = Observation{}
		var s Snapshot
		var event func(s Snapshot, lt int64, id string) protocol.AcceptedEvent
		switch rapid.IntRange(0, 3).Draw(t, "domain") {
		case 0, 1, 2:
			s = genSnapshot(t)
			if rapid.Bool().Draw(t, "validBase") {
				s = NewSnapshot(Observation{}, "agg:1", genEvent(t).Versions)
				s.Versions.Workflow, s.Versions.StateSchema, s.Versions.EventSchema = ObservationWorkflow, ObservationStateSchema, ObservationEventSchema
			}
			event = func(s Snapshot, lt int64, id string) protocol.AcceptedEvent {
				return drawObservationEvent(t, s, lt, id)
			}
			switch rapid.IntRange(0, 2).Draw(t, "observation") {
			case 1:
				d = misbehaving{mode: rapid.SampledFrom([]string{"extra-state", "bad-state", "twin-facts", "retract", "float-tuple"}).Draw(t, "mode")}
			case 2:
				d = kernelKeyed{}
			}
		default:
			d = shop
			s = NewSnapshot(shop, "shop:1", shopVersions)
			event = func(s Snapshot, lt int64, id string) protocol.AcceptedEvent {
				e := shopEvent(s, id, lt, "order.placed/1", order(rapid.SampledFrom([]string{"order:1", "order:2"}).Draw(t, "order"),
					rapid.Int64Range(-5, 500).Draw(t, "amount"), rapid.Bool().Draw(t, "notify")))
				if rapid.IntRange(0, 3).Draw(t, "mutate") == 0 {
					e.Payload[rapid.SampledFrom([]string{"amount", "extra", "expected_revision", "event_type"}).Draw(t, "member")] = genValue(t, 1, "mutation")
				}
				return e
			}
		}
		e := event(s, rapid.Int64Range(-1, 200).Draw(t, "lt"), rapid.SampledFrom([]string{"evt:1", "é"}).Draw(t, "id"))
		want, next, werr := StepEncoded(d, s, nil, e)
		got, nextU, gerr := StepUntraced(d, s, nil, e)
		if gb, wb := resultBytes(t, withoutDigests(got), gerr), resultBytes(t, withoutDigests(want), werr); !bytes.Equal(gb, wb) {
			t.Fatalf("untraced %s\nencoded %s", gb, wb)
		}
		if !bytes.Equal(nextU, next) {
			t.Fatalf("untraced next %s, encoded %s", nextU, next)
		}
		if got == nil {
			return
		}
		if got.PriorSnapshotDigest != "" || got.TransitionDigest != "" {
			t.Fatalf("untraced digests %q, %q", got.PriorSnapshotDigest, got.TransitionDigest)
		}
		if !reflect.DeepEqual(got, withoutDigests(want)) {
			t.Fatalf("untraced transition %#v\n%#v", got, want)
		}
		if next == nil {
			return
		}
		s2 := want.NextSnapshot
		e2 := event(s2, e.LogicalTime+1, "evt:2")
		want2, _, werr2 := StepEncoded(d, s2, next, e2)
		got2, _, gerr2 := StepUntraced(d, got.NextSnapshot, nextU, e2)
		if gb, wb := resultBytes(t, withoutDigests(got2), gerr2), resultBytes(t, withoutDigests(want2), werr2); !bytes.Equal(gb, wb) {
			t.Fatalf("second step, untraced %s\nencoded %s", gb, wb)
		}
	})
}
