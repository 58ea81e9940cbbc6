// Package frontier_test benchmarks the R kernel (package frontier) and the
// L→R seam (package seam) at the sizes the project targets: batches of
// 1,000 value deltas over 8 sources, and 1,024 queries of 64 requirements.
package frontier_test

import (
	"crypto/sha256"
	"fmt"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/seam"
)

const (
	sources       = 8
	deltasPerStep = 1000
	epochsPerRun  = 32 // pre-built epochs; the state restarts after them
)

func sourceIDs() []string {
	var out []string
	for i := 0; i < sources; i++ {
		out = append(out, fmt.Sprintf("source:%d", i))
	}
	return out
}

func profile(b *testing.B) frontier.Profile {
	p, rej := frontier.NewProfile("dataflow/0", sourceIDs(), frontier.Limits{
		MaxDeltasPerCommand: 10000, MaxActiveValues: 10000, MaxOpenEpochs: 1024,
		MaxReadyBatches: 1024, MaxDemandPerCommand: 1024, MaxOutstandingDemand: 10000,
	})
	if rej != nil {
		b.Fatal(rej)
	}
	return p
}

func proposal(i int) protocol.EffectProposal {
	return protocol.EffectProposal{
		ProposalID: fmt.Sprintf("proposal:%d", i), EffectType: "artifact.publish", CauseID: fmt.Sprintf("event:%d", i),
		CorrelationID: "run:1", ProposalDedupKey: fmt.Sprintf("dedup:%d", i), GoalID: "goal:1", ObligationID: "obligation:1",
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		DeclaredRiskHint:  "reversible", Preconditions: []string{"constraint:artifact-ready", "frontier:1"},
		Versions: protocol.VersionEnvelope{Workflow: "flrh-workflow/0.1", StateSchema: "flrh-f-state/1",
			EventSchema: "flrh-f-event/1", GraphSchema: "graph/0", RuleSet: "rules/0", Dataflow: "dataflow/0",
			Canonicalization: "flrh-cjson/1", Tool: "publisher/1", Model: "none/0", Oracle: "m1-oracle/1",
			Gate: "m1-gate/1", Resolver: "resolver/0", CompositionProfile: "composition/0"},
	}
}

// values builds n/2 proposals and their verdicts.
func values(b *testing.B, n int) []frontier.Value {
	var out []frontier.Value
	for i := 0; i < n/2; i++ {
		p, rej := frontier.NewProposalValue(proposal(i))
		if rej != nil {
			b.Fatal(rej)
		}
		v, rej := frontier.NewVerdictValue(protocol.EligibilityVerdict{
			VerdictID: fmt.Sprintf("verdict:%d", i), ProposalID: fmt.Sprintf("proposal:%d", i),
			Status: []string{"eligible", "ineligible", "conflicted"}[i%3], CauseID: fmt.Sprintf("cause:%d", i),
			SupportDerivationIDs: []string{"derivation:a", "derivation:b"}, RuleSetVersion: "rules/0",
		})
		if rej != nil {
			b.Fatal(rej)
		}
		out = append(out, p, v)
	}
	return out
}

// epochDeltas builds the 1,000 deltas of one epoch, spread over the sources.
func epochDeltas(b *testing.B, vals []frontier.Value, t int64) []frontier.ValueDelta {
	ids := sourceIDs()
	out := make([]frontier.ValueDelta, len(vals))
	for i, v := range vals {
		d, rej := frontier.NewValueDelta(ids[i%sources], t, 1, "dataflow/0", v)
		if rej != nil {
			b.Fatal(rej)
		}
		out[i] = d
	}
	return out
}

// cycle runs one epoch through R: apply its deltas, advance every source
// past it (stabilizing it), and grant one batch of demand (publishing it).
func cycle(b *testing.B, p frontier.Profile, s *frontier.State, ds []frontier.ValueDelta, t int64) *frontier.State {
	tr, rej := frontier.Step(s, p, frontier.ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds})
	if rej != nil {
		b.Fatal(rej)
	}
	s = tr.Next
	for _, src := range sourceIDs() {
		tr, rej = frontier.Step(s, p, frontier.AdvanceFrontier{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: t + 1})
		if rej != nil {
			b.Fatal(rej)
		}
		s = tr.Next
	}
	tr, rej = frontier.Step(s, p, frontier.GrantDemand{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Batches: 1})
	if rej != nil || len(tr.Published) != 1 {
		b.Fatalf("grant: %v, published %d", rej, len(tr.Published))
	}
	return tr.Next
}

// cpuClock is the process's user and system CPU time. On a shared machine
// it measures the work an operation costs (garbage collection included)
// more steadily than wall time, which also counts waiting for a core.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds CPU time per operation and deltas per CPU-second.
func reportCPU(b *testing.B, cpu time.Duration, deltasPerOp int) {
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if deltasPerOp > 0 && cpu > 0 {
		b.ReportMetric(float64(b.N*deltasPerOp)/cpu.Seconds(), "deltas/cpu-s")
	}
}

// BenchmarkStepCycle1000x8 measures the full life of 1,000 sealed deltas:
// apply, stabilize across 8 source frontiers, publish. The reported
// deltas/s is the sustained per-core throughput of step_r.
func BenchmarkStepCycle1000x8(b *testing.B) {
	p := profile(b)
	vals := values(b, deltasPerStep)
	epochs := make([][]frontier.ValueDelta, epochsPerRun)
	for i := range epochs {
		epochs[i] = epochDeltas(b, vals, int64(i))
	}
	s := frontier.InitialState(p)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		k := i % epochsPerRun
		if k == 0 && i > 0 {
			s = frontier.InitialState(p)
		}
		s = cycle(b, p, s, epochs[k], int64(k))
	}
	cpu := cpuClock() - cpu0
	b.ReportMetric(float64(b.N*deltasPerStep)/b.Elapsed().Seconds(), "deltas/s")
	reportCPU(b, cpu, deltasPerStep)
	b.StopTimer()
	// Allocations per delta in steady state, counted rather than timed.
	allocs := testing.AllocsPerRun(10, func() {
		cycle(b, p, frontier.InitialState(p), epochs[0], 0)
	})
	b.ReportMetric(allocs/deltasPerStep, "allocs/delta")
}

// BenchmarkApply measures one ApplyDeltaBatch into an empty epoch
// (validation, set normalization, merge, state digest, transition digest)
// at two batch sizes: allocations per command stay flat as the batch grows,
// which is what "no allocation per delta" means here.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{100, deltasPerStep} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) { benchApply(b, n) })
	}
}

func benchApply(b *testing.B, n int) {
	p := profile(b)
	ds := epochDeltas(b, values(b, n), 0)
	cmd := frontier.ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds}
	s := frontier.InitialState(p)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		if _, rej := frontier.Step(s, p, cmd); rej != nil {
			b.Fatal(rej)
		}
	}
	cpu := cpuClock() - cpu0
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "deltas/s")
	reportCPU(b, cpu, n)
}

// BenchmarkAdvanceOpen1000 measures one AdvanceFrontier that stabilizes
// nothing while an epoch of 1,000 values is open: the command is tiny, but
// the contract's state and transition digests cover the whole state.
func BenchmarkAdvanceOpen1000(b *testing.B) {
	p := profile(b)
	ds := epochDeltas(b, values(b, deltasPerStep), 0)
	tr, rej := frontier.Step(nil, p, frontier.ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds})
	if rej != nil {
		b.Fatal(rej)
	}
	s := tr.Next
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		// Only source:0 reports, so the global watermark stays null.
		tr, rej := frontier.Step(s, p, frontier.AdvanceFrontier{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", SourceID: "source:0", LowWatermark: int64(i + 1)})
		if rej != nil {
			b.Fatal(rej)
		}
		s = tr.Next
	}
	reportCPU(b, cpuClock()-cpu0, 0)
}

// BenchmarkSHA256 is the floor under every figure above: raw SHA-256 (the
// standard library's, using the CPU's SHA extensions where present) over
// 1 MiB, measured in the same process. A step_r transition must hash its
// whole next state and published batches (decision 0503), so bytes hashed
// per delta divided by this rate bounds the deltas per second.
func BenchmarkSHA256(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		sha256.Sum256(buf)
	}
	cpu := cpuClock() - cpu0
	reportCPU(b, cpu, 0)
	b.ReportMetric(float64(b.N)*float64(len(buf))/cpu.Seconds()/1e6, "MB/cpu-s")
}

// BenchmarkSealDelta measures building one delta from a sealed value: the
// delivery id and delta digest (done once, at ingress).
func BenchmarkSealDelta(b *testing.B) {
	vals := values(b, 2)
	b.ReportAllocs()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		if _, rej := frontier.NewValueDelta("source:0", int64(i), 1, "dataflow/0", vals[i%2]); rej != nil {
			b.Fatal(rej)
		}
	}
	reportCPU(b, cpuClock()-cpu0, 1)
}

// BenchmarkStepJSON1000 measures the wire path: decoding and fully
// validating a 1,000-delta command (every value and delivery digest is
// recomputed) and encoding the transition.
func BenchmarkStepJSON1000(b *testing.B) {
	p := profile(b)
	ds := epochDeltas(b, values(b, deltasPerStep), 0)
	cmd := frontier.EncodeCommand(frontier.ApplyDeltaBatch{ProfileDigest: p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds})
	prof, _ := p.MarshalJSON()
	b.SetBytes(int64(len(cmd)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		if out, ok := frontier.StepJSON(nil, prof, cmd); !ok {
			b.Fatalf("%s", out)
		}
	}
	reportCPU(b, cpuClock()-cpu0, deltasPerStep)
	b.ReportMetric(float64(b.N*deltasPerStep)/b.Elapsed().Seconds(), "deltas/s")
}

// BenchmarkProject1024x64 projects 1,024 queries of 64 fact requirements.
func BenchmarkProject1024x64(b *testing.B) {
	const queries, reqs = 1024, 64
	var atoms []seam.Atom
	var facts []seam.FactState
	for i := 0; i < reqs; i++ {
		a, err := seam.AtomOf(map[string]any{"predicate": "ready", "subject": fmt.Sprintf("s%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		atoms = append(atoms, a)
		f := seam.FactState{Atom: a}
		switch i % 4 {
		case 0, 1:
			f.Positive = []string{fmt.Sprintf("derivation:p%d", i)}
		case 2:
			f.Negative = []string{fmt.Sprintf("derivation:n%d", i)}
		}
		facts = append(facts, f)
	}
	l := seam.Materialization{
		LogicalTime: 1, RuleSetVersion: "rules/0", DataflowVersion: "dataflow/0", QueryAtoms: atoms, Facts: facts,
		FixpointDigest:        "sha256:e16dfadc7828dad76193597a8512d752058eae9f217f2b9492208afd1618af90",
		MaterializationDigest: "sha256:70ff20fbc90375a3ddcf38149df8d561af22f1bea2fa56c8bf98974b2988a81a",
		RuleBundleDigest:      "sha256:7384b0e24e317482f17c69ce79a16624f1cdd47a1c7ff964154ebe731d33462d",
	}
	r, rej := frontier.NewProfile("dataflow/0", []string{"source:p", "source:v"}, frontier.Limits{
		MaxDeltasPerCommand: 10000, MaxActiveValues: 10000, MaxOpenEpochs: 8,
		MaxReadyBatches: 8, MaxDemandPerCommand: 8, MaxOutstandingDemand: 8,
	})
	if rej != nil {
		b.Fatal(rej)
	}
	bp := seam.BindingProfile{RuleSetVersion: "rules/0", DataflowVersion: "dataflow/0", ProposalSourceID: "source:p",
		VerdictSourceID: "source:v", MaxQueries: queries, MaxFactRequirementsPerQuery: reqs}.Sealed()
	var qs []seam.Query
	for i := 0; i < queries; i++ {
		pr := proposal(i)
		pr.Preconditions = nil
		var fr []seam.FactRequirement
		for j := 0; j < reqs; j++ {
			id := fmt.Sprintf("pre:%d", j)
			pr.Preconditions = append(pr.Preconditions, id)
			pol := seam.Positive
			if (i+j)%5 == 0 {
				pol = seam.Negative
			}
			fr = append(fr, seam.FactRequirement{PreconditionID: id, Literal: seam.Literal{Polarity: pol, Atom: atoms[j]}})
		}
		qs = append(qs, seam.Query{Proposal: pr, FactRequirements: fr})
	}
	q := seam.QueryBatch{BindingProfileDigest: bp.ProfileDigest, LFixpointDigest: l.FixpointDigest,
		RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: qs}.Sealed()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock()
	for i := 0; i < b.N; i++ {
		if _, rej := seam.Project(l, r, bp, q); rej != nil {
			b.Fatal(rej)
		}
	}
	reportCPU(b, cpuClock()-cpu0, 0)
	b.ReportMetric(float64(b.N*queries*reqs)/b.Elapsed().Seconds(), "requirements/s")
}
