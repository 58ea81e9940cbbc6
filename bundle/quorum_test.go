package bundle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

// policyBundle loads the refund example with its approver replaced by
// policy (members of the approval object, each followed by a comma).
func policyBundle(t *testing.T, policy string) (*Workflow, *Adapters) {
	t.Helper()
	return policyBundleWithGates(t, policy, "")
}

// policyBundleWithGates is policyBundle with rules added to the example's
// gate policy.
func policyBundleWithGates(t *testing.T, policy, gates string) (*Workflow, *Adapters) {
	t.Helper()
	dir := copyExample(t, "refund-agent")
	if gates != "" {
		appendTo(t, dir, "gates.dl", gates)
	}
	edit(t, dir, "workflow.json", `"approver": "finance-lead",`, policy)
	wf, ads, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return wf, ads
}

// groupBundleWith is the refund example with its approval policy naming
// the group finance-leads of alice, bob and carol, and more members of the
// policy (each followed by a comma).
func groupBundleWith(t *testing.T, more string) (*Workflow, *Adapters) {
	t.Helper()
	return policyBundle(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], `+more)
}

// groupBundle is groupBundleWith asking quorum people's approvals of each
// request.
func groupBundle(t *testing.T, quorum int) (*Workflow, *Adapters) {
	t.Helper()
	return groupBundleWith(t, fmt.Sprintf(`"quorum": %d,`, quorum))
}

// consumedFrom returns the grants of run's record and fails the test
// unless there is one from each of people (sorted) and no other, every one
// consumed by the run's one intent.
func (h *harness) consumedFrom(run string, people ...string) []store.Approval {
	h.t.Helper()
	ins := h.intents(run)
	grants := h.grants(run)
	if len(ins) != 1 {
		h.t.Fatalf("the run's grants: %v, intents %+v", grants, ins)
	}
	var by []string
	for _, g := range grants {
		if g.Status != store.ApprovalConsumed || g.ConsumedBy != ins[0].ID {
			h.t.Fatalf("grant %s is %s by %q, not consumed by the intent", g.ID, g.Status, g.ConsumedBy)
		}
		by = append(by, runner.GrantActor(g))
	}
	if slices.Sort(by); !slices.Equal(by, people) {
		h.t.Fatalf("the grants consumed are by %v, want %v", by, people)
	}
	return grants
}

// restart closes the harness's runner and puts in its place a new one
// over the same store, with wf loaded afresh and its adapters wired to the
// harness's destination; the new runner is closed with the test.
func (h *harness) restart(wf *Workflow, ads *Adapters) {
	h.t.Helper()
	if err := h.r.Close(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	reg, err := ads.Registry(func(string) string { return h.url })
	if err != nil {
		h.t.Fatal(err)
	}
	r2, err := runner.New(runner.Config{Store: h.st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "test-runner-2"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { r2.Close(context.Background()) })
	h.r = r2
}

// The four-eyes rule: a refund whose policy asks two people's approvals
// waits after the first, refuses the same person twice, pays once after
// the second, and consumes both grants with its intent; the record
// verifies and replays, and a record with one approval fewer, or two by
// one person, does not.
func TestRefundNeedsTwoApprovals(t *testing.T) {
	wf, ads := groupBundle(t, 2)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-quorum"
	h.start(run, refund("r-4001", 5000, "dave", "damaged"))
	s := h.status(run)
	if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 || s.Waiting[0].Quorum != 2 || len(s.Waiting[0].ApprovedBy) != 0 {
		t.Fatalf("state %s, waiting %+v", s.State, s.Waiting)
	}
	w := s.Waiting[0]
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	// Her second click before the run took the first: refused.
	var nw *runner.NotWaitingError
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 10*time.Minute); !errors.As(err, &nw) {
		t.Fatalf("alice's second approval, pending: %v", err)
	}
	h.idle()
	s = h.status(run)
	if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"alice"}) {
		t.Fatalf("after alice: state %s, waiting %+v", s.State, s.Waiting)
	}
	if len(h.intents(run)) != 0 || len(h.sb.Mutations()) != 0 {
		t.Fatal("one approval of two let the refund through")
	}
	if tr := h.trace(run, "approval_concurred"); len(tr) != 1 || !strings.Contains(tr[0]["detail"].(string), "alice approved") || !strings.Contains(tr[0]["detail"].(string), "(1 of 2)") {
		t.Fatalf("concurrence trace %v", tr)
	}
	// Her second approval after the run took the first: refused too.
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 10*time.Minute); !errors.As(err, &nw) || !strings.Contains(nw.What, "needs other people") {
		t.Fatalf("alice's second approval, taken: %v", err)
	}
	var ar *runner.ApproverRefusedError
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("mallory"), 10*time.Minute); !errors.As(err, &ar) {
		t.Fatalf("mallory's approval: %v", err)
	}
	h.approveAll(run, "bob")
	h.paid(run)
	ins := h.intents(run)
	grants := h.consumedFrom(run, "alice", "bob")
	if g, _ := h.st.Approval(h.ctx, ins[0].ApprovalID); runner.GrantActor(g) != "bob" {
		t.Fatalf("the intent names %s's grant, not the one that completed the quorum", runner.GrantActor(g))
	}
	h.checkRecord(run)

	db, err := sql.Open("sqlite", "file:"+h.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var aliceGrant string
	for _, g := range grants {
		if runner.GrantActor(g) == "alice" {
			aliceGrant = g.ID
		}
	}

	// A second grant by bob, consumed by the intent, forged into the ledger.
	forged := runner.Grant{Kind: runner.GrantKind, RunID: run, RequestID: w.RequestID, RequestDigest: w.RequestDigest, Actor: "bob",
		Role: "human_approver", Nonce: "forged", ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}
	body, err := cjson.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := forged.Expiry()
	if err := h.st.GrantApproval(h.ctx, store.Approval{ID: "grant:forged", RunID: run, RequestDigest: w.RequestDigest, Nonce: "forged",
		Body: body, Digest: store.BodyDigest(body), ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE approvals SET status = 'consumed', consumed_by = ? WHERE approval_id = 'grant:forged'`, ins[0].ID); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(h.ctx, h.st, control.Default(), run)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Findings, func(f verify.Finding) bool {
		return f.Check == "approval" && strings.Contains(f.Detail, `grant:forged is a second approval by "bob"`)
	}) {
		t.Fatalf("a second grant by bob went unnoticed: %+v", rep.Findings)
	}
	if _, err := db.Exec(`DELETE FROM approvals WHERE approval_id = 'grant:forged'`); err != nil {
		t.Fatal(err)
	}

	// Alice's grant set back as never used: one approval of two.
	if _, err := db.Exec(`UPDATE approvals SET status = 'granted', consumed_by = '' WHERE approval_id = ?`, aliceGrant); err != nil {
		t.Fatal(err)
	}
	h.replayFinds(h.wf, run, "consumed 1 approval(s); the workflow asks 2 people's approvals of this request", "a refund paid on one approval of two")
}

// An approval that lapses before the quorum is complete counts no more:
// the run asks for another, its giver may approve again, and the intent
// consumes the two that stand.
func TestQuorumApprovalLapses(t *testing.T) {
	wf, ads := groupBundle(t, 2)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-lapse"
	h.start(run, refund("r-4002", 5000, "erin", "damaged"))
	w := h.status(run).Waiting[0]
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.status(run); !slices.Equal(s.Waiting[0].ApprovedBy, []string{"alice"}) {
		t.Fatalf("after alice: %+v", s.Waiting)
	}
	time.Sleep(400 * time.Millisecond)
	// Her grant has lapsed: the run's status no longer counts it, she may
	// approve again, and the run counts the new grant in place of the old.
	if s := h.status(run); s.Waiting[0].Quorum != 2 || len(s.Waiting[0].ApprovedBy) != 0 {
		t.Fatalf("after alice's grant lapsed: %+v", s.Waiting)
	}
	h.approveAll(run, "alice")
	s := h.status(run)
	if s.State != "WAIT_APPROVAL" || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"alice"}) {
		t.Fatalf("after alice's second approval: state %s, %+v", s.State, s.Waiting)
	}
	if tr := h.trace(run, "approval_lapsed"); len(tr) != 1 || !strings.Contains(tr[0]["detail"].(string), "alice's approval") {
		t.Fatalf("lapse trace %v", tr)
	}
	// Now that hers stands, not a third time.
	var nw *runner.NotWaitingError
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 10*time.Minute); !errors.As(err, &nw) {
		t.Fatalf("alice's third approval: %v", err)
	}
	h.approveAll(run, "bob")
	if s := h.status(run); s.State != "SUCCEEDED" {
		t.Fatalf("after bob: %s", s.State)
	}
	h.consumedFrom(run, "alice", "bob")
	h.checkRecord(run)
}

// The approvals a run holds toward a quorum are in its checkpoint: a new
// runner, the bundle loaded afresh, takes the second and pays once.
func TestQuorumSurvivesARestart(t *testing.T) {
	wf, ads := groupBundle(t, 2)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-quorum-restart"
	h.start(run, refund("r-4003", 5000, "frank", "damaged"))
	h.approveAll(run, "carol")
	if s := h.status(run); s.State != "WAIT_APPROVAL" || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol"}) {
		t.Fatalf("after carol: %s %+v", s.State, s.Waiting)
	}
	h.restart(wf, ads)
	if s := h.status(run); !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol"}) || s.Waiting[0].Quorum != 2 {
		t.Fatalf("the new runner reads %+v", s.Waiting)
	}
	h.approveAll(run, "alice")
	h.paid(run)
	h.checkRecord(run)
}

// Maker-checker: whoever handed the run an input may not approve it, at
// the act and again when the run takes a grant; they may still deny.
// Replay holds a record to the rule.
func TestApprovalSeparatesDuties(t *testing.T) {
	wf, ads := groupBundleWith(t, `"separate_duties": true,`)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-maker"
	alice := runner.Actor{Name: "alice", Role: "operator", Capability: "run.start"}
	if err := h.r.StartAs(h.ctx, run, wf.ID(), wf.Version(), []byte(refund("r-5001", 5000, "gina", "damaged")), alice); err != nil {
		t.Fatal(err)
	}
	h.idle()
	w := h.status(run).Waiting[0]
	var ar *runner.ApproverRefusedError
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("alice"), 10*time.Minute); !errors.As(err, &ar) ||
		!strings.Contains(ar.Reason, "alice handed this run an input (event 2); the approval policy separates duties: someone else must approve") {
		t.Fatalf("alice approving the refund she asked for: %v", err)
	}
	// Carol approves, then hands the run an input before it takes her
	// grant: the run refuses the grant when it comes to it.
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("carol"), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	carolIn := runner.Actor{Name: "carol", Role: "operator", Capability: "run.submit"}
	if err := h.r.Submit(h.ctx, run, []byte(refund("r-5002", 10, "gina", "damaged")), carolIn); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.status(run); s.State != "WAIT_APPROVAL" || len(h.intents(run)) != 0 {
		t.Fatalf("carol's grant, given before her input, was used: %s", s.State)
	}
	if tr := h.trace(run, "approval_refused"); len(tr) != 1 || !strings.Contains(tr[0]["detail"].(string), "carol handed this run an input") {
		t.Fatalf("refusal trace %v", tr)
	}
	h.approveAll(run, "bob")
	if s := h.status(run); s.State != "SUCCEEDED" && s.State != "INGEST" {
		t.Fatalf("after bob's approval: %s", s.State)
	}
	ins := h.intents(run)
	if len(ins) == 0 || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
		t.Fatalf("intents %+v", ins)
	}
	if g, _ := h.st.Approval(h.ctx, ins[0].ApprovalID); runner.GrantActor(g) != "bob" {
		t.Fatalf("the refund rests on %s's grant", runner.GrantActor(g))
	}
	h.checkRecord(run)

	// A maker may deny what they asked for.
	h2 := newHarnessWith(t, wf, ads)
	if err := h2.r.StartAs(h2.ctx, "refund-maker-deny", wf.ID(), wf.Version(), []byte(refund("r-5003", 5000, "hal", "damaged")), alice); err != nil {
		t.Fatal(err)
	}
	h2.idle()
	if err := h2.r.Deny(h2.ctx, "refund-maker-deny", h2.status("refund-maker-deny").Waiting[0].RequestID, "asked in error",
		runner.Actor{Name: "alice", Role: "human_approver", Capability: "approval.deny"}); err != nil {
		t.Fatal(err)
	}
	h2.idle()
	if s := h2.status("refund-maker-deny"); s.State != "FAILED_PERMANENT" {
		t.Fatalf("after alice's denial: %s", s.State)
	}

	// A run recorded under a policy without the rule, where the maker
	// approved, is caught by replay under the one with it.
	plain, plainAds := groupBundleWith(t, "")
	h3 := newHarnessWith(t, plain, plainAds)
	if err := h3.r.StartAs(h3.ctx, "refund-self", plain.ID(), plain.Version(), []byte(refund("r-5004", 5000, "ian", "damaged")), alice); err != nil {
		t.Fatal(err)
	}
	h3.idle()
	h3.approveAll("refund-self", "alice")
	if s := h3.status("refund-self"); s.State != "SUCCEEDED" {
		t.Fatalf("without the rule, alice's own approval: %s", s.State)
	}
	h3.checkRecord("refund-self")
	rp, err := verify.Replay(h3.ctx, h3.st, wf, "refund-self")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rp.Findings, func(f verify.Finding) bool {
		return f.Check == "replay-approval" && strings.Contains(f.Detail, `was given by "alice", who handed the run an input`)
	}) {
		t.Fatalf("a maker's approval went unnoticed on replay: %+v", rp.Findings)
	}
}
