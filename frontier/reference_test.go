package frontier

import (
	"bytes"
	"encoding/json"
	"testing"

	"flrh.dev/flrh/cjson"
)

// Scenarios transcribed from the FLR-H reference's reactive test suite
// (tests/test_m3_reactive.py), rebuilt on our API with the m3 fixture
// profile and values.

type refEnv struct {
	t *testing.T
	p Profile
}

func newRefEnv(t *testing.T, mutate func(*Limits)) *refEnv {
	l := Limits{MaxDeltasPerCommand: 8, MaxActiveValues: 6, MaxOpenEpochs: 3, MaxReadyBatches: 2,
		MaxDemandPerCommand: 2, MaxOutstandingDemand: 3}
	if mutate != nil {
		mutate(&l)
	}
	p, rej := NewProfile("dataflow/0", []string{"source:m3:a", "source:m3:b"}, l)
	if rej != nil {
		t.Fatal(rej)
	}
	return &refEnv{t, p}
}

// pair returns a proposal from source a and its verdict from source b.
func (e *refEnv) pair(at int64, suffix string) (ValueDelta, ValueDelta) {
	pr := m3Proposal()
	vd := m3Verdict()
	if suffix != "" {
		pr.ProposalID = "proposal:m3:" + suffix
		pr.ProposalDedupKey = "proposal-dedup:m3:" + suffix
		pr.CauseID = "cause:m3:proposal:" + suffix
		vd.ProposalID, vd.VerdictID, vd.CauseID = pr.ProposalID, "verdict:m3:"+suffix, "cause:m3:verdict:"+suffix
	}
	return mustDelta(e.t, "source:m3:a", at, 1, mustProposal(e.t, pr)), mustDelta(e.t, "source:m3:b", at, 1, mustVerdict(e.t, vd))
}

func (e *refEnv) apply(ds ...ValueDelta) Command {
	return ApplyDeltaBatch{ProfileDigest: e.p.Digest(), DataflowVersion: "dataflow/0", Deltas: ds}
}
func (e *refEnv) advance(src string, w int64) Command {
	return AdvanceFrontier{ProfileDigest: e.p.Digest(), DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: w}
}
func (e *refEnv) grant(n int64) Command {
	return GrantDemand{ProfileDigest: e.p.Digest(), DataflowVersion: "dataflow/0", Batches: n}
}

func (e *refEnv) run(s *State, cmds ...Command) *Transition {
	e.t.Helper()
	var tr *Transition
	for i, c := range cmds {
		var rej *Rejection
		if tr, rej = Step(s, e.p, c); rej != nil {
			e.t.Fatalf("command %d: %v", i, rej)
		}
		s = tr.Next
	}
	return tr
}

func (e *refEnv) rejects(s *State, c Command, code Code, limit, observed int64) {
	e.t.Helper()
	var before []byte
	if s != nil {
		before, _ = json.Marshal(s)
	}
	_, rej := Step(s, e.p, c)
	if rej == nil || rej.Code != code {
		e.t.Fatalf("got %v, want %s", rej, code)
	}
	if limit >= 0 && (rej.Context.Limit == nil || *rej.Context.Limit != limit || *rej.Context.Observed != observed) {
		e.t.Fatalf("context %+v, want limit %d observed %d", rej.Context, limit, observed)
	}
	if s != nil {
		if after, _ := json.Marshal(s); !bytes.Equal(before, after) {
			e.t.Fatal("rejection changed the prior state")
		}
	}
}

func TestReferenceLatenessPrecedesReplay(t *testing.T) {
	e := newRefEnv(t, nil)
	p, v := e.pair(7, "late-replay")
	atEqual := e.run(nil, e.apply(p, v), e.advance("source:m3:a", 7)).Next
	tr := e.run(atEqual, e.apply(p)) // an exact replay at the watermark is idempotent
	if tr.Stats.AcceptedDeltaCount != 0 || tr.Next.Digest() != atEqual.Digest() {
		t.Fatalf("replay changed the state: %+v", tr.Stats)
	}
	ahead := e.run(tr.Next, e.advance("source:m3:a", 8)).Next
	e.rejects(ahead, e.apply(p), CodeLateDelta, -1, -1)
}

func TestReferenceSkewedSources(t *testing.T) {
	e := newRefEnv(t, nil)
	skewed := e.run(nil, e.advance("source:m3:a", 10), e.advance("source:m3:b", 5)).Next
	raw, _ := json.Marshal(skewed)
	// Source frontiers are a set ordered by canonical bytes: 10 before 5.
	if !bytes.Contains(raw, []byte(`"source_frontiers":[{"kind":"RSourceFrontier","low_watermark":10,"source_id":"source:m3:a"},{"kind":"RSourceFrontier","low_watermark":5,`)) {
		t.Fatalf("source frontier order: %s", raw)
	}
	p, _ := e.pair(7, "source-a-late")
	e.rejects(skewed, e.apply(p), CodeLateDelta, -1, -1)
	fromB := mustDelta(t, "source:m3:b", 7, 1, p.Value())
	e.run(skewed, e.apply(fromB))
}

func TestReferenceDemandCheckedBeforeDrain(t *testing.T) {
	e := newRefEnv(t, func(l *Limits) { l.MaxDemandPerCommand, l.MaxOutstandingDemand = 4, 3 })
	p, v := e.pair(7, "")
	ready := e.run(nil, e.apply(p, v), e.advance("source:m3:a", 8), e.advance("source:m3:b", 8)).Next
	e.rejects(ready, e.grant(4), CodeDemandLimitExceeded, 3, 4)
}

func TestReferenceReadyCapacityAfterDrain(t *testing.T) {
	e := newRefEnv(t, func(l *Limits) { l.MaxReadyBatches = 1 })
	p5, v5 := e.pair(5, "five-ready-limit")
	p7, v7 := e.pair(7, "seven-ready-limit")
	s := e.run(nil, e.grant(1), e.apply(p5, v5, p7, v7), e.advance("source:m3:a", 8)).Next
	tr := e.run(s, e.advance("source:m3:b", 8))
	if len(tr.Published) != 1 || len(tr.Next.ready) != 1 {
		t.Fatalf("published %d, ready %d", len(tr.Published), len(tr.Next.ready))
	}
	p3, v3 := e.pair(3, "three-ready-limit")
	one := e.run(nil, e.grant(1), e.apply(p3, v3, p5, v5, p7, v7), e.advance("source:m3:a", 8)).Next
	e.rejects(one, e.advance("source:m3:b", 8), CodeQueueCapacityExceeded, 1, 2)
	two := e.run(nil, e.grant(2), e.apply(p3, v3, p5, v5, p7, v7), e.advance("source:m3:a", 8)).Next
	tr = e.run(two, e.advance("source:m3:b", 8))
	if len(tr.Published) != 2 || len(tr.Next.ready) != 1 {
		t.Fatalf("published %d, ready %d", len(tr.Published), len(tr.Next.ready))
	}
}

func TestReferenceOpenEpochCapacity(t *testing.T) {
	e := newRefEnv(t, func(l *Limits) { l.MaxOpenEpochs, l.MaxActiveValues = 1, 8 })
	p5, v5 := e.pair(5, "five-open-limit")
	p7, v7 := e.pair(7, "seven-open-limit")
	e.rejects(nil, e.apply(p5, v5, p7, v7), CodeQueueCapacityExceeded, 1, 2)
}

func TestReferenceTimeOrderAndEpochLocalIdentity(t *testing.T) {
	e := newRefEnv(t, nil)
	p7, v7 := e.pair(7, "seven")
	p5, v5 := e.pair(5, "five")
	tr := e.run(nil, e.grant(2), e.apply(v7, p5, p7, v5), e.advance("source:m3:a", 8), e.advance("source:m3:b", 8))
	if len(tr.Published) != 2 || tr.Published[0].batch.LogicalTime != 5 || tr.Published[1].batch.LogicalTime != 7 {
		t.Fatal("batches not published in time order")
	}
	// The same proposal and verdict in two epochs publish twice: identity
	// uniqueness is per epoch.
	p, v := e.pair(7, "epoch-local")
	p9, v9 := mustDelta(t, "source:m3:a", 9, 1, p.Value()), mustDelta(t, "source:m3:b", 9, 1, v.Value())
	tr = e.run(nil, e.grant(2), e.apply(p, v, p9, v9), e.advance("source:m3:a", 10), e.advance("source:m3:b", 10))
	if len(tr.Published) != 2 || tr.Published[0].batch.ProposalIDs[0] != tr.Published[1].batch.ProposalIDs[0] {
		t.Fatal("epoch-local identities did not publish twice")
	}
}

func TestReferenceDependencyRejections(t *testing.T) {
	e := newRefEnv(t, nil)
	p, v := e.pair(7, "")
	for _, ds := range [][]ValueDelta{{p}, {v}} {
		s := e.run(nil, e.apply(ds...), e.advance("source:m3:a", 8)).Next
		e.rejects(s, e.advance("source:m3:b", 8), CodeUnresolvedDependency, -1, -1)
	}
	bad := m3Verdict()
	bad.RuleSetVersion = "rules/other"
	s := e.run(nil, e.apply(p, mustDelta(t, "source:m3:b", 7, 1, mustVerdict(t, bad))), e.advance("source:m3:a", 8)).Next
	e.rejects(s, e.advance("source:m3:b", 8), CodeRuleSetVersionMismatch, -1, -1)
	// A second proposal value with the same proposal_id in one epoch.
	other := m3Proposal()
	other.CauseID = "cause:m3:same-proposal-other-value"
	s = e.run(nil, e.apply(p, mustDelta(t, "source:m3:b", 7, 1, mustProposal(t, other)), v), e.advance("source:m3:a", 8)).Next
	e.rejects(s, e.advance("source:m3:b", 8), CodeUnresolvedDependency, -1, -1)
	// Retracting twice.
	tr := e.run(nil, e.apply(p, p))
	if tr.Stats.AcceptedDeltaCount != 1 {
		t.Fatalf("duplicate +1 counted %d", tr.Stats.AcceptedDeltaCount)
	}
	tr = e.run(tr.Next, e.apply(p.Retraction()))
	if tr.Stats.RetractedDeltaCount != 1 {
		t.Fatalf("retraction counted %d", tr.Stats.RetractedDeltaCount)
	}
	e.rejects(tr.Next, e.apply(p.Retraction()), CodeUnknownDelivery, -1, -1)
	e.rejects(nil, e.apply(p, p.Retraction()), CodeAmbiguousDeltaBatch, -1, -1)
}

// redigestState recomputes the state_digest of an edited wire state.
func redigestState(t *testing.T, m map[string]any) []byte {
	t.Helper()
	without := map[string]any{}
	for k, v := range m {
		if k != "state_digest" {
			without[k] = v
		}
	}
	b, err := cjson.Encode(map[string]any{"kind": "M3StatePreimage", "contract_version": ContractVersion, "state_without_state_digest": without})
	if err != nil {
		t.Fatal(err)
	}
	m["state_digest"] = cjson.Digest(b)
	out, err := cjson.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReferenceTamperedStates(t *testing.T) {
	e := newRefEnv(t, nil)
	profileJSON, _ := json.Marshal(e.p)
	grant := EncodeCommand(e.grant(1))
	p, v := e.pair(7, "")
	open := e.run(nil, e.apply(p, v)).Next
	ready := e.run(open, e.advance("source:m3:a", 8), e.advance("source:m3:b", 8)).Next
	decode := func(s *State) map[string]any {
		raw, _ := json.Marshal(s)
		m, err := cjson.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		return m.(map[string]any)
	}
	cases := []struct {
		name  string
		state *State
		edit  func(m map[string]any)
		code  Code
	}{
		{"duplicate open epoch", open, func(m map[string]any) {
			es := m["open_epochs"].([]any)
			m["open_epochs"] = append(es, es[0])
		}, CodeMalformedReactiveState},
		{"non-canonical stored proposal", open, func(m map[string]any) {
			for _, x := range m["open_epochs"].([]any)[0].(map[string]any)["values"].([]any) {
				sv := x.(map[string]any)
				if sv["value_kind"] == "effect_proposal" {
					pre := sv["value"].(map[string]any)["preconditions"].([]any)
					pre[0], pre[1] = pre[1], pre[0]
				}
			}
		}, CodeMalformedReactiveState},
		{"duplicate ready batch", ready, func(m map[string]any) {
			rs := m["ready_batches"].([]any)
			m["ready_batches"] = append(rs, rs[0])
		}, CodeMalformedReactiveState},
		{"ready batch without verdicts", ready, func(m map[string]any) {
			rb := m["ready_batches"].([]any)[0].(map[string]any)
			rb["eligibility_verdicts"] = []any{}
		}, CodeUnresolvedDependency},
		{"demand outstanding while a batch waits", ready, func(m map[string]any) {
			m["outstanding_demand"] = int64(1)
		}, CodeMalformedReactiveState},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := decode(c.state)
			c.edit(m)
			out, ok := StepJSON(redigestState(t, m), profileJSON, grant)
			var r struct {
				Code Code `json:"code"`
			}
			if ok || json.Unmarshal(out, &r) != nil || r.Code != c.code {
				t.Fatalf("got %s, want %s", out, c.code)
			}
		})
	}
}
