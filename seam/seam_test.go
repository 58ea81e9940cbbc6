package seam

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/frontier"
	"pgregory.net/rapid"
)

func req(t tb, pre string, pol Polarity, subject string) FactRequirement {
	return FactRequirement{PreconditionID: pre, Literal: Literal{Polarity: pol, Atom: truthAtom(t, subject)}}
}

// TestTruthTable checks every cell of the frozen four-valued mapping: the
// status and exactly which support ids become evidence.
func TestTruthTable(t *testing.T) {
	cases := []struct {
		pol      Polarity
		subject  string
		status   string
		supports []string
	}{
		{Positive, "true_only", "eligible", []string{"derivation:lr:true"}},
		{Positive, "false_only", "ineligible", []string{"derivation:lr:false"}},
		{Positive, "both", "conflicted", []string{"derivation:lr:both-negative", "derivation:lr:both-positive"}},
		{Positive, "neither", "ineligible", []string{}},
		{Negative, "true_only", "ineligible", []string{"derivation:lr:true"}},
		{Negative, "false_only", "eligible", []string{"derivation:lr:false"}},
		{Negative, "both", "conflicted", []string{"derivation:lr:both-negative", "derivation:lr:both-positive"}},
		{Negative, "neither", "ineligible", []string{}},
	}
	r := lrRProfile(t)
	for _, c := range cases {
		t.Run(string(c.pol)+"_"+c.subject, func(t *testing.T) {
			q := batchOf(t, r, Query{Proposal: lrProposal("tt", "pre:a"), FactRequirements: []FactRequirement{req(t, "pre:a", c.pol, c.subject)}})
			p, rej := Project(truthFour(t), r, lrBinding(), q)
			if rej != nil {
				t.Fatal(rej)
			}
			v, _ := p.Verdicts[0].Verdict()
			if v.Status != c.status || !slices.Equal([]string(v.SupportDerivationIDs), c.supports) {
				t.Errorf("status %s supports %v, want %s %v", v.Status, v.SupportDerivationIDs, c.status, c.supports)
			}
		})
	}
}

func TestAggregation(t *testing.T) {
	r := lrRProfile(t)
	cases := []struct {
		name   string
		reqs   []FactRequirement
		status string
	}{
		{"all satisfied", []FactRequirement{req(t, "p:1", Positive, "true_only"), req(t, "p:2", Negative, "false_only")}, "eligible"},
		{"conflict dominates satisfied", []FactRequirement{req(t, "p:1", Positive, "true_only"), req(t, "p:2", Positive, "both")}, "conflicted"},
		{"conflict dominates unsatisfied", []FactRequirement{req(t, "p:1", Positive, "neither"), req(t, "p:2", Negative, "both")}, "conflicted"},
		{"one unsatisfied", []FactRequirement{req(t, "p:1", Positive, "true_only"), req(t, "p:2", Positive, "neither")}, "ineligible"},
		{"no fact requirement", nil, "eligible"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pre []string
			for _, r := range c.reqs {
				pre = append(pre, r.PreconditionID)
			}
			pre = append(pre, "frontier:1")
			q := batchOf(t, r, Query{Proposal: lrProposal("agg", pre...), FactRequirements: c.reqs, FrontierPreconditionIDs: []string{"frontier:1"}})
			p, rej := Project(truthFour(t), r, lrBinding(), q)
			if rej != nil {
				t.Fatal(rej)
			}
			if v, _ := p.Verdicts[0].Verdict(); v.Status != c.status {
				t.Errorf("status %s, want %s", v.Status, c.status)
			}
			if len(p.Command.Deltas) != 2 {
				t.Errorf("%d deltas, want one proposal and one verdict", len(p.Command.Deltas))
			}
		})
	}
}

func TestEmptyBatch(t *testing.T) {
	r := lrRProfile(t)
	p, rej := Project(truthFour(t), r, lrBinding(), batchOf(t, r))
	if rej != nil {
		t.Fatal(rej)
	}
	if p.Command != nil || len(p.Verdicts) != 0 {
		t.Errorf("empty batch gave command %v and %d verdicts", p.Command, len(p.Verdicts))
	}
	raw, _ := json.Marshal(p)
	if !bytes.Contains(raw, []byte(`"command":null`)) || !bytes.Contains(raw, []byte(`"verdicts":[]`)) {
		t.Errorf("empty projection bytes %s", raw)
	}
	assertCanonical(t, raw)
}

// TestProjectionFeedsFrontier checks the seam's command is accepted by R
// unchanged and publishes one paired batch once both sources pass the epoch.
func TestProjectionFeedsFrontier(t *testing.T) {
	r := lrRProfile(t)
	q := batchOf(t, r,
		Query{Proposal: lrProposal("a", "p:1"), FactRequirements: []FactRequirement{req(t, "p:1", Positive, "true_only")}},
		Query{Proposal: lrProposal("b", "p:1"), FactRequirements: []FactRequirement{req(t, "p:1", Positive, "both")}},
	)
	p, rej := Project(truthFour(t), r, lrBinding(), q)
	if rej != nil {
		t.Fatal(rej)
	}
	tr, frej := frontier.Step(nil, r, *p.Command)
	if frej != nil {
		t.Fatal(frej)
	}
	s := tr.Next
	for _, src := range r.SourceIDs() {
		tr, frej = frontier.Step(s, r, frontier.AdvanceFrontier{ProfileDigest: r.Digest(), DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: 8})
		if frej != nil {
			t.Fatal(frej)
		}
		s = tr.Next
	}
	tr, frej = frontier.Step(s, r, frontier.GrantDemand{ProfileDigest: r.Digest(), DataflowVersion: "dataflow/0", Batches: 1})
	if frej != nil {
		t.Fatal(frej)
	}
	if len(tr.Published) != 1 || len(tr.Published[0].Batch().ProposalIDs) != 2 {
		t.Fatalf("published %d batches", len(tr.Published))
	}
}

func TestRejections(t *testing.T) {
	r := lrRProfile(t)
	good := func() Query {
		return Query{Proposal: lrProposal("x", "p:1"), FactRequirements: []FactRequirement{req(t, "p:1", Positive, "true_only")}}
	}
	undeclared, _ := AtomOf(map[string]any{"predicate": "nope"})
	cases := []struct {
		name   string
		mutate func(l *Materialization, b *BindingProfile, q *QueryBatch)
		code   Code
		path   string
	}{
		{"orphan precondition", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].Proposal.Preconditions = []string{"p:1", "p:orphan"}
		}, CodePreconditionBindingMismatch, "/query_batch/queries/0"},
		{"fact frontier overlap", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].FrontierPreconditionIDs = []string{"p:1"}
		}, CodePreconditionBindingMismatch, "/query_batch/queries/0"},
		{"duplicate requirement precondition", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].FactRequirements = append(q.Queries[0].FactRequirements, req(t, "p:1", Negative, "false_only"))
		}, CodePreconditionBindingMismatch, "/query_batch/queries/0/fact_requirements"},
		{"undeclared atom", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].FactRequirements[0].Literal.Atom = undeclared
		}, CodeQueryAtomNotDeclared, "/query_batch/queries/0/fact_requirements/0/literal/atom"},
		{"query batch digest", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.QueryBatchDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		}, CodeDigestMismatch, "/query_batch/query_batch_digest"},
		{"query digest", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].QueryDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		}, CodeDigestMismatch, "/query_batch/queries/0/query_digest"},
		{"proposal rule version", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries[0].Proposal.Versions.RuleSet = "rules/wrong/1"
		}, CodeVersionMismatch, "/query_batch/queries/0/proposal/versions/rule_set"},
		{"duplicate proposal", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.Queries = append(q.Queries, q.Queries[0])
		}, CodeDuplicateProposal, "/query_batch/queries/1/proposal/proposal_id"},
		{"max queries + 1", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			for len(q.Queries) < 9 {
				q.Queries = append(q.Queries, q.Queries[0])
			}
		}, CodeLimitExceeded, "/query_batch/queries"},
		{"max requirements + 1", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			for i := 2; i <= 5; i++ {
				q.Queries[0].FactRequirements = append(q.Queries[0].FactRequirements, req(t, "p:"+string(rune('0'+i)), Positive, "true_only"))
			}
		}, CodeLimitExceeded, "/query_batch/queries/0/fact_requirements"},
		{"binding profile digest", func(_ *Materialization, b *BindingProfile, _ *QueryBatch) {
			b.ProfileDigest = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
		}, CodeProfileMismatch, "/binding_profile/profile_digest"},
		{"binding dataflow", func(_ *Materialization, b *BindingProfile, _ *QueryBatch) {
			b.DataflowVersion = "dataflow/wrong/1"
		}, CodeVersionMismatch, "/binding_profile/dataflow_version"},
		{"binding undeclared source", func(_ *Materialization, b *BindingProfile, _ *QueryBatch) {
			b.VerdictSourceID = "source:elsewhere"
		}, CodeProfileMismatch, "/binding_profile/verdict_source_id"},
		{"query binding digest", func(_ *Materialization, _ *BindingProfile, q *QueryBatch) {
			q.BindingProfileDigest = "sha256:6666666666666666666666666666666666666666666666666666666666666666"
		}, CodeDigestMismatch, "/query_batch/binding_profile_digest"},
		{"missing fact state", func(l *Materialization, _ *BindingProfile, _ *QueryBatch) {
			l.Facts = l.Facts[1:] // drop true_only, which the query reads
		}, CodeFactStateNotFound, "/query_batch/queries/fact_requirements/literal/atom"},
		{"incomplete materialization", func(l *Materialization, _ *BindingProfile, _ *QueryBatch) {
			l.Facts = l.Facts[:3] // drop neither, which no query reads
		}, CodeInvariantViolation, "/l_result/next_materialization/fact_states"},
		{"duplicate fact state", func(l *Materialization, _ *BindingProfile, _ *QueryBatch) {
			l.Facts = append(l.Facts, l.Facts[0])
		}, CodeInvariantViolation, "/l_result/next_materialization/fact_states/4"},
		{"malformed l digest", func(l *Materialization, _ *BindingProfile, _ *QueryBatch) {
			l.FixpointDigest = "sha256:XYZ"
		}, CodeMalformedLResult, "/l_result/fixpoint_digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, b := truthFour(t), lrBinding()
			q := batchOf(t, r, good())
			c.mutate(&l, &b, &q)
			p, rej := Project(l, r, b, q)
			if rej == nil {
				t.Fatalf("accepted: %+v", p)
			}
			if rej.Code != c.code || rej.Path != c.path {
				t.Errorf("got %s at %s, want %s at %s", rej.Code, rej.Path, c.code, c.path)
			}
			if rej.QueryBatchDigest != "" && rej.Code != CodeFactStateNotFound {
				t.Errorf("rejection trusts query batch digest %s", rej.QueryBatchDigest)
			}
			raw, _ := json.Marshal(rej)
			assertCanonical(t, raw)
		})
	}
}

// TestPermutationInvariance: the order of queries, of requirements and of
// every nested set never changes the projection bytes.
func TestPermutationInvariance(t *testing.T) {
	r := lrRProfile(t)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(rt, "queries")
		var qs []Query
		for i := 0; i < n; i++ {
			k := rapid.IntRange(0, 4).Draw(rt, "requirements")
			var reqs []FactRequirement
			var pre []string
			for j := 0; j < k; j++ {
				id := "p:" + string(rune('a'+j))
				pol := rapid.SampledFrom([]Polarity{Positive, Negative}).Draw(rt, "polarity")
				reqs = append(reqs, req(rt, id, pol, rapid.SampledFrom(truthSubjects).Draw(rt, "subject")))
				pre = append(pre, id)
			}
			frontierIDs := []string{"frontier:" + string(rune('0'+i))}
			pre = append(pre, frontierIDs...)
			qs = append(qs, Query{Proposal: lrProposal("q"+string(rune('0'+i)), pre...), FactRequirements: reqs, FrontierPreconditionIDs: frontierIDs})
		}
		base := batchOf(rt, r, qs...)
		want, rej := Project(truthFour(rt), r, lrBinding(), base)
		if rej != nil {
			rt.Fatal(rej)
		}
		shuffled := base
		shuffled.Queries = permute(rt, base.Queries)
		for i := range shuffled.Queries {
			q := &shuffled.Queries[i]
			q.FactRequirements = permute(rt, q.FactRequirements)
			q.FrontierPreconditionIDs = permute(rt, q.FrontierPreconditionIDs)
			q.Proposal.Preconditions = permute(rt, q.Proposal.Preconditions)
		}
		got, rej := Project(truthFour(rt), r, lrBinding(), shuffled)
		if rej != nil {
			rt.Fatal(rej)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if !bytes.Equal(wb, gb) {
			rt.Fatalf("permutation changed the projection\n%s\n%s", wb, gb)
		}
		if want.Command != nil && len(want.Command.Deltas) != 2*n {
			rt.Fatalf("%d deltas for %d queries", len(want.Command.Deltas), n)
		}
	})
}

func permute[T any](t *rapid.T, xs []T) []T {
	out := slices.Clone(xs)
	for i := len(out) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, "swap")
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// TestRejectionDiagnosticOrder: with two bad queries, the one reported does
// not depend on the caller's order.
func TestRejectionDiagnosticOrder(t *testing.T) {
	r := lrRProfile(t)
	a := Query{Proposal: lrProposal("diag-a", "p:1"), FactRequirements: []FactRequirement{req(t, "p:1", Positive, "true_only")}}
	b := a
	b.Proposal = lrProposal("diag-b", "p:1")
	a.Proposal.Versions.RuleSet = "rules/wrong/a"
	b.Proposal.Versions.RuleSet = "rules/wrong/b"
	left := batchOf(t, r, a, b)
	right := batchOf(t, r, b, a)
	_, r1 := Project(truthFour(t), r, lrBinding(), left)
	_, r2 := Project(truthFour(t), r, lrBinding(), right)
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if !bytes.Equal(j1, j2) {
		t.Errorf("diagnostic depends on order:\n%s\n%s", j1, j2)
	}
}

// TestProjectIsDeterministic runs Project twice on deep copies of its
// inputs and checks it leaves them as they were.
func TestProjectIsDeterministic(t *testing.T) {
	r := lrRProfile(t)
	type in struct {
		L Materialization
		B BindingProfile
		Q QueryBatch
	}
	q := batchOf(t, r,
		Query{Proposal: lrProposal("a", "p:2", "p:1"), FactRequirements: []FactRequirement{req(t, "p:2", Negative, "both"), req(t, "p:1", Positive, "true_only")}},
		Query{Proposal: lrProposal("b", "p:1"), FactRequirements: []FactRequirement{req(t, "p:1", Positive, "neither")}},
	)
	out := determinism.Check(t, in{truthFour(t), lrBinding(), q}, func(x in) string {
		p, rej := Project(x.L, r, x.B, x.Q)
		if rej != nil {
			b, _ := json.Marshal(rej)
			return string(b)
		}
		b, _ := json.Marshal(p)
		return string(b)
	})
	if !strings.Contains(out, `"kind":"LRProjectionResult"`) {
		t.Fatalf("unexpected output %s", out)
	}
}
