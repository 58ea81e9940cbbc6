package authority

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"pgregory.net/rapid"
)

// A memo gives a recorded digest only for bytes equal to the recorded
// ones: against a map from the bytes to their SHA-256, over preimages
// drawn from two letters so that many share a length and most of their
// bytes.
func TestDigestMemoIsAMapOfBytes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var m DigestMemo
		want := map[string][sha256.Size]byte{}
		pre := rapid.SliceOfN(rapid.SampledFrom([]byte("ab")), 0, 6)
		for i := rapid.IntRange(1, 40).Draw(rt, "ops"); i > 0; i-- {
			p := pre.Draw(rt, "p")
			sum, ok := m.lookup(p)
			w, wok := want[string(p)]
			if ok != wok || sum != w {
				rt.Fatalf("lookup %q = %x %v, want %x %v", p, sum, ok, w, wok)
			}
			if !ok {
				s := sha256.Sum256(p)
				m.add(p, s)
				want[string(p)] = s
			}
			if rapid.IntRange(0, 15).Draw(rt, "reset") == 0 {
				m.Reset()
				clear(want)
			}
		}
	})
}

// A grant's re-decision given the memo of the decision that asked for
// the approval decides as without it, and takes digests from it.
func TestAuthorizeWithMemoIsWithout(t *testing.T) {
	for _, fixture := range []string{"internal", "public"} {
		in, _ := fixtureInput(t, fixture)
		var memo DigestMemo
		first, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memo = &memo
		got, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(canon(t, got), canon(t, first)) {
			t.Fatalf("%s: the decision recording the memo differs", fixture)
		}
		if len(memo.ents) == 0 {
			t.Fatalf("%s: nothing recorded", fixture)
		}
		if first.Outcomes[0].ApprovalRequest == nil {
			continue
		}
		req := *first.Outcomes[0].ApprovalRequest
		in.Approvals = []PresentedApproval{{Request: req, Approval: Grant(req, req.RequestedAt), Approver: Approver{ID: "actor:fixture-approver", Kind: "human", Role: ApproverRole, Scopes: []string{"scope:artifact-publishers"}}}}
		in.Memo = nil
		want, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Memo = &memo
		before := len(memo.ents)
		got, err = Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(canon(t, got), canon(t, want)) {
			t.Fatalf("%s: the grant's decision differs with the memo\n%s\n%s", fixture, canon(t, got), canon(t, want))
		}
		if got.Outcomes[0].Kind != OutcomeIntent {
			t.Fatalf("%s: the grant gave %s", fixture, got.Outcomes[0].Kind)
		}
		n := countPreimages(t, in)
		reused := n - (len(memo.ents) - before)
		if reused <= 0 {
			t.Fatalf("%s: the grant's decision took no digest from the memo (%d preimages)", fixture, n)
		}
		t.Logf("%s: the grant's decision took %d of its %d preimages' digests from the memo", fixture, reused, n)
	}
}

// countPreimages is how many preimages in's decision records in an empty memo.
func countPreimages(t *testing.T, in Input) int {
	var m DigestMemo
	in.Memo = &m
	if _, err := Authorize(in); err != nil {
		t.Fatal(err)
	}
	return len(m.ents)
}
