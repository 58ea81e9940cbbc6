package runner

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/store"
)

// addNotices adds to p the notices its tick calls for, when the runner
// writes notices: the run ends, or comes to wait for an approval or a
// reconciliation, or an input left proposals waiting for a choice. A tick
// with a notice is made durable (the notice may be delivered as soon as
// it is committed, and a lagging tick can be lost after that). Whether
// the runner writes notices is asked only of a tick that has one.
func (r *Runner) addNotices(ctx context.Context, t *tick, p *store.Tick) {
	p.Notices = p.Notices[:0] // a commit tried before and refused
	offers := t.offers
	t.offers = t.offers[:0]
	to := stateAfter(t, p)
	b := noticeBody(t, to, p.ExpectHead+int64(len(p.Events)))
	switch {
	case p.Outcome != "":
		b.Kind, b.Outcome = store.NoticeEnded, p.Outcome
	case to == t.obs.from:
	case to == "WAIT_APPROVAL":
		needs := awaited(t)
		b.Kind, b.Approvers = store.NoticeApproval, approversOf(t.wf, needs...)
		for _, n := range needs {
			b.Requests = append(b.Requests, n.RequestID)
		}
	case to == "HUMAN_RECONCILIATION":
		b.Kind, b.Effects = store.NoticeReconciliation, unknownEffects(t)
	}
	choice := len(offers) > 0 && p.Outcome == ""
	if (b.Kind == "" && !choice) || !r.writesNotices(ctx) {
		return
	}
	if choice {
		c := b
		c.Kind, c.Proposals = store.NoticeChoice, offers
		p.Notices = append(p.Notices, notice(c))
	}
	if b.Kind != "" {
		p.Notices = append(p.Notices, notice(b))
	}
	p.MayLag = false
}

// NoticeDutyCheck is how long a runner with Config.NoticesWhenDelivered
// goes by what it last read of the store's notify duty.
const NoticeDutyCheck = 10 * time.Second

// writesNotices reports whether the runner writes notices now: always
// with Config.Notices; with Config.NoticesWhenDelivered, while the
// store's notify duty is held, as last read within NoticeDutyCheck. A
// store without duties, or one that cannot be read, writes none.
func (r *Runner) writesNotices(ctx context.Context) bool {
	if r.cfg.Notices {
		return true
	}
	if !r.cfg.NoticesWhenDelivered {
		return false
	}
	now := r.cfg.Clock()
	r.notices.Lock()
	defer r.notices.Unlock()
	if !r.notices.at.IsZero() && now.Sub(r.notices.at) < NoticeDutyCheck && !now.Before(r.notices.at) {
		return r.notices.on
	}
	on := false
	if ds, ok := store.DutiesOf(r.cfg.Store); ok {
		d, err := ds.Duty(ctx, store.NotifyDuty)
		on = err == nil && d.ExpiresAt.After(now)
	}
	r.notices.at, r.notices.on = now, on
	return on
}

// quarantine quarantines t's run for reason, with its notice when the
// runner writes notices: a run that cannot go on until a person mends it
// is told of as one that waits for a person is.
func (r *Runner) quarantine(ctx context.Context, t *tick, reason string) error {
	if !r.writesNotices(ctx) {
		return r.cfg.Store.Quarantine(ctx, t.run.ID, reason)
	}
	b := noticeBody(t, t.run.State, t.run.Head)
	b.Kind, b.Reason = store.NoticeQuarantined, store.NoticeReason(reason)
	return r.cfg.Store.Quarantine(ctx, t.run.ID, reason, notice(b))
}

// TellWaiting writes the notices of every run that waits for a person now
// (an approval, a reconciliation, a choice among options; frozen by a
// tripwire or quarantined) and whose header was last written at since or after, and before until
// (zero: no bound): runs that came to wait while no runner wrote notices
// (none was delivered from the store), told when a notifier starts
// delivering again. Each notice has the ID
// the tick that left the run there would have given it
// (store.Noticeboard.TellRun), so a run told of already and not yet
// delivered is not told twice; one told and delivered before since is
// told again under the same ID. A run that moves meanwhile is left to its
// tick; one whose workflow this runner does not hold is skipped. A run
// waiting for a choice is told of every proposal its state still offers
// (an Offerer's), where the tick told of those its input offered; runs
// of a workflow that is no Offerer are not told of choices. It returns
// how many runs it told of.
func (r *Runner) TellWaiting(ctx context.Context, since, until time.Time) (int, error) {
	between := func(run store.Run) bool {
		return !run.UpdatedAt.Before(since) && (until.IsZero() || run.UpdatedAt.Before(until))
	}
	nb, ok := store.NoticeboardOf(r.cfg.Store)
	if !ok {
		return 0, errors.New("runner: the store keeps no notices")
	}
	told := 0
	tell := func(run store.Run, bs ...store.NoticeBody) error {
		ns := make([]store.Notice, len(bs))
		for i, b := range bs {
			b.RunID, b.WorkflowID, b.WorkflowVersion, b.State, b.Seq = run.ID, run.WorkflowID, run.WorkflowVersion, run.State, run.Head
			ns[i] = notice(b)
		}
		ok, err := nb.TellRun(ctx, run.ID, run.Head, ns...)
		if ok {
			told++
		}
		if store.CodeOf(err) == store.CodeNotFound {
			return nil // gone since it was listed
		}
		return err
	}
	// A choice is read only in INGEST, and the proposals offered stay
	// offered while the run waits for an approval or a reconciliation.
	for _, state := range []string{"WAIT_APPROVAL", "HUMAN_RECONCILIATION", "INGEST"} {
		runs, err := store.LiveRunsIn(ctx, r.cfg.Store, state)
		if err != nil {
			return told, err
		}
		for _, run := range runs {
			if !between(run) {
				continue
			}
			if state == "INGEST" {
				if wf, err := r.workflow(run); err != nil || !isOfferer(wf) {
					continue // nothing but a choice waits in INGEST
				}
			}
			st, err := r.Inspect(ctx, run.ID)
			if err != nil {
				r.log.Warn("a waiting run not told of", "run_id", run.ID, "err", err)
				continue
			}
			var bs []store.NoticeBody
			if len(st.Offered) > 0 {
				bs = append(bs, store.NoticeBody{Kind: store.NoticeChoice, Proposals: st.Offered})
			}
			switch {
			case st.Run.State != state:
				continue // moved on since it was listed
			case state == "WAIT_APPROVAL" && len(st.Waiting) > 0:
				b := store.NoticeBody{Kind: store.NoticeApproval}
				for _, w := range st.Waiting {
					b.Requests = append(b.Requests, w.RequestID)
				}
				if wf, err := r.workflow(st.Run); err == nil {
					b.Approvers = approversOf(wf, st.Waiting...)
				}
				bs = append(bs, b)
			case state == "HUMAN_RECONCILIATION":
				bs = append(bs, store.NoticeBody{Kind: store.NoticeReconciliation, Effects: st.Unknown})
			}
			if len(bs) == 0 {
				continue
			}
			if err := tell(st.Run, bs...); err != nil {
				return told, err
			}
		}
	}
	census, err := store.TakeCensus(ctx, r.cfg.Store, store.CensusQuery{})
	if err != nil {
		return told, err
	}
	for _, run := range census.Quarantined {
		if !between(run) {
			continue
		}
		var b store.NoticeBody
		if store.IsPark(run.Quarantine) {
			b.Kind = store.NoticeTripped
			b.Park, b.Wires = parkOf(run.Quarantine)
		} else {
			b.Kind, b.Reason = store.NoticeQuarantined, store.NoticeReason(run.Quarantine)
		}
		if err := tell(run, b); err != nil {
			return told, err
		}
	}
	return told, nil
}

// isOfferer reports whether wf keeps proposals waiting for a choice.
func isOfferer(wf Workflow) bool {
	_, ok := wf.(Offerer)
	return ok
}

// trippedNotice is the notice of a run a tripwire froze, written with
// its park (Store.Quarantine), after the wires' report.
func trippedNotice(t *tick, park string, wires []string) store.Notice {
	b := noticeBody(t, t.run.State, t.run.Head)
	b.Kind, b.Park, b.Wires = store.NoticeTripped, park, wires
	return notice(b)
}

// stateAfter is the run FSM state tick p leaves its run in.
func stateAfter(t *tick, p *store.Tick) string {
	if p.State != "" {
		return p.State
	}
	return t.obs.from
}

// noticeBody is the part of a notice's body that names the run: its id,
// workflow, labels, state and position.
func noticeBody(t *tick, state string, seq int64) store.NoticeBody {
	return store.NoticeBody{RunID: t.run.ID, WorkflowID: t.run.WorkflowID, WorkflowVersion: t.run.WorkflowVersion, State: state, Seq: seq,
		Labels: t.run.Labels}
}

// ApproverTeller is implemented by workflows that can say who may approve
// their requests (bundle workflows: the approval policy's person, group,
// quorum and separation of duties in a sentence). An approval's notice
// carries it, so that the people told know whether it is theirs to give.
type ApproverTeller interface {
	// WhoMayApproveFor says who may approve the request need, as planned
	// (its Approver and Quorum, where the plan set them).
	WhoMayApproveFor(need ApprovalNeed) string
}

// approversOf is who may approve wf's requests needs, "" when wf does not
// say: each request's sentence once, in the order of the requests.
func approversOf(wf Workflow, needs ...ApprovalNeed) string {
	a, ok := wf.(ApproverTeller)
	if !ok {
		return ""
	}
	var says []string
	for _, n := range needs {
		if s := a.WhoMayApproveFor(n); !slices.Contains(says, s) {
			says = append(says, s)
		}
	}
	return strings.Join(says, " / ")
}

// notice is the notice whose body is b.
func notice(b store.NoticeBody) store.Notice {
	body, _ := json.Marshal(b) // strings and lists of them: it cannot fail
	return store.Notice{Kind: b.Kind, Body: body}
}

// unknownEffects are the run's effects whose outcome is unknown.
func unknownEffects(t *tick) []string {
	var ids []string
	if t.cp == nil {
		return ids
	}
	for _, e := range t.cp.Open {
		if e.Stage == stageUnknown {
			ids = append(ids, e.IntentID)
		}
	}
	return ids
}
