package runner

import (
	"context"
	"encoding/json"
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
		b.Kind, b.Requests = store.NoticeApproval, awaitedRequests(t)
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
// workflow, state and position.
func noticeBody(t *tick, state string, seq int64) store.NoticeBody {
	return store.NoticeBody{RunID: t.run.ID, WorkflowID: t.run.WorkflowID, WorkflowVersion: t.run.WorkflowVersion, State: state, Seq: seq}
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
