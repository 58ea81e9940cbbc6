package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store/sqlite"

	"flrh.dev/flrh/store"
)

// inboxLen is how many inbound rows the run has, consumed or not.
func (h *harness) inboxLen(id string) int {
	h.t.Helper()
	in, err := h.store.Inbox(ctx, id, false)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(in)
}

// A first input the workflow refuses is refused by Start, typed, and
// nothing is written: no run, no inbox row. The same input accepted by
// the workflow starts the run as before.
func TestStartRefusesAFirstInputTheWorkflowRefuses(t *testing.T) {
	h := newHarness(t)
	for _, input := range []string{`{"note":"not a refund"}`, `{"refunds":[]}`, `[1,2]`} {
		var refused *InputRefusedError
		err := h.r.StartAs(ctx, "run-bad", "refunds", "1", []byte(input), requester)
		if !errors.As(err, &refused) || refused.WorkflowID != "refunds" || !strings.Contains(refused.Reason, "not a refund request") {
			t.Fatalf("%s: err = %v", input, err)
		}
		if _, err := h.store.Run(ctx, "run-bad"); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("%s: a refused input left a run behind (%v)", input, err)
		}
	}
	// Input that is not JSON at all stays the error it was.
	if err := h.r.Start(ctx, "run-bad", "refunds", "1", []byte(`{`)); err == nil {
		t.Fatal("a first input that is not JSON was accepted")
	}
	h.start("run-bad", small)
	if r := h.run("run-bad"); r.State != "SUCCEEDED" {
		t.Fatalf("state %s", r.State)
	}
}

// A denial by someone who may not answer the request is refused before it
// is handed on: the run keeps waiting (the old code took it, and a denial
// fails the run for good).
func TestDenyByOneWhoMayNotApproveIsRefused(t *testing.T) {
	h := newHarness(t)
	h.start("run-d", large)
	st, err := h.r.Inspect(ctx, "run-d")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	head, inbox := h.run("run-d").Head, h.inboxLen("run-d")
	model := Actor{Name: "model", Role: "model", Capability: "approval.deny"}
	var ar *ApproverRefusedError
	if err := h.r.Deny(ctx, "run-d", st.Waiting[0].RequestID, "no", model); !errors.As(err, &ar) || ar.Actor != "model" || ar.RequestID != st.Waiting[0].RequestID {
		t.Fatalf("err = %v", err)
	}
	h.idle()
	if r := h.run("run-d"); r.State != "WAIT_APPROVAL" || r.Head != head || h.inboxLen("run-d") != inbox {
		t.Fatalf("a refused denial changed the run: %s, head %d (was %d)", r.State, r.Head, head)
	}
	if err := h.r.Deny(ctx, "run-d", st.Waiting[0].RequestID, "no", denier); err != nil {
		t.Fatal(err)
	}
	// A denial not yet taken ends the wait whatever comes with it: an
	// approval now is refused before it is stored, naming the denier.
	var nw *NotWaitingError
	for _, err := range []error{h.r.Approve(ctx, "run-d", st.Waiting[0].RequestID, approver, time.Minute),
		h.r.MayApprove(ctx, "run-d", st.Waiting[0].RequestID, approver)} {
		if want := "an approval of " + st.Waiting[0].RequestID + " (" + denier.Name + "'s denial has yet to be taken)"; !errors.As(err, &nw) || nw.What != want {
			t.Fatalf("an approval while a denial waits: %v, want %q", err, want)
		}
	}
	h.idle()
	if r := h.run("run-d"); r.State != "FAILED_PERMANENT" {
		t.Fatalf("state %s", r.State)
	}
}

// An approval and a denial at the same instant: the denial is always
// stored, and an approval only when written before it; one written after
// would be ignored by the run, which takes a denial first.
func TestApprovalAndDenialAtTheSameInstant(t *testing.T) {
	h := newHarness(t)
	for round := range 12 {
		run := fmt.Sprintf("run-ad-%d", round)
		h.start(run, large)
		st, err := h.r.Inspect(ctx, run)
		if err != nil || len(st.Waiting) != 1 {
			t.Fatalf("status %+v, %v", st, err)
		}
		req := st.Waiting[0].RequestID
		var approveErr, denyErr error
		var wg sync.WaitGroup
		wg.Go(func() { approveErr = h.r.Approve(ctx, run, req, approver, time.Minute) })
		wg.Go(func() { denyErr = h.r.Deny(ctx, run, req, "no", denier) })
		wg.Wait()
		var nw *NotWaitingError
		if denyErr != nil || approveErr != nil && !errors.As(approveErr, &nw) {
			t.Fatalf("round %d: approve %v, deny %v", round, approveErr, denyErr)
		}
		inbox, err := h.store.Inbox(ctx, run, false)
		if err != nil {
			t.Fatal(err)
		}
		var denied bool
		for _, e := range inbox {
			switch {
			case e.Kind == KindDeny:
				denied = true
			case e.Kind == KindApprove && denied:
				t.Fatalf("round %d: an approval stored after a denial", round)
			case e.Kind == KindApprove && approveErr != nil:
				t.Fatalf("round %d: a refused approval stored", round)
			}
		}
		h.idle()
		if r := h.run(run); r.State != "FAILED_PERMANENT" {
			t.Fatalf("round %d: state %s", round, r.State)
		}
	}
}

// offering offers options for proposal:1 alone and refuses any other
// choice, as a deliberating workflow does.
type offering struct{ chooser }

func (offering) ID() string { return "offering" }
func (w offering) Decide(state []byte, in Accepted) (Decision, error) {
	if in.Kind == KindChoice && !strings.Contains(string(in.Body), `"proposal_id":"proposal:1"`) {
		return Decision{State: state, Completion: Continue, Refusal: "no options are pending for that proposal"}, nil
	}
	return w.chooser.Decide(state, in)
}

// A choice the run is not waiting for is refused up front and never
// reaches the inbox; one it waits for is carried as before.
func TestChooseRefusesAChoiceTheRunDoesNotOffer(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{offering{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "c", "offering", "1", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.RunToIdle(ctx); err != nil {
		t.Fatal(err)
	}
	op := Actor{Name: "olga", Role: "operator", Capability: "mrp.choose_option"}
	inbox := h.inboxLen("c")
	var nw *NotWaitingError
	if err := r.Choose(ctx, "c", "proposal:9", "path:a", op); !errors.As(err, &nw) || !strings.Contains(nw.What, "no options are pending") {
		t.Fatalf("err = %v", err)
	}
	if n := h.inboxLen("c"); n != inbox {
		t.Fatalf("a refused choice reached the inbox (%d rows, was %d)", n, inbox)
	}
	if err := r.Choose(ctx, "c", "proposal:1", "path:a", op); err != nil {
		t.Fatal(err)
	}
	if n := h.inboxLen("c"); n != inbox+1 {
		t.Fatalf("%d inbox rows, want %d", n, inbox+1)
	}
}

// Every act on a run that has ended is refused with EndedError, naming
// the outcome, and writes nothing.
func TestActsOnAnEndedRunAreRefused(t *testing.T) {
	h := newHarness(t)
	h.start("done", small)
	run := h.run("done")
	if run.Outcome == "" {
		t.Fatalf("run did not end: %s", run.State)
	}
	inbox := h.inboxLen("done")
	acts := map[string]func() error{
		"approve":   func() error { return h.r.Approve(ctx, "done", "approval:r1", approver, time.Hour) },
		"deny":      func() error { return h.r.Deny(ctx, "done", "approval:r1", "no", denier) },
		"cancel":    func() error { return h.r.Cancel(ctx, "done", "stop", requester) },
		"reconcile": func() error { return h.r.Reconcile(ctx, "done", "intent:x", "abandon", reconciler) },
		"choose":    func() error { return h.r.Choose(ctx, "done", "proposal:1", "path:a", approver) },
		"control":   func() error { return h.r.Control(ctx, "done", "PAUSE", "", "", approver) },
		"submit":    func() error { return h.r.Submit(ctx, "done", []byte(small), requester) },
		"submit and advance": func() error {
			_, err := h.r.SubmitAdvance(ctx, "done", []byte(small), requester)
			return err
		},
	}
	for name, act := range acts {
		var ended *EndedError
		if err := act(); !errors.As(err, &ended) || ended.Outcome != run.Outcome || !strings.Contains(err.Error(), "has ended") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if n := h.inboxLen("done"); n != inbox {
		t.Fatalf("acts on an ended run wrote %d inbox rows", n-inbox)
	}
	if r := h.run("done"); r.Head != run.Head {
		t.Fatalf("head moved from %d to %d", run.Head, r.Head)
	}
}

// endsFirst ends its run (as a cancellation another runner committed
// would) right before the next Submit reaches the store.
type endsFirst struct {
	*sqlite.Store
	t    *testing.T
	once sync.Once
}

func (s *endsFirst) Submit(ctx context.Context, in store.Inbound) error {
	s.once.Do(func() {
		run, err := s.Store.Run(ctx, in.RunID)
		mustOK(s.t, err)
		l, err := s.Store.AcquireLease(ctx, in.RunID, "elsewhere", time.Minute)
		mustOK(s.t, err)
		mustOK(s.t, s.Store.Commit(ctx, l, store.Tick{ExpectHead: run.Head, Outcome: "canceled", State: "CANCELED"}))
	})
	return s.Store.Submit(ctx, in)
}

// An approval the run refuses because it ended between the approver's
// check and the write is refused whole: EndedError, and no grant left in
// the approvals ledger without the entry that would have handed it over.
func TestAnApprovalARunEndedMeanwhileLeavesNoGrant(t *testing.T) {
	h := newHarness(t)
	h.start("run-e", large)
	st, err := h.r.Inspect(ctx, "run-e")
	mustOK(t, err)
	if len(st.Waiting) != 1 {
		t.Fatalf("waiting %+v", st.Waiting)
	}
	r := h.runnerOver(&endsFirst{Store: h.store, t: t}, "")
	var ended *EndedError
	if err := r.Approve(ctx, "run-e", st.Waiting[0].RequestID, approver, time.Hour); !errors.As(err, &ended) {
		t.Fatalf("approval of a run ended meanwhile: %v", err)
	}
	var grants int
	mustOK(t, h.store.DB().QueryRow(`SELECT count(*) FROM approvals`).Scan(&grants))
	if grants != 0 {
		t.Fatalf("the refused approval left %d grants in the ledger", grants)
	}
}
