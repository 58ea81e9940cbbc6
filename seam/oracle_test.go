package seam

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// oracleVerdict is an independent restatement of the contract's truth
// mapping: per requirement, the outcome and the evidence it consults.
func oracleVerdict(facts map[string][2][]string, reqs []FactRequirement) (string, []string) {
	conflict, unsatisfied := false, false
	evidence := map[string]bool{}
	for _, r := range reqs {
		f := facts[r.Literal.Atom.canon]
		pos, neg := f[0], f[1]
		var used []string
		switch {
		case len(pos) > 0 && len(neg) > 0:
			conflict = true
			used = append(append(used, pos...), neg...)
		case len(pos) == 0 && len(neg) == 0:
			unsatisfied = true
		case len(pos) > 0: // TRUE_ONLY
			unsatisfied = unsatisfied || r.Literal.Polarity == Negative
			used = pos
		default: // FALSE_ONLY
			unsatisfied = unsatisfied || r.Literal.Polarity == Positive
			used = neg
		}
		for _, id := range used {
			evidence[id] = true
		}
	}
	ids := []string{}
	for id := range evidence {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	switch {
	case conflict:
		return "conflicted", ids
	case unsatisfied:
		return "ineligible", ids
	}
	return "eligible", ids
}

func TestTruthMappingAgainstOracle(t *testing.T) {
	r := lrRProfile(t)
	b := BindingProfile{RuleSetVersion: "rules/lr-test/1", DataflowVersion: "dataflow/0",
		ProposalSourceID: "source:lr:proposal", VerdictSourceID: "source:lr:verdict",
		MaxQueries: 16, MaxFactRequirementsPerQuery: 64}.Sealed()
	rapid.Check(t, func(rt *rapid.T) {
		nAtoms := rapid.IntRange(1, 8).Draw(rt, "atoms")
		l := truthFour(rt)
		l.QueryAtoms, l.Facts = nil, nil
		facts := map[string][2][]string{}
		var atoms []Atom
		support := 0
		for i := 0; i < nAtoms; i++ {
			a, _ := AtomOf(map[string]any{"predicate": "p", "arg": int64(i)})
			atoms = append(atoms, a)
			var sides [2][]string
			for side := range sides {
				for k := rapid.IntRange(0, 2).Draw(rt, "supports"); k > 0; k-- {
					support++
					sides[side] = append(sides[side], fmt.Sprintf("derivation:%d", support))
				}
			}
			facts[a.canon] = sides
			l.QueryAtoms = append(l.QueryAtoms, a)
			l.Facts = append(l.Facts, FactState{Atom: a, Positive: sides[0], Negative: sides[1]})
		}
		var qs []Query
		nq := rapid.IntRange(1, 6).Draw(rt, "queries")
		for i := 0; i < nq; i++ {
			var reqs []FactRequirement
			var pre []string
			for j, n := 0, rapid.IntRange(0, 10).Draw(rt, "requirements"); j < n; j++ {
				id := fmt.Sprintf("pre:%d", j)
				reqs = append(reqs, FactRequirement{PreconditionID: id, Literal: Literal{
					Polarity: rapid.SampledFrom([]Polarity{Positive, Negative}).Draw(rt, "polarity"),
					Atom:     rapid.SampledFrom(atoms).Draw(rt, "atom"),
				}})
				pre = append(pre, id)
			}
			qs = append(qs, Query{Proposal: lrProposal(fmt.Sprintf("q%d", i), pre...), FactRequirements: reqs})
		}
		q := QueryBatch{BindingProfileDigest: b.ProfileDigest, LFixpointDigest: l.FixpointDigest,
			RuleBundleDigest: l.RuleBundleDigest, RProfileDigest: r.Digest(), Queries: qs}.Sealed()
		p, rej := Project(l, r, b, q)
		if rej != nil {
			rt.Fatal(rej)
		}
		got := map[string]string{}
		for _, v := range p.Verdicts {
			e, _ := v.Verdict()
			got[e.ProposalID] = e.Status + fmt.Sprint([]string(e.SupportDerivationIDs))
		}
		for _, query := range qs {
			status, ids := oracleVerdict(facts, query.FactRequirements)
			if want := status + fmt.Sprint(ids); got[query.Proposal.ProposalID] != want {
				rt.Fatalf("%s: got %s, oracle %s", query.Proposal.ProposalID, got[query.Proposal.ProposalID], want)
			}
		}
	})
}
