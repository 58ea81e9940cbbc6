package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/internal/pgtest"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// boardRule sends refunds above 1,000 to the panel board.
var boardRule = largeRefundsTo("board")

// boardPolicy knows treasury (carol, dave, frank) and legal (dave, erin),
// and the board of both; dave is in both groups.
const boardPolicy = `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave", "frank"], "legal": ["dave", "erin"]},
	"panels": {"board": ["treasury", "legal"]},`

// A refund the gates send to a panel waits until a member of each of its
// groups, each a different person, has approved: a second member of a
// group already answered for is refused before anything is stored (and
// ignored by the run if it came anyway), a person in both groups answers
// for one, whichever the others leave. Each run pays once, its intent
// consuming the grants that made the panel; the records verify and
// replay, and a record whose grants leave a group unanswered does not.
func TestPanelApprovesARefund(t *testing.T) {
	wf, ads := policyBundleWithGates(t, boardPolicy, boardRule)
	h := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })
	var nw *runner.NotWaitingError
	var ar *runner.ApproverRefusedError
	const who = "one member of each of treasury (carol, dave, frank) and legal (dave, erin), each a different person (panel board)"

	const run = "refund-board"
	h.claimNotices()
	h.start(run, refund("r-7001", 3000, "zoe", "damaged"))
	w := h.status(run).Waiting[0]
	if w.Approver != "board" || w.Quorum != 2 || w.WhoMayApprove != who || w.Awaiting != "a member of treasury and a member of legal" {
		t.Fatalf("the board's approval: %+v", w)
	}
	var told store.NoticeBody
	if ns := h.claimNotices(); len(ns) != 1 || json.Unmarshal(ns[0].Body, &told) != nil || told.Approvers != who {
		t.Fatalf("the notice: %+v", ns)
	}
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("finance-lead"), 10*time.Minute); !errors.As(err, &ar) {
		t.Fatalf("finance-lead approving for the board: %v", err)
	}
	h.approveAll(run, "carol")
	if s := h.status(run); s.State != "WAIT_APPROVAL" || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol"}) || s.Waiting[0].Awaiting != "a member of legal" || len(h.intents(run)) != 0 {
		t.Fatalf("after carol: %s %+v", s.State, s.Waiting)
	}
	if tr := h.trace(run, "approval_concurred"); len(tr) != 1 || !strings.HasSuffix(tr[0]["detail"].(string), "(1 of 2): it waits for a member of legal") {
		t.Fatalf("concurrence trace %v", tr)
	}
	before := len(h.grants(run))
	err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("frank"), 10*time.Minute)
	if !errors.As(err, &nw) || !strings.Contains(nw.What, "the run holds carol's; it waits for a member of legal") {
		t.Fatalf("frank, of treasury, after carol: %v", err)
	}
	if err := h.r.MayApprove(h.ctx, run, w.RequestID, runner.ApproverActor("frank")); !errors.As(err, &nw) {
		t.Fatalf("may frank approve? %v", err)
	}
	if n := len(h.grants(run)); n != before {
		t.Fatalf("a refused approval stored %d grants", n-before)
	}
	// dave, in both groups, answers for legal beside carol.
	h.approveAll(run, "dave")
	h.paid(run)
	grants := h.consumedFrom(run, "carol", "dave")
	h.checkRecord(run)

	// dave first stands for treasury; erin then answers for legal.
	h.start("refund-board-2", refund("r-7002", 3000, "zoe", "damaged"))
	h.approveAll("refund-board-2", "dave")
	h.approveAll("refund-board-2", "erin")
	h.paid("refund-board-2")
	h.consumedFrom("refund-board-2", "dave", "erin")
	h.checkRecord("refund-board-2")

	// dave first, then carol: dave moves to legal so that carol answers
	// for treasury.
	h.start("refund-board-3", refund("r-7003", 3000, "zoe", "damaged"))
	h.approveAll("refund-board-3", "dave")
	h.approveAll("refund-board-3", "carol")
	h.paid("refund-board-3")
	h.consumedFrom("refund-board-3", "carol", "dave")

	// Two members of treasury at once: while carol's grant waits to be
	// taken, frank's is refused, counting hers.
	const both = "refund-board-4"
	h.start(both, refund("r-7004", 3000, "zoe", "damaged"))
	w4 := h.status(both).Waiting[0]
	if err := h.r.Approve(h.ctx, both, w4.RequestID, runner.ApproverActor("carol"), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	err = h.r.Approve(h.ctx, both, w4.RequestID, runner.ApproverActor("frank"), 10*time.Minute)
	if !errors.As(err, &nw) || !strings.Contains(nw.What, "the run has yet to take carol's; it waits for a member of legal") {
		t.Fatalf("frank while carol's grant waits to be taken: %v", err)
	}
	// One that reaches the run anyway (handed in behind Approve's
	// checks, as by a runner that had yet to see carol's) is ignored.
	h.handGrant(both, w4, "frank")
	h.idle()
	if s := h.status(both); s.State != "WAIT_APPROVAL" || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol"}) {
		t.Fatalf("after carol and frank together: %s %+v", s.State, s.Waiting)
	}
	if tr := h.trace(both, "approval_ignored"); len(tr) != 1 || !strings.Contains(tr[0]["detail"].(string), "frank's approval of "+w4.RequestID+" adds nothing to those the run holds (carol): it waits for a member of legal") {
		t.Fatalf("ignored trace %v", tr)
	}
	h.approveAll(both, "erin")
	h.paid(both)
	h.consumedFrom(both, "carol", "erin")
	h.checkRecord(both)

	// The first run's dave rewritten as frank (its digest made to match):
	// both grants are treasury's, and replay, which has the bundle, says
	// legal went unanswered.
	var dave store.Approval
	for _, g := range grants {
		if runner.GrantActor(g) == "dave" {
			dave = g
		}
	}
	h.regive(dave, "frank")
	h.replayFinds(h.wf, run, "the request names a panel, and they leave it short of a member of legal", "a board approved by treasury alone")
}

// Two of treasury and one of legal: a panel listing treasury twice takes
// a second member of treasury, refuses a third, and pays once legal has
// answered; the intent consumes the three grants.
func TestPanelAsksTwoOfAGroup(t *testing.T) {
	wf, ads := policyBundleWithGates(t, `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave", "frank"], "legal": ["erin", "gina"]},
	"panels": {"board": ["treasury", "legal", "treasury"]},`, boardRule)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-pair"
	h.start(run, refund("r-7101", 3000, "zoe", "damaged"))
	w := h.status(run).Waiting[0]
	if w.Quorum != 3 || w.WhoMayApprove != "2 of treasury (carol, dave, frank) and one of legal (erin, gina), each a different person (panel board)" ||
		w.Awaiting != "2 members of treasury and a member of legal" {
		t.Fatalf("the approval: %+v", w)
	}
	h.approveAll(run, "carol")
	h.approveAll(run, "frank")
	if s := h.status(run); s.State != "WAIT_APPROVAL" || !slices.Equal(s.Waiting[0].ApprovedBy, []string{"carol", "frank"}) || s.Waiting[0].Awaiting != "a member of legal" {
		t.Fatalf("after carol and frank: %s %+v", s.State, s.Waiting)
	}
	var nw *runner.NotWaitingError
	if err := h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor("dave"), 10*time.Minute); !errors.As(err, &nw) || !strings.Contains(nw.What, "it waits for a member of legal") {
		t.Fatalf("a third of treasury: %v", err)
	}
	h.approveAll(run, "gina")
	h.paid(run)
	h.consumedFrom(run, "carol", "frank", "gina")
	h.checkRecord(run)
}

// handGrant hands run a grant of the request need from actor, with the
// entry that tells the run, straight to the store: past every check
// Runner.Approve makes, as a grant another runner let through would be.
func (h *harness) handGrant(run string, need runner.ApprovalNeed, actor string) {
	h.t.Helper()
	g := runner.Grant{Kind: runner.GrantKind, RunID: run, RequestID: need.RequestID, RequestDigest: need.RequestDigest, Actor: actor,
		Role: "human_approver", Nonce: "handed-" + actor, ExpiresAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)}
	body, err := cjson.Marshal(g)
	if err != nil {
		h.t.Fatal(err)
	}
	exp, _ := g.Expiry()
	grant := store.Approval{ID: "grant:" + g.Nonce, RunID: run, RequestDigest: need.RequestDigest, Nonce: g.Nonce, Body: body,
		Digest: store.BodyDigest(body), ExpiresAt: exp}
	tell, err := cjson.Marshal(map[string]any{"approval_id": grant.ID})
	if err != nil {
		h.t.Fatal(err)
	}
	digest, proof := store.ProveDigest(tell)
	by := runner.ApproverActor(actor)
	in := store.Inbound{ID: "approve:handed-" + actor, RunID: run, Kind: runner.KindApprove, ActorRole: by.Role, Actor: by.Name,
		Capability: by.Capability, Body: tell, Digest: digest, Proof: proof, Grant: &grant}
	if err := h.st.Submit(h.ctx, in); err != nil {
		h.t.Fatal(err)
	}
}

// People approving at the same instant are each checked against the
// others' approvals: a request that one grant answers stores one grant,
// a panel of two of treasury and one of legal stores two of treasury and
// one of legal, and every other person is told the request does not wait
// for them; the run ignores nothing and pays once.
func TestApprovalsAtTheSameInstant(t *testing.T) {
	staff := []string{"ada", "bea", "cal", "dom", "eve", "fay", "gus", "hal", "ivy", "jon"}
	const groups = `"approver": "finance-lead", "groups": {"treasury": ["carol", "dave", "frank"], "legal": ["erin", "gina"],
	"staff": ["ada", "bea", "cal", "dom", "eve", "fay", "gus", "hal", "ivy", "jon"]},
	"panels": {"board": ["treasury", "legal", "treasury"], "all-hands": ["staff", "staff", "staff", "staff", "staff", "staff", "staff", "staff", "staff", "staff"]},`
	everyone := []string{"carol", "dave", "erin", "frank", "gina"}
	treasury := []string{"carol", "dave", "frank"}
	for _, c := range []struct {
		name, rule string
		people     []string
		stored     func(by []string) bool
	}{
		{"a group", treasuryRule, treasury, func(by []string) bool { return len(by) == 1 }},
		{"a panel", boardRule, everyone, func(by []string) bool {
			inTreasury := slices.DeleteFunc(slices.Clone(by), func(p string) bool { return !slices.Contains(treasury, p) })
			return len(by) == 3 && len(inTreasury) == 2
		}},
		// Ten people at once, each wanted: every one is stored, however
		// many times another's write overtakes theirs.
		{"a panel of ten", largeRefundsTo("all-hands"), staff, func(by []string) bool { return slices.Equal(by, staff) }},
	} {
		for _, backend := range []string{"sqlite", "postgres"} {
			t.Run(backend+"/"+c.name, func(t *testing.T) {
				wf, ads := policyBundleWithGates(t, groups, c.rule)
				h := newHarnessOn(t, backend, wf, ads)
				approveAtOnce(t, h, c.people, c.stored)
			})
		}
	}
}

// approveAtOnce starts four runs in turn, each a refund waiting for an
// approval, has people approve each at the same instant, and checks that
// the approvals stored are those stored accepts, that the run pays
// consuming exactly them, and that it ignored none.
func approveAtOnce(t *testing.T, h *harness, people []string, stored func(by []string) bool) {
	t.Helper()
	for round := range 4 {
		run := fmt.Sprintf("refund-at-once-%d", round)
		h.start(run, refund(fmt.Sprintf("r-72%02d", round), 3000, "zoe", "damaged"))
		w := h.status(run).Waiting[0]
		errs := make([]error, len(people))
		var wg sync.WaitGroup
		for i, p := range people {
			wg.Go(func() { errs[i] = h.r.Approve(h.ctx, run, w.RequestID, runner.ApproverActor(p), 10*time.Minute) })
		}
		wg.Wait()
		var by []string
		for i, err := range errs {
			var nw *runner.NotWaitingError
			switch {
			case err == nil:
				by = append(by, people[i])
			case !errors.As(err, &nw):
				t.Fatalf("%s: %v", people[i], err)
			}
		}
		slices.Sort(by)
		if !stored(by) {
			t.Fatalf("round %d: approvals taken from %v", round, by)
		}
		h.idle()
		h.paid(run)
		h.consumedFrom(run, by...)
		if tr := h.trace(run, "approval_ignored"); len(tr) != 0 {
			t.Fatalf("round %d: the run ignored %v", round, tr)
		}
	}
}

// newHarnessOn is newHarnessWith on backend: the embedded store, or a
// schema of its own in the PostgreSQL that FLRH_TEST_POSTGRES names
// (pgtest; skipped with a message when it is unset).
func newHarnessOn(t *testing.T, backend string, wf *Workflow, ads *Adapters) *harness {
	t.Helper()
	if backend == "sqlite" {
		return newHarnessWith(t, wf, ads)
	}
	st := pgtest.Handles(t, 1, "flrh_bundle_", "run the bundle's tests on PostgreSQL")[0]
	h := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Store = st })
	h.st = st
	return h
}
