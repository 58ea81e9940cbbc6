package bundle

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// quorumRules ask two of the group to approve a refund above 1,000, and
// three one above 5,000.
const quorumRules = `
.decl quorum(n: number, rule: symbol)
quorum(2, "g2.very-large-refund") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 1000.
quorum(3, "g2.huge-refund") :- action(t, "refund.pay"), param_num(t, "amount", n), n > 5000.
`

// The gates say how many people approve each refund: one below 1,000,
// two above, three above 5,000. Each run waits for as many grants as its
// request's quorum, pays once, and its intent consumes them all; the
// quorum a request was planned with is in the run's checkpoint, so a new
// runner keeps to it. Every record verifies and replays.
func TestGatesAskMorePeopleOfALargerRefund(t *testing.T) {
	wf, ads := policyBundleWithGates(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"],`, quorumRules)
	if got := wf.WhoMayApprove(); got != "any one of alice, bob, carol (members of finance-leads); up to 3 of them where the gate policy asks" {
		t.Fatalf("who may approve: %q", got)
	}
	h := newHarnessWith(t, wf, ads)
	for _, c := range []struct {
		run    string
		amount int
		people []string // who approve, in order
	}{
		{"refund-small", 700, []string{"alice"}},
		{"refund-large", 3000, []string{"bob", "alice"}},
	} {
		h.start(c.run, refund("r-"+c.run, c.amount, "dave", "damaged"))
		for i, who := range c.people {
			s := h.status(c.run)
			want := len(c.people)
			if want == 1 {
				want = 0 // a view says nothing of a quorum of one
			}
			if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 || s.Waiting[0].Quorum != want || len(s.Waiting[0].ApprovedBy) != i {
				t.Fatalf("%s before %s's approval: %s %+v", c.run, who, s.State, s.Waiting)
			}
			if len(h.intents(c.run)) != 0 || len(h.sb.Mutations()) != map[string]int{"refund-small": 0, "refund-large": 1}[c.run] {
				t.Fatalf("%s: %d approval(s) of %d let the refund through", c.run, i, len(c.people))
			}
			h.approveAll(c.run, who)
		}
		h.paid(c.run)
		sorted := slices.Sorted(slices.Values(c.people))
		h.consumedFrom(c.run, sorted...)
		h.checkRecord(c.run)
	}
	if tr := h.trace("refund-large", "h.outcome"); !slices.ContainsFunc(tr, func(n map[string]any) bool {
		return n["quorum_rule"] == "g2.very-large-refund" && n["quorum"] == float64(2)
	}) {
		t.Fatalf("the turn's outcome does not say which rule asked for two people: %v", tr)
	}

	// Three for 8,000: carol's grant, then a new runner (the bundle as
	// before, whose approval policy asks one) keeps to the three the
	// request was planned with.
	const huge = "refund-huge"
	h.start(huge, refund("r-huge", 8000, "erin", "damaged"))
	h.approveAll(huge, "carol")
	h.restart(wf, ads)
	if s := h.status(huge); s.State != "WAIT_APPROVAL" || s.Waiting[0].Quorum != 3 || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol"}) {
		t.Fatalf("the new runner reads %s %+v", s.State, s.Waiting)
	}
	h.approveAll(huge, "alice")
	if s := h.status(huge); s.State != "WAIT_APPROVAL" || len(h.intents(huge)) != 0 {
		t.Fatalf("two approvals of three: %s, %d intents", s.State, len(h.intents(huge)))
	}
	h.approveAll(huge, "bob")
	h.paid(huge)
	h.consumedFrom(huge, "alice", "bob", "carol")
	h.checkRecord(huge)
}

// A record made under gates that asked one person is not what these gates
// decide: replaying it with them finds the refund paid on too few
// approvals.
func TestReplayHoldsARecordToTheGatesQuorum(t *testing.T) {
	policy := `"approver": "finance-leads", "members": ["alice", "bob", "carol"],`
	before, ads := policyBundleWithGates(t, policy, "")
	h := newHarnessWith(t, before, ads)
	const run = "refund-one-of-two"
	h.start(run, refund("r-5001", 3000, "dave", "damaged"))
	h.approveAll(run, "alice")
	h.paid(run)
	h.checkRecord(run)
	after, _ := policyBundleWithGates(t, policy, quorumRules)
	h.replayFinds(after, run, "consumed 1 approval(s); the workflow asks 2 people's approvals of this request", "a refund paid on one approval, under gates that ask two,")
}

// An approval's notice says who may approve the request it tells of: the
// quorum the gates asked of it; the catch-up tells the same, byte for byte.
func TestNoticeSaysTheGatesQuorum(t *testing.T) {
	wf, ads := policyBundleWithGates(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"],`, quorumRules)
	noticing := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })
	quiet := newHarnessWith(t, wf, ads)
	for _, h := range []*harness{noticing, quiet} {
		h.start("refund-small", refund("r-6001", 700, "dave", "damaged"))
		h.start("refund-large", refund("r-6002", 3000, "dave", "damaged"))
	}
	want := noticing.claimNotices()
	says := map[string]string{}
	for _, n := range want {
		var b store.NoticeBody
		if err := json.Unmarshal(n.Body, &b); err != nil || b.Kind != store.NoticeApproval {
			t.Fatalf("notice %+v: %v", n, err)
		}
		says[b.RunID] = b.Approvers
	}
	if len(want) != 2 || says["refund-small"] != "any one of alice, bob, carol (members of finance-leads)" ||
		says["refund-large"] != "2 of alice, bob, carol (members of finance-leads), each approving" {
		t.Fatalf("the notices say %q", says)
	}
	if n, err := quiet.r.TellWaiting(quiet.ctx, time.Time{}, time.Time{}); err != nil || n != 2 {
		t.Fatalf("told of %d runs (%v), want 2", n, err)
	}
	got := quiet.claimNotices()
	key := func(n store.Notice) string { return n.ID }
	slices.SortFunc(got, func(a, b store.Notice) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want, func(a, b store.Notice) int { return strings.Compare(key(a), key(b)) })
	if len(got) != 2 || got[0].ID != want[0].ID || string(got[0].Body) != string(want[0].Body) || string(got[1].Body) != string(want[1].Body) {
		t.Fatalf("told of %+v,\nwant %+v", got, want)
	}
}
