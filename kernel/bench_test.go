package kernel

import (
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/cputime"
	"flrh.dev/flrh/protocol"
)

// reportCPU reports the process CPU per op since cpu0 as cpu-ns/op: on the
// shared machine these run on, wall time swings with other load far more.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkStepJSON(b *testing.B) {
	for _, ref := range []string{"observe-no-effect", "observe-with-effect"} {
		s, e := loadInput(b, ref)
		b.Run(ref, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cputime.Used())
			for b.Loop() {
				if _, err := StepJSON(Observation{}, s, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStepValue(b *testing.B) {
	s, e := loadInput(b, "observe-with-effect")
	sv, _ := cjson.Decode(s)
	ev, _ := cjson.Decode(e)
	b.ReportAllocs()
	defer reportCPU(b, cputime.Used())
	for b.Loop() {
		if _, err := StepValue(Observation{}, sv, ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStepRejection(b *testing.B) {
	s, e := loadInput(b, "observe-no-effect", rep("/accepted_event/payload/expected_revision", `9`))
	b.ReportAllocs()
	defer reportCPU(b, cputime.Used())
	for b.Loop() {
		if _, err := StepJSON(Observation{}, s, e); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkDeclarativeStep(b *testing.B) {
	d := loadShop(b)
	s := NewSnapshot(d, "shop:1", shopVersions)
	ev := shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true))
	b.ReportAllocs()
	defer reportCPU(b, cputime.Used())
	for b.Loop() {
		if _, err := Step(d, s, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay100 folds 100 accepted observation events, the shape of
// a replay from the event log.
func BenchmarkReplay100(b *testing.B) {
	versions := protocol.VersionEnvelope{
		Workflow: ObservationWorkflow, StateSchema: ObservationStateSchema, EventSchema: ObservationEventSchema,
		GraphSchema: "graph/0", RuleSet: "rules/0", Dataflow: "dataflow/0", Canonicalization: Canonicalization,
		Tool: "none/0", Model: "none/0", Oracle: "o/1", Gate: "g/1", Resolver: "r/0", CompositionProfile: "c/0",
	}
	b.ReportAllocs()
	defer reportCPU(b, cputime.Used())
	for b.Loop() {
		s := NewSnapshot(Observation{}, "agg:1", versions)
		for i := int64(0); i < 100; i++ {
			ev := protocol.AcceptedEvent{
				Kind: protocol.KindAcceptedEvent, EventID: "evt:" + string(rune('a'+i%26)) + ":" + string(rune('0'+i/26)),
				Payload: protocol.Object{"event_type": ObservationEventType, "aggregate_id": "agg:1", "expected_revision": s.Revision,
					"observation": map[string]any{"n": i}, "mark_complete": false, "effect_request": nil},
				OccurredAt: "2026-01-01T00:00:00Z", ReceivedAt: "2026-01-01T00:00:00Z", LogicalTime: i,
				CorrelationID: "run:1", IdempotencyKey: "k", Versions: versions,
			}
			tr, err := Step(Observation{}, s, ev)
			if err != nil {
				b.Fatal(err)
			}
			s = tr.NextSnapshot
		}
	}
}

// BenchmarkParseSnapshot reads a checkpointed snapshot under its domain, as
// a store or a workflow does before each step.
func BenchmarkParseSnapshot(b *testing.B) {
	b.Run("observation", func(b *testing.B) {
		s, e := loadInput(b, "observe-with-effect")
		tr, err := StepJSON(Observation{}, s, e)
		if err != nil {
			b.Fatal(err)
		}
		text, _ := tr.NextSnapshot.MarshalJSON()
		b.ReportAllocs()
		defer reportCPU(b, cputime.Used())
		for b.Loop() {
			if _, err := ParseSnapshot(Observation{}, text); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("declarative", func(b *testing.B) {
		d := loadShop(b)
		s := NewSnapshot(d, "shop:1", shopVersions)
		tr, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true)))
		if err != nil {
			b.Fatal(err)
		}
		text, _ := tr.NextSnapshot.MarshalJSON()
		b.ReportAllocs()
		defer reportCPU(b, cputime.Used())
		for b.Loop() {
			if _, err := ParseSnapshot(d, text); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSnapshotMarshal encodes a next snapshot, as a workflow does to
// checkpoint it after each step.
func BenchmarkSnapshotMarshal(b *testing.B) {
	d := loadShop(b)
	s := NewSnapshot(d, "shop:1", shopVersions)
	tr, err := Step(d, s, shopEvent(s, "evt:1", 1, "order.placed/1", order("order:1", 30, true)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b, cputime.Used())
	for b.Loop() {
		if _, err := tr.NextSnapshot.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
