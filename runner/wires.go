package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// The runner checks its own invariants with package tripwire at two phase
// boundaries: when it loads a checkpoint, and before every commit. A trip
// freezes the run: what the tick decided is dropped, a report is recorded
// in the trace, and the run is quarantined for a person. Other runs go on.

// errTripped stops a pass whose run a wire has parked.
var errTripped = errors.New("runner: a tripwire parked the run")

// committedView is what the last commit (or the load) made durable, as the
// wires compare it with the next tick.
type committedView struct {
	control  control.Configuration
	accepted int64
	open     []tripwire.Effect
	awaiting []tripwire.Awaiting
}

func viewOf(cp *checkpoint) committedView {
	return committedView{control: cp.Control, accepted: cp.Accepted, open: wireEffects(cp.Open), awaiting: wireAwaiting(cp.Ingest)}
}

func wireEffects(open []openEffect) []tripwire.Effect {
	return appendWireEffects(make([]tripwire.Effect, 0, len(open)), open)
}

// appendWireEffects is wireEffects written into out's array; never nil,
// as wireEffects' list is not.
func appendWireEffects(out []tripwire.Effect, open []openEffect) []tripwire.Effect {
	if out == nil {
		out = []tripwire.Effect{}
	}
	for _, e := range open {
		out = append(out, tripwire.Effect{IntentID: e.IntentID, Stage: e.Stage, ApprovalID: e.ApprovalID})
	}
	return out
}

func wireAwaiting(in []pendingReceipt) []tripwire.Awaiting {
	out := make([]tripwire.Awaiting, len(in))
	for i, p := range in {
		out[i] = tripwire.Awaiting{IntentID: p.IntentID, Digest: p.Digest}
	}
	return out
}

// carry returns what this runner remembers of a run's chain head and lease
// generations, seeded from the run header when it remembers nothing (or
// another writer moved the run since).
func (r *Runner) carry(run store.Run) tripwire.Carry {
	r.mu.Lock()
	c, ok := r.carries[run.ID]
	r.mu.Unlock()
	if !ok || c.Known.Seq != run.Head {
		c.Known = tripwire.Head{Seq: run.Head, Hash: run.HeadHash}
	}
	c.Newest = max(c.Newest, run.Lease.Generation)
	return c
}

func (r *Runner) setCarry(runID string, c tripwire.Carry) {
	r.mu.Lock()
	r.carries[runID] = c
	r.mu.Unlock()
}

// checkLoad runs the wires over a checkpoint just read from the store.
func (r *Runner) checkLoad(ctx context.Context, t *tick, build string) error {
	c := r.carry(t.run)
	v := viewOf(t.cp)
	b := tripwire.Boundary{Phase: tripwire.PhaseLoad, RunID: t.run.ID,
		Before: t.cp.Control, After: t.cp.Control, CursorBefore: t.cp.Accepted, CursorAfter: t.cp.Accepted,
		OpenBefore: v.open, OpenAfter: v.open, AwaitingBefore: v.awaiting,
		Chain: tripwire.Chain{Known: c.Known, Observed: tripwire.Head{Seq: t.run.Head, Hash: t.run.HeadHash}},
		Lease: tripwire.Lease{Generation: t.lease.Generation, Newest: c.Newest},
		Code: tripwire.Code{CheckpointBuild: build, RunningBuild: r.cfg.PlatformDigest,
			CheckpointWorkflow: t.cp.WorkflowDigest, RunningWorkflow: t.wf.Digest()}}
	if trips := tripwire.Check(b); len(trips) > 0 {
		return r.trip(ctx, t, b, trips)
	}
	r.setCarry(t.run.ID, c)
	return nil
}

// commitBoundary describes the tick about to be committed.
func (r *Runner) commitBoundary(t *tick, p *store.Tick) tripwire.Boundary {
	c := r.carry(t.run)
	b := tripwire.Boundary{Phase: tripwire.PhaseCommit, RunID: t.run.ID,
		Before: t.committed.control, After: t.cp.Control, Outcome: p.Outcome, Events: t.wire,
		CursorBefore: t.committed.accepted, CursorAfter: t.cp.Accepted,
		OpenBefore: t.committed.open, OpenAfter: appendWireEffects(t.lists.open[:0], t.cp.Open),
		AwaitingBefore: t.committed.awaiting, AwaitingAfter: wireAwaiting(t.cp.Ingest),
		Chain: tripwire.Chain{Known: c.Known, Observed: c.Known},
		Lease: tripwire.Lease{Generation: t.lease.Generation, Newest: c.Newest},
		Code: tripwire.Code{CheckpointBuild: p.Checkpoint.BuildDigest, RunningBuild: r.cfg.PlatformDigest,
			CheckpointWorkflow: t.cp.WorkflowDigest, RunningWorkflow: t.wf.Digest()}}
	// Each list is written into the pass's array for it (t.lists), and
	// stays nil when empty, as appending to nil leaves it.
	l := &t.lists
	l.consumed, l.intents, l.approvals, l.results, l.receipts = l.consumed[:0], l.intents[:0], l.approvals[:0], l.results[:0], l.receipts[:0]
	for _, id := range p.Consume {
		for _, in := range t.inbox {
			if in.ID == id {
				l.consumed = append(l.consumed, tripwire.Inbound{ID: in.ID, Kind: in.Kind, Digest: in.Digest})
			}
		}
	}
	for _, in := range p.Intents {
		l.intents = append(l.intents, tripwire.Intent{ID: in.ID, Digest: in.Digest, ApprovalID: in.ApprovalID})
	}
	for _, a := range p.Approvals {
		l.approvals = append(l.approvals, tripwire.Consumption{ApprovalID: a.ApprovalID, IntentID: a.IntentID, Concurs: a.Concurs})
	}
	for _, res := range p.Results {
		l.results = append(l.results, tripwire.Result{IntentID: res.IntentID, N: res.N, Status: string(res.Status), Outbox: string(res.Outbox)})
	}
	for _, rc := range p.Receipts {
		l.receipts = append(l.receipts, tripwire.Receipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest})
	}
	b.Consumed, b.Intents, b.Approvals, b.Results, b.Receipts = orNil(l.consumed), orNil(l.intents), orNil(l.approvals), orNil(l.results), orNil(l.receipts)
	return b
}

// orNil is l, or nil when it is empty: what the wires were handed when
// each list was appended to from nil.
func orNil[T any](l []T) []T {
	if len(l) == 0 {
		return nil
	}
	return l
}

// afterCommit moves the run's carry over a committed tick and refreshes
// what the next tick is compared with.
func (r *Runner) afterCommit(t *tick, b tripwire.Boundary) {
	if c, err := tripwire.AfterCommit(r.carry(t.run), b); err == nil {
		r.setCarry(t.run.ID, c)
		t.run.HeadHash = c.Known.Hash
	} else {
		r.forgetCarry(t.run.ID) // reseeded from the header next time
	}
	// What the wires compared the tick with is what it committed: the
	// boundary's lists are the view's, not made again. The array of the
	// view it replaces is the next tick's to write its open effects into
	// (when it is not the one the view keeps: a tick whose check found
	// none writes nothing).
	if old := t.committed.open; cap(old) > 0 && (cap(b.OpenAfter) == 0 || &old[:1][0] != &b.OpenAfter[:1][0]) {
		clear(old[:cap(old)])
		t.lists.open = old[:0]
	} else {
		t.lists.open = nil
	}
	t.committed = committedView{control: t.cp.Control, accepted: t.cp.Accepted, open: b.OpenAfter, awaiting: b.AwaitingAfter}
	t.dropRecords()
}

func (r *Runner) forgetCarry(runID string) {
	r.mu.Lock()
	delete(r.carries, runID)
	r.mu.Unlock()
}

// trip freezes the run: the tick is dropped, the report goes to the trace
// in a tick of its own (or, if even that is refused, to the log), and the
// run is quarantined until a person releases it.
func (r *Runner) trip(ctx context.Context, t *tick, b tripwire.Boundary, trips []tripwire.Trip) error {
	if t.start.pending() {
		// The run was not created: nothing is written, and the run is
		// started and advanced the ordinary way, which trips again.
		return errStartAgain
	}
	t.pending = store.Tick{}
	// b's events and the report keep the records and their evidence: none
	// of them is handed on (leaveScratch).
	t.wire, t.records, t.evMaps, t.evUsed, t.bodies = nil, nil, nil, 0, nil
	t.lists, t.inputs = boundaryLists{}, nil
	r.forget(t.run.ID)
	rep, err := tripwire.NewReport(b, trips)
	var names []string
	for _, tr := range trips {
		names = append(names, tr.Wire)
	}
	r.log.Error("tripwire", "run_id", t.run.ID, "tick", t.run.Head, "phase", string(b.Phase), "wires", strings.Join(names, ","))
	r.observeTrip(ctx, t, b, trips)
	park := "degraded_safe_mode"
	if err == nil {
		park = string(rep.Disposition.Park)
	}
	if err == nil {
		if body, err := rep.Encode(); err == nil {
			tick := store.Tick{ExpectHead: t.run.Head, Trace: []store.TraceRecord{{Kind: tripwire.ReportKind, Body: body}}}
			if err := r.cfg.Store.Commit(ctx, t.lease, tick); err != nil {
				r.log.Error("tripwire report not recorded", "run_id", t.run.ID, "err", err, "report", string(body))
			}
		}
	}
	explanation := ""
	if len(trips) == 1 && trips[0].Wire == wireUnsendable {
		// The adapter's refusal is the one thing a person needs to know,
		// and the run has no event that would say it.
		explanation = trips[0].Explanation
	}
	reason := parkReason(park, names, explanation)
	// The notice goes with the park, not with the report: a run frozen is
	// told of even when its report could not be recorded.
	var told []store.Notice
	if r.writesNotices(ctx) {
		told = []store.Notice{trippedNotice(t, park, names)}
	}
	if err := r.cfg.Store.Quarantine(ctx, t.run.ID, reason, told...); err != nil {
		return err
	}
	t.cp = nil
	return errTripped
}

// checkIdle runs the wires over a run at rest after a pass: it must rest
// in a state that waits for something real, and nothing the pass saw in
// its inbox that the state takes may be left behind.
func (r *Runner) checkIdle(ctx context.Context, t *tick) error {
	if t.cp == nil || r.machine.Final(t.cp.Control.State) {
		return nil
	}
	c := r.carry(t.run)
	open := wireEffects(t.cp.Open)
	b := tripwire.Boundary{Phase: tripwire.PhaseIdle, RunID: t.run.ID,
		Before: t.cp.Control, After: t.cp.Control, CursorBefore: t.cp.Accepted, CursorAfter: t.cp.Accepted,
		OpenBefore: open, OpenAfter: open, AwaitingBefore: wireAwaiting(t.cp.Ingest),
		Chain: tripwire.Chain{Known: c.Known, Observed: c.Known},
		Lease: tripwire.Lease{Generation: t.lease.Generation, Newest: c.Newest}}
	for _, in := range t.inbox {
		b.Waiting = append(b.Waiting, tripwire.Inbound{ID: in.ID, Kind: in.Kind, Digest: in.Digest})
	}
	if trips := tripwire.Check(b); len(trips) > 0 {
		return r.trip(ctx, t, b, trips)
	}
	return nil
}

// wireUnsendable names the trip of a run whose planned intent its adapter
// refuses to encode (effect.ContentDigester). Encoding is pure, so the
// same intent is refused on every pass: left alone the run would retry
// for ever without committing anything, and rest silently where it was.
const wireUnsendable = "unsendable"

// unsendableError is an adapter's refusal to encode an intent: no retry
// can mend it, only a different intent or a different adapter.
type unsendableError struct {
	IntentID string
	Err      error
}

func (e *unsendableError) Error() string {
	return fmt.Sprintf("intent %s cannot be encoded by its adapter: %v", e.IntentID, e.Err)
}

func (e *unsendableError) Unwrap() error { return e.Err }

// tripUnsendable freezes the tick that planned the unsendable effect (the
// i-th open effect, still planned, so nothing was sent) and parks the run
// with the adapter's reason. The boundary is the commit the tick would
// have made: the effects the run owes are exactly those of earlier ticks,
// so the park is Degraded Safe Mode unless one of them is in flight.
func (r *Runner) tripUnsendable(ctx context.Context, t *tick, i int, never *unsendableError) error {
	p := t.pending // not yet flushed: it names no checkpoint
	p.State, p.Checkpoint = t.cp.Control.State, &store.Checkpoint{BuildDigest: r.cfg.PlatformDigest}
	b := r.commitBoundary(t, &p)
	trips := []tripwire.Trip{{Wire: wireUnsendable, Severity: tripwire.SeverityDegrade,
		Where: "/open_after/" + strconv.Itoa(i), Explanation: never.Error()}}
	return r.trip(ctx, t, b, trips)
}

// parkReason is the quarantine a tripwire parks a run with: ParkPrefix,
// where it is parked, ": ", the wires that tripped joined by ", ", and
// the explanation after ": " when there is one. parkOf reads it back.
func parkReason(park string, wires []string, explanation string) string {
	reason := store.ParkPrefix + park + ": " + strings.Join(wires, ", ")
	if explanation != "" {
		reason += ": " + explanation
	}
	return reason
}

// parkOf reads back where a tripwire parked a run and which wires
// tripped from its quarantine (parkReason).
func parkOf(quarantine string) (park string, wires []string) {
	rest := strings.TrimPrefix(quarantine, store.ParkPrefix)
	park, rest, _ = strings.Cut(rest, ": ")
	rest, _, _ = strings.Cut(rest, ": ")
	if rest != "" {
		wires = strings.Split(rest, ", ")
	}
	return park, wires
}
