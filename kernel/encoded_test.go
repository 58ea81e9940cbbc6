package kernel

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// kernelKeyed is the observation domain whose evolved state also carries
// a member named as a kernel member, which the snapshot's wire form
// drops: the next snapshot's bytes must be written without it either way.
type kernelKeyed struct{ Observation }

func (k kernelKeyed) Evolve(s Snapshot, e Event) (Evolution, *Fault) {
	ev, f := k.Observation.Evolve(s, e)
	if f == nil {
		ev.State["revision"] = "shadowed"
	}
	return ev, f
}

// StepEncoded answers as Step does; the next snapshot's bytes it returns
// are its MarshalJSON; and stepping on with them answers as stepping on
// without them, over two steps of the observation domain and domains
// that break its invariants.
func TestStepEncodedIsStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t)
		if rapid.Bool().Draw(t, "validBase") {
			s = NewSnapshot(Observation{}, "agg:1", genEvent(t).Versions)
			s.Versions.Workflow, s.Versions.StateSchema, s.Versions.EventSchema = ObservationWorkflow, ObservationStateSchema, ObservationEventSchema
		}
		event := func(s Snapshot, lt int64, id string) protocol.AcceptedEvent {
			return drawObservationEvent(t, s, lt, id)
		}
		var d Domain = Observation{}
		switch rapid.IntRange(0, 2).Draw(t, "domain") {
		case 1:
			d = misbehaving{mode: rapid.SampledFrom([]string{"extra-state", "bad-state", "twin-facts", "retract", "float-tuple"}).Draw(t, "mode")}
		case 2:
			d = kernelKeyed{}
		}
		e := event(s, rapid.Int64Range(-1, 200).Draw(t, "lt"), rapid.SampledFrom([]string{"evt:1", "é"}).Draw(t, "id"))
		want, werr := Step(d, s, e)
		got, next, gerr := StepEncoded(d, s, nil, e)
		if gb, wb := resultBytes(t, got, gerr), resultBytes(t, want, werr); !bytes.Equal(gb, wb) {
			t.Fatalf("encoded %s\nstep %s", gb, wb)
		}
		// StepDigested answers as StepEncoded does, and a prior digest
		// handed without the prior's bytes is not used.
		gotD, nextD, nextDigest, errD := StepDigested(d, s, nil, "sha256:"+strings.Repeat("0", 64), e)
		if gb, wb := resultBytes(t, gotD, errD), resultBytes(t, want, werr); !bytes.Equal(gb, wb) || !bytes.Equal(nextD, next) {
			t.Fatalf("digested %s (next %s)\nstep %s (next %s)", gb, nextD, wb, next)
		}
		if (nextDigest == "") != (nextD == nil) || (nextD != nil && nextDigest != digest(nextD)) {
			t.Fatalf("next digest %q for next %s", nextDigest, nextD)
		}
		// A domain that hands the step a checked version envelope (the
		// snapshot's, the event's or another) changes nothing either.
		other := s.Versions
		other.Model = "other-model/2"
		if cv, ok := CheckVersions(rapid.SampledFrom([]protocol.VersionEnvelope{s.Versions, e.Versions, other}).Draw(t, "checked")); ok {
			gotC, nextC, errC := StepEncoded(withChecked{d, cv}, s, nil, e)
			if gb, wb := resultBytes(t, gotC, errC), resultBytes(t, want, werr); !bytes.Equal(gb, wb) || !bytes.Equal(nextC, next) {
				t.Fatalf("with checked versions, encoded %s (next %s)\nstep %s (next %s)", gb, nextC, wb, next)
			}
		}
		// A snapshot's own known bytes, handed over, change nothing.
		if sb, known, err := s.Encoded(); known {
			mj, merr := s.MarshalJSON()
			if err != nil || merr != nil || !bytes.Equal(sb, mj) {
				t.Fatalf("Encoded %s (%v), MarshalJSON %s (%v)", sb, err, mj, merr)
			}
			got0, next0, gerr0 := StepEncoded(d, s, sb, e)
			if gb, wb := resultBytes(t, got0, gerr0), resultBytes(t, want, werr); !bytes.Equal(gb, wb) {
				t.Fatalf("from known bytes, encoded %s\nstep %s", gb, wb)
			}
			if !bytes.Equal(next0, next) || !reflect.DeepEqual(got0, got) {
				t.Fatalf("from known bytes, next %s, want %s", next0, next)
			}
		}
		if got == nil {
			if next != nil {
				t.Fatal("bytes returned without a transition")
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("transition %#v\n%#v", got, want)
		}
		if next == nil {
			return
		}
		mj, err := got.NextSnapshot.MarshalJSON()
		if err != nil || !bytes.Equal(mj, next) {
			t.Fatalf("next snapshot bytes %s, MarshalJSON %s (%v)", next, mj, err)
		}
		s2 := got.NextSnapshot
		e2 := event(s2, e.LogicalTime+1, "evt:2")
		want2, werr2 := Step(d, s2, e2)
		got2, _, gerr2 := StepEncoded(d, s2, next, e2)
		if gb, wb := resultBytes(t, got2, gerr2), resultBytes(t, want2, werr2); !bytes.Equal(gb, wb) {
			t.Fatalf("second step, encoded %s\nstep %s", gb, wb)
		}
		if !reflect.DeepEqual(got2, want2) {
			t.Fatalf("second transition %#v\n%#v", got2, want2)
		}
		// Handed the digest the first step returned, the second step
		// answers the same.
		got3, _, _, gerr3 := StepDigested(d, s2, next, nextDigest, e2)
		if gb, wb := resultBytes(t, got3, gerr3), resultBytes(t, want2, werr2); !bytes.Equal(gb, wb) || !reflect.DeepEqual(got3, want2) {
			t.Fatalf("second step from the kept digest, encoded %s\nstep %s", gb, wb)
		}
	})
}

// withChecked is a domain that hands the step a checked version envelope.
type withChecked struct {
	Domain
	cv *CheckedVersions
}

func (w withChecked) CheckedVersions() *CheckedVersions { return w.cv }

// EncodedChecked writes what Encoded writes, and says the same, whether
// the checked envelope it is handed is the snapshot's, another, or none.
func TestEncodedCheckedIsEncoded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t)
		other := s.Versions
		other.Tool = "other-tool/2"
		var cv *CheckedVersions
		switch rapid.IntRange(0, 2).Draw(t, "checked") {
		case 0:
			cv, _ = CheckVersions(s.Versions)
		case 1:
			cv, _ = CheckVersions(other)
		}
		want, wantKnown, werr := s.Encoded()
		got, gotKnown, gerr := s.EncodedChecked(cv)
		if !bytes.Equal(got, want) || gotKnown != wantKnown || (gerr == nil) != (werr == nil) {
			t.Fatalf("checked %s (%v, %v)\nencoded %s (%v, %v)", got, gotKnown, gerr, want, wantKnown, werr)
		}
	})
}

// drawObservationEvent draws an observation event for s at logical time
// lt: a drawn, never empty observation, completing or not, and one time
// in four a member of its payload replaced by a drawn value.
func drawObservationEvent(t *rapid.T, s Snapshot, lt int64, id string) protocol.AcceptedEvent {
	obs := genObject(t, "obs")
	if len(obs) == 0 {
		obs["n"] = int64(1)
	}
	e := protocol.AcceptedEvent{
		Kind: protocol.KindAcceptedEvent, EventID: id,
		Payload: protocol.Object{"event_type": ObservationEventType, "aggregate_id": s.AggregateID, "expected_revision": s.Revision,
			"observation": obs, "mark_complete": rapid.Bool().Draw(t, "close"), "effect_request": nil},
		OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: "2026-01-01T00:00:00Z", LogicalTime: lt,
		CorrelationID: "run:1", IdempotencyKey: "k:" + id, Versions: s.Versions,
	}
	if rapid.IntRange(0, 3).Draw(t, "mutate") == 0 {
		e.Payload[rapid.SampledFrom([]string{"observation", "extra", "expected_revision", "event_type"}).Draw(t, "member")] = genValue(t, 1, "mutation")
	}
	return e
}
