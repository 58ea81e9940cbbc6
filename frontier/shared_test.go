package frontier

import (
	"reflect"
	"testing"
)

// The shared accessors give what the copying ones give, with lists
// capped so that an append moves them, and leave the value as it was.
func TestSharedAccessorsAreTheCopies(t *testing.T) {
	pv, vv := mustProposal(t, m3Proposal()), mustVerdict(t, m3Verdict())
	for _, v := range []Value{pv, vv, {}} {
		p, pok := v.Proposal()
		sp, spok := v.SharedProposal()
		if pok != spok || !reflect.DeepEqual(p, sp) || cap(sp.Preconditions) != len(sp.Preconditions) {
			t.Fatalf("SharedProposal %v %+v, Proposal %v %+v", spok, sp, pok, p)
		}
		e, eok := v.Verdict()
		se, seok := v.SharedVerdict()
		if eok != seok || !reflect.DeepEqual(e, se) || cap(se.SupportDerivationIDs) != len(se.SupportDerivationIDs) {
			t.Fatalf("SharedVerdict %v %+v, Verdict %v %+v", seok, se, eok, e)
		}
		before := string(v.CanonicalJSON())
		_ = append(sp.Preconditions, "x")
		_ = append(se.SupportDerivationIDs, "x")
		if after, _ := v.Proposal(); string(v.CanonicalJSON()) != before || !reflect.DeepEqual(after, p) {
			t.Fatal("an append to a shared list changed the value")
		}
	}
}

// checkSharedBatch holds SharedBatch to Batch: the same batch, its id
// lists capped, and an append to them changes nothing of the batch's.
func checkSharedBatch(t tb, p *PublishedBatch) {
	t.Helper()
	b, sb := p.Batch(), p.SharedBatch()
	if !reflect.DeepEqual(b, sb) || cap(sb.ProposalIDs) != len(sb.ProposalIDs) || cap(sb.EligibilityVerdictIDs) != len(sb.EligibilityVerdictIDs) {
		t.Fatalf("SharedBatch %+v, Batch %+v", sb, b)
	}
	_ = append(sb.ProposalIDs, "x")
	_ = append(sb.EligibilityVerdictIDs, "x")
	if !reflect.DeepEqual(p.Batch(), b) {
		t.Fatal("an append to a shared id list changed the batch")
	}
}
