package control

import "testing"

func BenchmarkLoad(b *testing.B) {
	b.SetBytes(int64(len(defaultTable)))
	for b.Loop() {
		if _, err := Load(defaultTable); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadContract(b *testing.B) {
	m := Default()
	for b.Loop() {
		if _, err := LoadContract(defaultContract, m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepAccepted measures one accepted guarded transition.
func BenchmarkStepAccepted(b *testing.B) {
	m := Default()
	c := Configuration{Table: m.Digest(), State: "STABILIZE", Pending: []string{}, Seq: 2, Context: map[string]bool{"frontier_passed": true}}
	e := ev("EPOCH_STABLE", "b:1")
	for b.Loop() {
		if r := m.Step(c, e); !r.Accepted() {
			b.Fatal(r.Rejection)
		}
	}
}

// BenchmarkStepRejected measures the reject-and-audit path.
func BenchmarkStepRejected(b *testing.B) {
	m := Default()
	c := m.Initial()
	e := Event{Type: "START", ActorRole: "model", Capability: "control.start", EventID: "b:1"}
	for b.Loop() {
		if r := m.Step(c, e); r.Accepted() {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkRunCase runs the 13-step approval-and-effect trace.
func BenchmarkRunCase(b *testing.B) {
	m := Default()
	var steps []TraceStep
	for _, s := range transcribed["hrc"] {
		steps = append(steps, TraceStep{Event: s.event, Guards: s.guards, WantState: s.state, WantEffects: s.effects})
	}
	tc := TraceCase{ID: "hrc", Steps: steps}
	for b.Loop() {
		if r, err := m.RunCase(tc); err != nil || !r.Passed {
			b.Fatal(r, err)
		}
	}
}

func BenchmarkIdempotencyKey(b *testing.B) {
	k := KeyInput{RunID: "run-7", TransitionID: "dispatch-after-commit", EffectSequence: 3, ActionDigest: "sha256:" + "abababababababababababababababababababababababababababababababab", AdapterVersion: "http/1.0.0"}
	for b.Loop() {
		if _, err := IdempotencyKey(k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBudgetCharge(b *testing.B) {
	bu := DefaultContract().Budgets
	used := Usage{Steps: 40, Tokens: 50000}
	d := Usage{Steps: 1, ToolCalls: 1, Tokens: 900, CostMicros: 1200}
	for b.Loop() {
		if _, _, err := bu.Charge(used, d); err != nil {
			b.Fatal(err)
		}
	}
}
