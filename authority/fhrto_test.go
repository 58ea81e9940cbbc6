package authority

import (
	"bytes"
	"testing"
)

// Authorize given FHRTo decides as without it, and appends to it what
// FHR.AppendCanonical writes for the sealed FHR: the low- and high-risk
// fixtures and the granted re-decision.
func TestAuthorizeFHRToIsAppendCanonical(t *testing.T) {
	ins := fixturesWithGrant(t, 110, 120)
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

// fixturesWithGrant returns the low- and high-risk fixtures' inputs and
// the high-risk one again with a person's grant of the approval it asks
// for, issued at issuedAt (the request's own time when zero) and decided
// at now (the fixture's own time when zero).
func fixturesWithGrant(t *testing.T, issuedAt, now int64) []Input {
	t.Helper()
	internal, _ := fixtureInput(t, "internal")
	public, _ := fixtureInput(t, "public")
	d, err := Authorize(public)
	if err != nil || d.Outcomes[0].ApprovalRequest == nil {
		t.Fatal("no approval request", err)
	}
	req := *d.Outcomes[0].ApprovalRequest
	if issuedAt == 0 {
		issuedAt = req.RequestedAt
	}
	granted := public
	granted.Approvals = []PresentedApproval{{Request: req, Approval: Grant(req, issuedAt), Approver: Approver{ID: "actor:fixture-approver", Kind: "human", Role: ApproverRole, Scopes: []string{"scope:artifact-publishers"}}}}
	if now != 0 {
		granted.Now = now
	}
	return []Input{internal, public, granted}
}
