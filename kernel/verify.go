package kernel

import (
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// CheckTransition re-derives, from a transition's own contents, everything
// in it that is derived: each fact's derivation id, each proposal's id and
// dedup key, the canonical order of facts and proposals, and the
// transition digest (given the prior snapshot digest it names). A verifier
// reading a persisted transition uses it to detect any edit; it needs no
// prior snapshot. The domain supplies the fact identity domain.
func CheckTransition(d Domain, t *Transition) error {
	p := profileOf(d)
	if t.Kind != KindTransition || t.SchemaVersion != ResultSchemaVersion || t.ContractVersion != ContractVersion {
		return fmt.Errorf("kernel: not a %s transition", ContractVersion)
	}
	for i, fd := range t.FactDeltas {
		if err := protocol.Check(fd); err != nil {
			return fmt.Errorf("kernel: fact %d: %w", i, err)
		}
		value, err := toValue(fd)
		if err != nil {
			return err
		}
		m := value.(map[string]any)
		delete(m, "derivation_id")
		id, err := identity("derivation", p.FactIdentity, m)
		if err != nil {
			return err
		}
		if id != fd.DerivationID {
			return fmt.Errorf("kernel: fact %d: derivation id %s does not bind its content (want %s)", i, fd.DerivationID, id)
		}
	}
	for i, ep := range t.EffectProposals {
		if err := protocol.Check(ep); err != nil {
			return fmt.Errorf("kernel: proposal %d: %w", i, err)
		}
		value, err := toValue(ep)
		if err != nil {
			return err
		}
		m := value.(map[string]any)
		delete(m, "proposal_id")
		delete(m, "proposal_dedup_key")
		// Identities bind the canonical (sorted) precondition order.
		pre, ok := sortPreconditions(ep.Preconditions)
		if !ok {
			return fmt.Errorf("kernel: proposal %d: preconditions are not a set of ids", i)
		}
		list := make([]any, len(pre))
		for j, s := range pre {
			list[j] = s
		}
		m["preconditions"] = list
		id, err1 := identity("proposal", identityProposal, m)
		dedup, err2 := identity("proposal-dedup", identityProposalDedup, m)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("kernel: proposal %d: no canonical form", i)
		}
		if id != ep.ProposalID || dedup != ep.ProposalDedupKey {
			return fmt.Errorf("kernel: proposal %d: identity does not bind its content", i)
		}
	}
	facts := append([]protocol.FactDelta(nil), t.FactDeltas...)
	props := append([]protocol.EffectProposal(nil), t.EffectProposals...)
	fb, err := sortCanonical(facts)
	if err != nil {
		return err
	}
	pb, err := sortCanonical(props)
	if err != nil {
		return err
	}
	for i := range facts {
		if facts[i].DerivationID != t.FactDeltas[i].DerivationID {
			return fmt.Errorf("kernel: facts are not in canonical order")
		}
	}
	for i := range props {
		if props[i].ProposalID != t.EffectProposals[i].ProposalID {
			return fmt.Errorf("kernel: proposals are not in canonical order")
		}
	}
	next, err := cjson.Encode(t.NextSnapshot.Wire())
	if err != nil {
		return err
	}
	want, err := transitionDigest(nil, t.EventID, t.PriorSnapshotDigest, cjson.Digest(next), fb, pb)
	if err != nil {
		return err
	}
	if want != t.TransitionDigest {
		return fmt.Errorf("kernel: transition digest %s does not bind the transition (want %s)", t.TransitionDigest, want)
	}
	return nil
}

// Replay applies accepted events in order from a snapshot, as a verifier or
// a recovering runner does, and returns each transition digest and the
// final snapshot. It stops at the first rejection and returns it with the
// index of the refused event: events in a log were all accepted once, so a
// rejection on replay means the log, the snapshot or the domain changed.
func Replay(d Domain, from Snapshot, events []protocol.AcceptedEvent) (digests []string, final Snapshot, err error) {
	s := from
	for i, ev := range events {
		tr, err := Step(d, s, ev)
		if err != nil {
			return digests, s, fmt.Errorf("kernel: replay event %d (%s): %w", i, ev.EventID, err)
		}
		digests = append(digests, tr.TransitionDigest)
		s = tr.NextSnapshot
	}
	return digests, s, nil
}
