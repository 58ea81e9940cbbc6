package authority

import (
	"bytes"
	"testing"
)

// Authorize given FHRTo decides as without it, and appends to it what
// FHR.AppendCanonical writes for the sealed FHR: the low- and high-risk
// fixtures and the granted re-decision.
func TestAuthorizeFHRToIsAppendCanonical(t *testing.T) {
	internal, _ := fixtureInput(t, "internal")
	public, _ := fixtureInput(t, "public")
	ins := []Input{internal, public}
	if d, err := Authorize(public); err == nil && d.Outcomes[0].ApprovalRequest != nil {
		req := *d.Outcomes[0].ApprovalRequest
		granted := public
		granted.Approvals = []PresentedApproval{{Request: req, Approval: Grant(req, 110), Approver: Approver{ID: "actor:fixture-approver", Kind: "human", Role: ApproverRole, Scopes: []string{"scope:artifact-publishers"}}}}
		granted.Now = 120
		ins = append(ins, granted)
	} else {
		t.Fatal("no approval request", err)
	}
	for i, in := range ins {
		want, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		if want.FHRCanonical != nil {
			t.Fatalf("input %d: FHRCanonical without FHRTo", i)
		}
		in.FHRTo = append(make([]byte, 0, 64), `{"x":`...)
		got, err := Authorize(in)
		if err != nil {
			t.Fatal(err)
		}
		canon1 := got.FHRCanonical
		got.FHRCanonical = nil
		if !bytes.Equal(canon(t, got), canon(t, want)) {
			t.Fatalf("input %d: decisions differ with FHRTo", i)
		}
		fhr, err := want.FHR.AppendCanonical([]byte(`{"x":`))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(canon1, fhr) {
			t.Fatalf("input %d: FHRCanonical\n%s\nAppendCanonical\n%s", i, canon1, fhr)
		}
	}
}
