package runner

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/panel"
	"flrh.dev/flrh/store"
)

// Actor is an authenticated person or program acting on a run. The server
// and CLI fill it from credentials, never from what a client claims.
type Actor struct {
	Name       string
	Role       string // e.g. human_approver, human_reconciler, authorized_requester
	Capability string // the capability the role exercises for this act
}

// Status is what a person needs to see of a run: where it stands and what it
// waits for.
type Status struct {
	Run      store.Run
	State    string
	Waiting  []ApprovalNeed // approvals the run waits on
	Unknown  []string       // intents whose outcome a person must reconcile
	Offered  []string       // proposals waiting for a person to choose among options (an Offerer's)
	Open     int            // effects planned and not yet closed
	Accepted int64
	View     any           // the workflow's own view of its state (a Viewer), nil without one
	Budget   *BudgetStatus // the run's budget account as of its latest checkpoint, nil before it kept one
}

// Inspect reads a run's status from its latest checkpoint. What it derives
// from a checkpoint is kept (see statusCache): reading the same checkpoint
// again costs a hash of its bytes instead of a decode. Status.View may be
// shared with other callers and must not be modified.
func (r *Runner) Inspect(ctx context.Context, runID string) (Status, error) {
	run, stored, found, err := r.readRun(ctx, runID)
	if err != nil && run.ID == "" {
		return Status{}, err
	}
	st := Status{Run: run, State: run.State}
	wf, werr := r.workflow(run)
	if werr != nil {
		return st, werr
	}
	if err != nil {
		return st, err
	}
	if !found {
		return st, nil
	}
	d, ok := r.statuses.get(runID, stored, wf)
	if !ok {
		if d, err = derive(stored, wf); err != nil {
			return st, err
		}
		r.statuses.put(runID, d)
	}
	st.Accepted, st.Open, st.View, st.Budget = d.accepted, d.open, d.view, d.budget
	st.Waiting = slices.Clone(d.waiting)
	st.Unknown = slices.Clone(d.unknown)
	st.Offered = slices.Clone(d.offered)
	if err := r.standing(ctx, st.Waiting); err != nil {
		return st, err
	}
	for i, w := range st.Waiting {
		if groups := PanelOf(wf, w); groups != nil {
			st.Waiting[i].Awaiting = panel.Awaited(panel.Unanswered(groups, w.ApprovedBy))
		}
	}
	return st, nil
}

// standing leaves in each waiting approval's ApprovedBy only the people
// whose grants toward its quorum still stand now: the checkpoint keeps a
// grant until the run's next look at the quorum (concur), and one that
// lapsed meanwhile (expired, revoked) no longer counts. The approvals are
// the caller's copies; their lists are not shared with the cache.
func (r *Runner) standing(ctx context.Context, waiting []ApprovalNeed) error {
	now := r.cfg.Clock()
	for i := range waiting {
		w := &waiting[i]
		if len(w.ApprovedBy) == 0 {
			continue
		}
		var by, with []string
		for k, id := range w.approvedWith {
			why, err := r.lapsed(ctx, id, now)
			if err != nil {
				return err
			}
			if why == "" {
				by, with = append(by, w.ApprovedBy[k]), append(with, id)
			}
		}
		w.ApprovedBy, w.approvedWith = by, with
	}
	return nil
}

// maxRereads bounds how often readRun reads a run again that keeps moving.
const maxRereads = 8

// readRun reads a run's header and its latest checkpoint as of one commit.
// The two are separate reads, and a commit may land between them: a header
// from before it beside a checkpoint from after it would show, say, a run
// still PLANNING that already waits for an approval. Every commit that
// moves the head writes the checkpoint that follows the new head in the
// same transaction, so the pair is consistent when the checkpoint follows
// the header's head (no checkpoint: head 0). When it does not, the header
// is read again: if it moved, the pair is read anew; if it stayed, the
// store itself holds them apart (a run quarantined for exactly that) and
// the pair is returned as it is, for the caller to show or refuse. A run
// that keeps moving past maxRereads is returned as last read. found is
// false when the run has no checkpoint; a Run error leaves run zero.
func (r *Runner) readRun(ctx context.Context, runID string) (run store.Run, stored store.Checkpoint, found bool, err error) {
	if run, err = r.cfg.Store.Run(ctx, runID); err != nil {
		return store.Run{}, store.Checkpoint{}, false, err
	}
	for attempt := 0; ; attempt++ {
		stored, err = r.cfg.Store.Checkpoint(ctx, runID)
		found = err == nil
		if store.CodeOf(err) == store.CodeNotFound {
			stored, err = store.Checkpoint{}, nil
		} else if err != nil {
			return run, store.Checkpoint{}, false, err
		}
		if stored.Seq == run.Head || attempt == maxRereads {
			return run, stored, found, nil
		}
		again, err := r.cfg.Store.Run(ctx, runID)
		if err != nil {
			return run, store.Checkpoint{}, false, err
		}
		if again.Head == run.Head && again.State == run.State {
			return again, stored, found, nil
		}
		run = again
	}
}

// derived is what Inspect reads out of one checkpoint.
type derived struct {
	seq            int64
	digest         string // the checkpoint's digest, checked against its bytes
	format         int64
	workflowDigest string
	accepted       int64
	open           int
	waiting        []ApprovalNeed
	unknown        []string
	offered        []string
	view           any
	budget         *BudgetStatus
}

// derive decodes a checkpoint, refusing one it cannot trust, and reads the
// status out of it.
func derive(stored store.Checkpoint, wf Workflow) (derived, error) {
	cp, err := decodeCheckpoint(stored, wf)
	if err != nil {
		return derived{}, err
	}
	d := derived{seq: stored.Seq, digest: stored.Digest, format: stored.FormatVersion, workflowDigest: wf.Digest(),
		accepted: cp.Accepted, open: len(cp.Open), budget: cp.Budget.status()}
	if v, ok := wf.(Viewer); ok {
		if state, err := cp.stateBytes(); err == nil {
			if view, err := v.View(state); err == nil {
				d.view = view
			}
		}
	}
	if o, ok := wf.(Offerer); ok {
		state, err := cp.stateBytes()
		if err == nil {
			d.offered, err = o.Offered(state)
		}
		if err != nil {
			return derived{}, fmt.Errorf("the workflow's state: %w", err)
		}
	}
	for _, e := range cp.Open {
		switch e.Stage {
		case stageAwaitingApproval:
			if e.ApprovalID == "" {
				need := *e.Approval
				if q := QuorumOf(wf, need); q > 1 {
					need.Quorum = q
					for _, c := range e.Concurring {
						need.ApprovedBy = append(need.ApprovedBy, c.Actor)
						need.approvedWith = append(need.approvedWith, c.ApprovalID)
					}
				}
				need.WhoMayApprove = approversOf(wf, need)
				d.waiting = append(d.waiting, need)
			}
		case stageUnknown:
			d.unknown = append(d.unknown, e.IntentID)
		}
	}
	return d, nil
}

// statusCache keeps, per run, what Inspect derived from the run's latest
// checkpoint it read. A checkpoint never changes once written, and an entry
// is used only for a checkpoint with the same position, format, digest and
// workflow whose bytes still hash to that digest — the bytes the entry was
// derived from — so a hit answers exactly what decoding would, including
// refusing a checkpoint whose bytes were altered. Run pages, approval
// checks and metrics read waiting runs' checkpoints over and over while
// they wait; decoding and re-encoding one was the larger part of a page.
type statusCache struct {
	mu sync.Mutex
	m  map[string]derived
}

// maxStatuses bounds the cache; past it an arbitrary entry makes room.
const maxStatuses = 4096

func (c *statusCache) get(runID string, stored store.Checkpoint, wf Workflow) (derived, bool) {
	c.mu.Lock()
	d, ok := c.m[runID]
	c.mu.Unlock()
	if !ok || d.seq != stored.Seq || d.digest != stored.Digest || d.format != stored.FormatVersion || d.workflowDigest != wf.Digest() {
		return derived{}, false
	}
	return d, store.BodyDigest(stored.Body) == d.digest
}

func (c *statusCache) put(runID string, d derived) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]derived{}
	}
	if _, ok := c.m[runID]; !ok && len(c.m) >= maxStatuses {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[runID] = d
}

// Approve grants the approval a run waits on, bound to the exact request
// digest, and tells the run. The grant is one-time and expires after ttl.
// An approver the request does not allow (ApproverRefusedError), a run
// that has ended (EndedError) or a request the run does not wait on
// (NotWaitingError) is refused before the grant is stored.
func (r *Runner) Approve(ctx context.Context, runID, requestID string, by Actor, ttl time.Duration) error {
	// The grant is recorded with the entry that hands it to the run, in
	// one write: a run that ended or was parked meanwhile refuses both,
	// and no grant stays behind without the act that made it. The write
	// holds to the approvals the checks saw (submitGuarded): another
	// person's approving at the same instant refuses it, and the checks,
	// run again, see that approval (one that leaves this one nothing to
	// add refuses it then, and the person is told why).
	return r.submitGuarded(ctx, runID, []string{KindApprove, KindDeny}, func(inbox []store.Inbound) (store.Inbound, error) {
		grant, err := r.checkApproval(ctx, runID, requestID, by, ttl, inbox)
		if err != nil {
			return store.Inbound{}, err
		}
		in, err := r.inbound(runID, KindApprove, by, map[string]any{"approval_id": grant.ID})
		in.Grant = &grant
		return in, err
	})
}

// submitGuarded writes the entry that entry makes from the run's pending
// inbox entries, read first, guarded by those of kinds (store.Inbound.Seen;
// the entry's own kind first): when another of those kinds is written
// meanwhile (people acting at the same instant) the store refuses the
// write, and entry runs again over the inbox as it is then. Its checks
// thus see every entry of those kinds written before this one.
//
// A refusal means another writer's entry was stored, so trying again
// makes progress as long as the refusals are others' new entries: each
// entry of those kinds first seen on a read earns one more try beyond
// guardedTries, so that ten people approving a panel of ten at once are
// all stored, and guardedTriesMax ends a race that never settles.
func (r *Runner) submitGuarded(ctx context.Context, runID string, kinds []string, entry func(inbox []store.Inbound) (store.Inbound, error)) error {
	known := make(map[string]bool)
	for tries := 1; ; tries++ {
		inbox, err := r.cfg.Store.Inbox(ctx, runID, true)
		if err != nil {
			return err
		}
		in, err := entry(inbox)
		if err != nil {
			return err
		}
		in.Seen = &store.PendingSeen{Kinds: kinds}
		for _, e := range inbox {
			if slices.Contains(kinds, e.Kind) {
				in.Seen.IDs = append(in.Seen.IDs, e.ID)
				known[e.ID] = true
			}
		}
		err = r.submitInbound(ctx, in)
		if store.CodeOf(err) != store.CodeHeadMismatch || tries >= min(guardedTries+len(known), guardedTriesMax) {
			return err
		}
	}
}

// pendingOf finds the first of inbox's entries of kind whose body, read
// as a T, match accepts.
func pendingOf[T any](inbox []store.Inbound, kind string, match func(T) bool) (store.Inbound, T, bool) {
	for _, e := range inbox {
		var b T
		if e.Kind == kind && decodeInto(e.Body, &b) == nil && match(b) {
			return e, b, true
		}
	}
	var none T
	return store.Inbound{}, none, false
}

// choiceBody is a choice's entry (KindChoice).
type choiceBody struct {
	ProposalID string `json:"proposal_id"`
	Option     string `json:"option"`
}

// guardedTries bounds how often submitGuarded writes when no entry it
// had not seen before turns up between its tries; guardedTriesMax bounds
// it however many do.
const (
	guardedTries    = 5
	guardedTriesMax = 256
)

// ApproverActor is name as a person approving: the role and capability the
// run FSM expects of a grant.
func ApproverActor(name string) Actor {
	return Actor{Name: name, Role: "human_approver", Capability: "approval.grant_exact_hash"}
}

// Awaited is an approval a run waits for and, where someone was asked
// about, whether they may give it now: MayNot is nil, or the refusal
// Approve would give.
type Awaited struct {
	ApprovalNeed
	MayNot error
}

// Awaiting lists the approvals run runID waits for (Inspect's Waiting),
// asking MayApprove of each for by when by is not nil. It writes nothing:
// an approver's inbox is a list of these.
func (r *Runner) Awaiting(ctx context.Context, runID string, by *Actor) ([]Awaited, error) {
	st, err := r.Inspect(ctx, runID)
	if err != nil {
		return nil, err
	}
	out := make([]Awaited, 0, len(st.Waiting))
	for _, need := range st.Waiting {
		a := Awaited{ApprovalNeed: need}
		if by != nil {
			a.MayNot = r.MayApprove(ctx, runID, need.RequestID, *by)
		}
		out = append(out, a)
	}
	return out, nil
}

// MayApprove reports whether by may approve request requestID of run
// runID now: nil, or the error Approve would return, found by the same
// checks (the request waits, the person is among those the policy names,
// has not approved it already, handed the run no input where duties are
// separated, …). It writes nothing: an approver's inbox asks it of every
// request it lists.
func (r *Runner) MayApprove(ctx context.Context, runID, requestID string, by Actor) error {
	inbox, err := r.cfg.Store.Inbox(ctx, runID, true)
	if err != nil {
		return err
	}
	_, err = r.checkApproval(ctx, runID, requestID, by, time.Minute, inbox)
	return err
}

// checkApproval runs Approve's checks over inbox, the run's pending
// entries, read before the run (a grant the run takes in between is then
// seen twice, once taken and once pending, and counted once, rather than
// not at all), and returns the grant Approve would store, expiring after
// ttl.
func (r *Runner) checkApproval(ctx context.Context, runID, requestID string, by Actor, ttl time.Duration, inbox []store.Inbound) (store.Approval, error) {
	wf, need, err := r.waitingApproval(ctx, runID, requestID)
	if err != nil {
		return store.Approval{}, err
	}
	// A person's EXIT handed in before the grant ended deliberation: the
	// run would refuse the grant (see waitApproval), so it is refused now.
	if ex, ok := exitBefore(inbox, math.MaxInt64); ok {
		return store.Approval{}, &NotWaitingError{RunID: runID, What: exitRefusal(requestID, ex)}
	}
	// A denial handed in and not yet taken ends the wait first, whatever
	// came before it (waitApproval): an approval now would be ignored.
	if k := slices.IndexFunc(inbox, func(e store.Inbound) bool { return e.Kind == KindDeny }); k >= 0 {
		return store.Approval{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("an approval of %s (%s's denial has yet to be taken)", requestID, inbox[k].Actor)}
	}
	if ttl <= 0 {
		return store.Approval{}, fmt.Errorf("runner: an approval's lifetime must be positive, not %s", ttl)
	}
	now := r.cfg.Clock().UTC()
	// A request answers to one grant at a time: a second approval while
	// the first is still to be taken (a double click, two approvers at
	// once) would only be ignored by the run, so it is refused here and
	// the person told which grant stands. Where the request needs several
	// people's approvals (a quorum), only a second one by the same person
	// is: the run takes each of the others toward the quorum. One whose
	// grant toward it has lapsed meanwhile (expired, revoked) may approve
	// again: the run counts that grant no more (Inspect lists only the
	// grants that stand).
	if slices.Contains(need.ApprovedBy, by.Name) {
		return store.Approval{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("a second approval of %s by %s (the run holds %s's; a quorum of %d needs other people)",
			requestID, by.Name, by.Name, need.Quorum)}
	}
	pending, err := r.pendingGrants(ctx, inbox, need, now)
	if err != nil {
		return store.Approval{}, err
	}
	for _, g := range pending {
		if need.Quorum <= 1 || GrantActor(g) == by.Name {
			return store.Approval{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("another approval of %s (grant %s stands until %s; the run has yet to take it)",
				requestID, g.ID, g.ExpiresAt.UTC().Format(time.RFC3339))}
		}
	}
	grant, err := grantFor(runID, need, by, now, ttl)
	if err != nil {
		return store.Approval{}, err
	}
	if err := checkApprover(wf, runID, need, grant, by, now); err != nil {
		return store.Approval{}, err
	}
	// Where the request names a panel, a member of a group already
	// answered for adds nothing (the run would ignore the grant), counting
	// the grants the run has yet to take: the person is told whom it
	// waits for.
	if groups := PanelOf(wf, need); groups != nil {
		people := slices.Clone(need.ApprovedBy)
		var coming []string
		for _, g := range pending {
			if who := GrantActor(g); !slices.Contains(people, who) {
				people, coming = append(people, who), append(coming, who)
			}
		}
		if !panel.Adds(groups, need.Quorum, people, by.Name) {
			holds := "the run holds " + strings.Join(need.ApprovedBy, "'s, ") + "'s"
			switch {
			case len(need.ApprovedBy) == 0:
				holds = "the run has yet to take " + strings.Join(coming, "'s, ") + "'s"
			case len(coming) > 0:
				holds += " and has yet to take " + strings.Join(coming, "'s, ") + "'s"
			}
			return store.Approval{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("an approval of %s by %s (%s; it waits for %s)",
				requestID, by.Name, holds, panel.Awaited(panel.Unanswered(groups, people)))}
		}
	}
	if why, err := r.dutyRefusal(ctx, wf, runID, by.Name, inbox); err != nil {
		return store.Approval{}, err
	} else if why != "" {
		return store.Approval{}, &ApproverRefusedError{RunID: runID, RequestID: requestID, Actor: by.Name, Reason: why}
	}
	return grant, nil
}

// pendingGrants finds the grants of the request need handed to the run
// and not taken yet (inbox holds the run's pending entries) that the run
// would still take at now: granted, unexpired and held to their bodies.
func (r *Runner) pendingGrants(ctx context.Context, inbox []store.Inbound, need ApprovalNeed, now time.Time) ([]store.Approval, error) {
	var out []store.Approval
	for _, in := range inbox {
		if in.Kind != KindApprove || in.Consumed {
			continue
		}
		var body approveBody
		if decodeInto(in.Body, &body) != nil || body.ApprovalID == "" {
			continue
		}
		g, err := r.cfg.Store.Approval(ctx, body.ApprovalID)
		if store.CodeOf(err) == store.CodeNotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		if g.RequestDigest == need.RequestDigest && live(g, now) && CheckGrant(g) == nil {
			out = append(out, g)
		}
	}
	return out, nil
}

// Deny refuses the approval a run waits on; the run fails permanently.
// Only someone who could have approved it may deny it: anyone else is
// refused (ApproverRefusedError) before anything is written, as are a run
// that has ended and a request the run does not wait on.
func (r *Runner) Deny(ctx context.Context, runID, requestID, reason string, by Actor) error {
	wf, need, err := r.waitingApproval(ctx, runID, requestID)
	if err != nil {
		return err
	}
	// Who may deny is who may approve: the grant this person would have
	// issued, in the approver's role, is put to the workflow's check. It
	// is never stored.
	now := r.cfg.Clock().UTC()
	probe, err := grantFor(runID, need, Actor{Name: by.Name, Role: by.Role}, now, time.Minute)
	if err != nil {
		return err
	}
	if err := checkApprover(wf, runID, need, probe, by, now); err != nil {
		return err
	}
	return r.submit(ctx, runID, KindDeny, by, map[string]any{"request_id": requestID, "reason": reason})
}

// Cancel asks a run to stop. Inside an effect the cancellation is recorded
// and honoured once the effect is reconciled.
func (r *Runner) Cancel(ctx context.Context, runID, reason string, by Actor) error {
	return r.submit(ctx, runID, KindCancel, by, map[string]any{"reason": reason})
}

// Reconcile settles an effect whose outcome is unknown, on a person's word
// after checking the destination: confirmed_success, confirmed_failure or
// abandon.
func (r *Runner) Reconcile(ctx context.Context, runID, intentID, resolution string, by Actor) error {
	st, err := r.Inspect(ctx, runID)
	if err != nil {
		return err
	}
	if st.Run.Outcome != "" {
		return &EndedError{RunID: runID, Outcome: st.Run.Outcome}
	}
	found := false
	for _, id := range st.Unknown {
		found = found || id == intentID
	}
	if !found {
		return &NotWaitingError{RunID: runID, What: "reconciliation of " + intentID}
	}
	switch resolution {
	case "confirmed_success", "confirmed_failure", "abandon":
	default:
		return fmt.Errorf("runner: resolution must be confirmed_success, confirmed_failure or abandon, not %q", resolution)
	}
	// The run takes the first resolution of an effect and ignores any
	// after it: a second, while the first waits to be taken (two people
	// resolving it at once, perhaps differently), is refused instead,
	// naming the first (submitGuarded).
	return r.submitGuarded(ctx, runID, []string{KindReconcile}, func(inbox []store.Inbound) (store.Inbound, error) {
		if e, b, ok := pendingOf(inbox, KindReconcile, func(b reconcileBody) bool { return b.IntentID == intentID }); ok {
			return store.Inbound{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("a reconciliation of %s (%s's %s has yet to be taken)", intentID, e.Actor, b.Resolution)}
		}
		return r.inbound(runID, KindReconcile, by, map[string]any{"intent_id": intentID, "resolution": resolution})
	})
}

// Choose hands a run a person's choice among the options H offered for a
// proposal (Contestable Gate Mode). The workflow checks the choice against
// what it offered and who may choose; the runner carries it, with the
// chooser's authenticated role and capability, once the workflow's own
// step, on the run as it stands, takes it: a choice it would refuse is
// refused here (NotWaitingError; EndedError on a run that has ended)
// instead of sitting in the inbox. A choice of a proposal whose choice
// the run has yet to take is refused too (the first would close its
// options), also when both come at the same instant (submitGuarded).
func (r *Runner) Choose(ctx context.Context, runID, proposalID, option string, by Actor) error {
	if proposalID == "" || option == "" {
		return fmt.Errorf("runner: a choice names a proposal and an option")
	}
	body := map[string]any{"proposal_id": proposalID, "option": option}
	b, err := cjson.Marshal(body)
	if err != nil {
		return err
	}
	return r.submitGuarded(ctx, runID, []string{KindChoice}, func(inbox []store.Inbound) (store.Inbound, error) {
		if e, c, ok := pendingOf(inbox, KindChoice, func(c choiceBody) bool { return c.ProposalID == proposalID }); ok {
			return store.Inbound{}, &NotWaitingError{RunID: runID, What: fmt.Sprintf("a choice of %s (%s's choice of %s has yet to be taken)", proposalID, e.Actor, c.Option)}
		}
		if err := r.checkChoice(ctx, runID, b, by); err != nil {
			return store.Inbound{}, err
		}
		return r.inboundBytes(runID, KindChoice, by, b), nil
	})
}

// Control hands a run a person's transition of its deliberation machine
// (an MRP trigger such as PAUSE or RESUME, optionally about one proposal,
// with a reason). As with a choice, the workflow judges it with the pure
// machine and records it in the Journey Strip; the runner only carries it,
// with the issuer's authenticated role and capability.
func (r *Runner) Control(ctx context.Context, runID, trigger, proposalID, reason string, by Actor) error {
	if trigger == "" {
		return fmt.Errorf("runner: a control input names a trigger")
	}
	body := map[string]any{"trigger": trigger}
	if proposalID != "" {
		body["proposal_id"] = proposalID
	}
	if reason != "" {
		body["reason"] = reason
	}
	return r.submit(ctx, runID, KindControl, by, body)
}

// Submit hands a run a new domain input (SubmitWithUsage: with a usage
// report).
func (r *Runner) Submit(ctx context.Context, runID string, input []byte, by Actor) error {
	v, err := cjson.Decode(input)
	if err != nil {
		return err
	}
	if err := plainInput(v); err != nil {
		return err
	}
	return r.submit(ctx, runID, KindInput, by, v)
}

// SubmitAdvance is Submit followed by Advance, in one commit fewer: when
// this runner can advance the run now (no pass of it is under way here,
// its lease is to be had), the input is not written to the inbox on its
// own but by the tick that accepts it, consumed, in that tick's
// transaction (store.Tick.Submit). It is then durable, and accepted
// exactly once, when that commit returns; the inbox row, the events and
// every other record are byte for byte what Submit and Advance write.
//
// Whatever keeps the pass from committing it — the lease held elsewhere,
// the run not ready to accept input, a failed or refused commit — the
// input is submitted the ordinary way before SubmitAdvance returns, so a
// nil error always means it is durable, as after Submit. A pass that
// fails after the input is durable returns the pass's error, as Advance
// does.
func (r *Runner) SubmitAdvance(ctx context.Context, runID string, input []byte, by Actor) (moved bool, err error) {
	return r.SubmitAdvanceWithUsage(ctx, runID, input, Usage{}, by)
}

// SubmitAdvanceWithUsage is SubmitAdvance with the input's usage report,
// checked and charged as SubmitWithUsage does.
func (r *Runner) SubmitAdvanceWithUsage(ctx context.Context, runID string, input []byte, u Usage, by Actor) (moved bool, err error) {
	if err := u.Check(); err != nil {
		return false, err
	}
	var in store.Inbound
	if b, ok := plainInputBytes(input, u); ok {
		in = r.inboundBytes(runID, KindInput, by, b)
	} else if in, err = r.checkedInbound(runID, input, u, by); err != nil {
		return false, err
	}
	if !r.claim(runID) {
		// A pass of this run is under way here (Run's loop): it reads
		// the inbox once, so the input waits for the next pass, as
		// after Submit.
		return false, r.submitInbound(ctx, in)
	}
	defer r.release(runID)
	return r.advance(ctx, runID, &in)
}

// plainInputBytes is, without decoding the input, the inbox body
// checkedInbound makes of an input without a usage report (u zero): what
// decoding it, checking it and encoding it again gives. ok is false where
// that cannot be told from its bytes alone, which checkedInbound then
// tells.
func plainInputBytes(input []byte, u Usage) ([]byte, bool) {
	if !u.zero() {
		return nil, false
	}
	if canonicalPlainInput(input) {
		return bytes.Clone(input), true
	}
	return sortedPlainInput(input)
}

// canonicalPlainInput reports, without decoding it, that input is
// canonical and not a usage report's wrapper (plainInput): that decoding
// it succeeds, plainInput passes and inputBytes gives a copy of it. False
// where that cannot be told from its bytes alone (a root object whose
// keys the member reader declines), which the decoding path then tells.
func canonicalPlainInput(input []byte) bool {
	if !cjson.IsCanonical(input) {
		return false
	}
	if len(input) == 0 || input[0] != '{' {
		return true // not an object: never a wrapper
	}
	vals, ok := jsonread.Members(input, "format")
	if !ok {
		return false
	}
	// Canonical text spells a string one way only.
	return vals[0] == nil || !bytes.Equal(vals[0], reportedFormatText)
}

// reportedFormatText is ReportedInputFormat as canonical JSON text.
var reportedFormatText = cjson.AppendString(nil, ReportedInputFormat)

// checkedInbound is the inbox entry of an outside input: decoded, checked
// (plainInput) and encoded, with its usage report when u is not zero.
func (r *Runner) checkedInbound(runID string, input []byte, u Usage, by Actor) (store.Inbound, error) {
	v, err := cjson.Decode(input)
	if err != nil {
		return store.Inbound{}, err
	}
	if err := plainInput(v); err != nil {
		return store.Inbound{}, err
	}
	if u.zero() {
		b, err := inputBytes(input, v)
		if err != nil {
			return store.Inbound{}, err
		}
		return r.inboundBytes(runID, KindInput, by, b), nil
	}
	return r.inbound(runID, KindInput, by, reported(v, u))
}

func (r *Runner) submit(ctx context.Context, runID, kind string, by Actor, body any) error {
	in, err := r.inbound(runID, kind, by, body)
	if err != nil {
		return err
	}
	return r.submitInbound(ctx, in)
}

// inbound is the inbox entry submitting body as kind makes.
func (r *Runner) inbound(runID, kind string, by Actor, body any) (store.Inbound, error) {
	b, err := cjson.Marshal(body)
	if err != nil {
		return store.Inbound{}, err
	}
	return r.inboundBytes(runID, kind, by, b), nil
}

// inputBytes is cjson.Marshal(v) for v, the value input decodes to: a
// copy of input when it is canonical already, which is what encoding its
// value gives.
func inputBytes(input []byte, v any) ([]byte, error) {
	if cjson.IsCanonical(input) {
		return bytes.Clone(input), nil
	}
	return cjson.Marshal(v)
}

// inboundBytes is inbound for a body already encoded, b.
func (r *Runner) inboundBytes(runID, kind string, by Actor, b []byte) store.Inbound {
	// The id only has to be unique: it never reaches the pure steps (the
	// store orders the inbox). Two people acting at once must not collide.
	digest, proof := store.ProveDigest(b)
	id := inboundID(runID, kind, by, r.cfg.Clock().UnixNano(), r.actsMade.Add(1), b)
	return store.Inbound{ID: id, RunID: runID, Kind: kind, ActorRole: by.Role,
		Actor: by.Name, Capability: by.Capability, Body: b, Digest: digest, Proof: proof}
}

// inboundID is kind, a colon and the first 32 hex digits of the SHA-256 of
// the run, the actor's name, role and capability, the time, the act's
// number in its runner and the body, separated by NUL bytes (the bytes
// fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%s") writes).
// Everything that makes one act another is in it: the store takes an id
// it holds as the same act submitted again, so two acts that differ only
// in the capability exercised must not share one — nor two alike that one
// runner (a server's) makes within one tick of the clock (a coarse clock,
// a test's fixed one): the second, a person answering again after a
// refusal, say, would be taken for the first and never reach the run.
// The number tells those apart, and keeps a runner's ids what the same
// acts in the same order make on another runner.
func inboundID(runID, kind string, by Actor, nanos int64, act uint64, b []byte) string {
	sum := cjson.SumWritten(func(p []byte) []byte {
		p = append(p, runID...)
		p = append(p, 0)
		p = append(p, by.Name...)
		p = append(p, 0)
		p = append(p, by.Role...)
		p = append(p, 0)
		p = append(p, by.Capability...)
		p = append(p, 0)
		p = strconv.AppendInt(p, nanos, 10)
		p = append(p, 0)
		p = strconv.AppendUint(p, act, 10)
		p = append(p, 0)
		return append(p, b...)
	})
	var buf [96]byte
	id := append(append(buf[:0], kind...), ':')
	return string(hex.AppendEncode(id, sum[:16]))
}

func (r *Runner) submitInbound(ctx context.Context, in store.Inbound) error {
	undo := r.noteTrigger(ctx, in.RunID)
	err := r.cfg.Store.Submit(ctx, in)
	if err == nil {
		r.Wake()
	} else {
		undo()
	}
	return r.ended(ctx, in.RunID, err)
}

// NotWaitingError reports an act on something a run is not waiting for.
type NotWaitingError struct{ RunID, What string }

func (e *NotWaitingError) Error() string {
	return fmt.Sprintf("run %s is not waiting for %s", e.RunID, e.What)
}
