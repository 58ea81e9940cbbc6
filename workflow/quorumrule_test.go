package workflow

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// quorumGates are the refund example's gates with two quorum rules: two
// people approve a refund above 1,000, three one above 5,000.
func quorumGates(t testing.TB) string {
	t.Helper()
	return exampleGatesWith(t, `
.decl quorum(n: number, rule: symbol)
quorum(2, "g2.very-large-refund") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 1000.
quorum(3, "g2.huge-refund") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 5000.
`)
}

// exampleGatesWith is the refund example's gate policy with rules added.
func exampleGatesWith(t testing.TB, rules string) string {
	t.Helper()
	src, err := os.ReadFile("../examples/refund-agent/gates.dl")
	if err != nil {
		t.Fatal(err)
	}
	return string(src) + rules
}

// quorumBundle is the refund example with a group of three approvers,
// the approval policy's own quorum (nil: none) and the quorum rules.
func quorumBundle(t testing.TB, policyQuorum any) *Workflow {
	t.Helper()
	w, err := Compile(editBundle(t, func(m map[string]any) {
		a := m["approval"].(map[string]any)
		a["members"] = []any{"alice", "bob", "carol"}
		if policyQuorum != nil {
			a["quorum"] = policyQuorum
		}
	}, map[string]string{"gates.dl": quorumGates(t)}))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The gates say how many people approve each action: the request carries
// the quorum (the state keeps it, the effect's plan and the view say it,
// the turn's note names the rule), and a grant's re-authorization keeps
// it; the approval policy's own quorum is the least any request needs.
func TestGatesAskAQuorum(t *testing.T) {
	for _, c := range []struct {
		name         string
		policyQuorum any
		amount       int64
		planned      int    // the plan's quorum: the gates'
		shown        int    // the view's: the larger of the gates' and the policy's, 0 for one
		rule         string // the note's rule
	}{
		{"below the limits", nil, 700, 0, 0, ""},
		{"above 1,000", nil, 3000, 2, 2, "g2.very-large-refund"},
		{"above 5,000: the larger rule", nil, 8000, 3, 3, "g2.huge-refund"},
		{"the policy's two below the limits", int64(2), 700, 0, 2, ""},
		{"the policy's two and the gates' two", int64(2), 3000, 2, 2, "g2.very-large-refund"},
		{"the gates' three over the policy's two", int64(2), 8000, 3, 3, "g2.huge-refund"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := quorumBundle(t, c.policyQuorum)
			st, _ := w.Init("run-q")
			r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", c.amount, "bob", "late")})
			if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
				t.Fatalf("%v %v", err, outcomes(r))
			}
			need := *r.Effects[0].Approval
			if need.Quorum != c.planned {
				t.Fatalf("the plan asks %d people, want %d", need.Quorum, c.planned)
			}
			if got := bytes.Contains(r.State, []byte(`"quorum":`)); got != (c.planned > 0) {
				t.Fatalf("the state keeps a quorum: %v, want %v", got, c.planned > 0)
			}
			v, err := w.Inspect(r.State)
			if err != nil || len(v.Pending) != 1 || v.Pending[0].Quorum != c.shown {
				t.Fatalf("view %v %+v, want a quorum of %d", err, v.Pending, c.shown)
			}
			var note map[string]any
			for _, n := range r.Trace {
				if n.Kind == "h.outcome" {
					v, err := cjson.Decode(n.Body)
					if err != nil {
						t.Fatal(err)
					}
					note = v.(map[string]any)
				}
			}
			if note == nil {
				t.Fatal("no h.outcome note")
			}
			if c.rule == "" {
				if _, has := note["quorum"]; has {
					t.Fatalf("the note names a quorum no rule asked for: %v", note)
				}
			} else if note["quorum_rule"] != c.rule || note["quorum"] != int64(c.planned) {
				t.Fatalf("the note says %v by %v, want %d by %s", note["quorum"], note["quorum_rule"], c.planned, c.rule)
			}
			// A member's grant re-authorizes the planned intent, and the
			// need it answers keeps its quorum.
			e, err := w.AuthorizeApproved(r.State, need, grantFor(need, "alice", "human_approver"))
			if err != nil || e.Approval == nil || e.Approval.Quorum != c.planned || e.Intent.IntentID != need.IntentID {
				t.Fatalf("re-authorized %v %+v", err, e.Approval)
			}
			// A decision is a function of its inputs: the same state and
			// input give the same bytes.
			again, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", c.amount, "bob", "late")})
			if err != nil || !bytes.Equal(again.State, r.State) {
				t.Fatalf("decided again: %v, state differs", err)
			}
		})
	}
}

// Who may approve says what the gates may ask, for the workflow and for a
// request.
func TestWhoMayApproveWithTheGatesQuorum(t *testing.T) {
	w := quorumBundle(t, nil)
	for _, c := range []struct{ got, want string }{
		{w.WhoMayApprove(), "any one of alice, bob, carol (members of finance-lead); up to 3 of them where the gate policy asks"},
		{w.WhoMayApproveRequest("", 0), "any one of alice, bob, carol (members of finance-lead)"},
		{w.WhoMayApproveRequest("", 2), "2 of alice, bob, carol (members of finance-lead), each approving"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	if got := quorumBundle(t, int64(3)).WhoMayApprove(); got != "3 of alice, bob, carol (members of finance-lead), each approving" {
		t.Errorf("a policy quorum as large as the gates': %q", got)
	}
}

// A bundle whose gates ask more people than its approval policy can name
// does not compile: no run waits on a quorum no one can meet.
func TestGatesQuorumNeedsPeople(t *testing.T) {
	gates := map[string]string{"gates.dl": quorumGates(t)}
	for _, c := range []struct {
		name    string
		members []any
		want    string
	}{
		{"one approver", nil, `the gate policy (gates.dl) asks up to 3 people to approve (quorum), but approver "finance-lead" is one person`},
		{"two members", []any{"alice", "bob"}, `the gate policy (gates.dl) asks up to 3 people to approve (quorum), but "finance-lead" has 2 members`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(editBundle(t, func(m map[string]any) {
				if c.members != nil {
					m["approval"].(map[string]any)["members"] = c.members
				}
			}, gates))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeMalformed || e.Pointer != "/approval/members" || !strings.Contains(e.Detail, c.want) {
				t.Fatalf("error %v, want %s at /approval/members: %s", err, CodeMalformed, c.want)
			}
		})
	}
	// A quorum rule whose count is not written in its head is the gates'
	// own error, with its position.
	_, err := Compile(editBundle(t, nil, map[string]string{"gates.dl": ".decl quorum(n: number, rule: symbol)\nquorum(n, \"q\") :- param_num(t, \"amount\", n).\n"}))
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeBadGates || !strings.Contains(e.Detail, "gates.dl:2:1: quorum's count must be a number written in the rule's head") {
		t.Fatalf("error %v", err)
	}
}
