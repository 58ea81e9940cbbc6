package workflow

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"flrh.dev/flrh/kernel"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// Every test in this package runs with each pairing of proposals and
// emitted actions checked against pairing every proposal by digest.
func init() { initVerifyMatch() }

func initVerifyMatch() {
	verifyMatch = func(props []protocol.EffectProposal, emitted []kernel.Proposal, got []action) error {
		want, err := matchByDigest(props, emitted)
		if err != nil || !reflect.DeepEqual(got, want) {
			return fmt.Errorf("matchEmission paired otherwise than the digests do (%v)", err)
		}
		return nil
	}
}

// matchByDigest pairs every proposal by the digests of its action and
// destination, the first unused emitted proposal that has both.
func matchByDigest(props []protocol.EffectProposal, emitted []kernel.Proposal) ([]action, error) {
	out := make([]action, len(props))
	used := make([]bool, len(emitted))
	for i, p := range props {
		found := false
		for j, e := range emitted {
			if used[j] || e.EffectType != p.EffectType {
				continue
			}
			ad, err1 := kernel.ValueDigest(kernel.ValueEffectAction, e.Action)
			dd, err2 := kernel.ValueDigest(kernel.ValueEffectDestination, e.Destination)
			if err1 == nil && err2 == nil && ad == p.ActionDigest && dd == p.DestinationDigest {
				out[i], used[j], found = action{e.Action, e.Destination}, true, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("proposal %s has no emitted action", p.ProposalID)
		}
	}
	return out, nil
}

// TestMatchEmissionIsByDigest draws emissions whose proposals share
// effect types (and some their action too), builds the proposals F would
// from them in another order, and holds matchEmission's pairing to
// matchByDigest's.
func TestMatchEmissionIsByDigest(t *testing.T) {
	verifyMatch = nil // compared here, not by the hook
	defer initVerifyMatch()
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		emitted := make([]kernel.Proposal, n)
		props := make([]protocol.EffectProposal, n)
		for i := range emitted {
			emitted[i] = kernel.Proposal{
				EffectType:  rapid.SampledFrom([]string{"payment.refund", "ticket.open", "mail.send"}).Draw(t, "type"),
				Action:      protocol.Object{"amount": rapid.Int64Range(1, 3).Draw(t, "amount")},
				Destination: protocol.Object{"payee": rapid.SampledFrom([]string{"alice", "bob"}).Draw(t, "payee")},
			}
			ad, err1 := kernel.ValueDigest(kernel.ValueEffectAction, emitted[i].Action)
			dd, err2 := kernel.ValueDigest(kernel.ValueEffectDestination, emitted[i].Destination)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			props[i] = protocol.EffectProposal{ProposalID: "proposal:" + strconv.Itoa(i), EffectType: emitted[i].EffectType, ActionDigest: ad, DestinationDigest: dd}
		}
		props = rapid.Permutation(props).Draw(t, "order")
		got, gerr := matchEmission(props, emitted)
		want, werr := matchByDigest(props, emitted)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("matchEmission = %v, %v; by digest %v, %v", got, gerr, want, werr)
		}
	})
}
