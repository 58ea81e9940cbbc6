package runner

import (
	"encoding/json"

	"flrh.dev/flrh/store"
)

// addNotices adds to p the notices its tick calls for, when the runner
// writes notices: the run ends, or comes to wait for an approval or a
// reconciliation, or an input left proposals waiting for a choice. A tick with a notice is made durable (the notice may
// be delivered as soon as it is committed, and a lagging tick can be
// lost after that).
func (r *Runner) addNotices(t *tick, p *store.Tick) {
	p.Notices = p.Notices[:0] // a commit tried before and refused
	if !r.cfg.Notices {
		return
	}
	to := t.obs.from
	if p.State != "" {
		to = p.State
	}
	b := store.NoticeBody{RunID: t.run.ID, WorkflowID: t.run.WorkflowID, WorkflowVersion: t.run.WorkflowVersion, State: to,
		Seq: p.ExpectHead + int64(len(p.Events))}
	if len(t.offers) > 0 && p.Outcome == "" {
		c := b
		c.Kind, c.Proposals = store.NoticeChoice, t.offers
		p.Notices = append(p.Notices, store.Notice{Kind: c.Kind, Body: noticeJSON(c)})
	}
	t.offers = t.offers[:0]
	switch {
	case p.Outcome != "":
		b.Kind, b.Outcome = store.NoticeEnded, p.Outcome
	case to == t.obs.from:
	case to == "WAIT_APPROVAL":
		b.Kind, b.Requests = store.NoticeApproval, awaitedRequests(t)
	case to == "HUMAN_RECONCILIATION":
		b.Kind, b.Effects = store.NoticeReconciliation, unknownEffects(t)
	}
	if b.Kind != "" {
		p.Notices = append(p.Notices, store.Notice{Kind: b.Kind, Body: noticeJSON(b)})
	}
	if len(p.Notices) > 0 {
		p.MayLag = false
	}
}

// trippedNotice is the notice of a run a tripwire froze, written with
// the tick that records the wires' report.
func trippedNotice(t *tick, park string, wires []string) store.Notice {
	b := store.NoticeBody{Kind: store.NoticeTripped, RunID: t.run.ID, WorkflowID: t.run.WorkflowID, WorkflowVersion: t.run.WorkflowVersion,
		State: t.run.State, Seq: t.run.Head, Park: park, Wires: wires}
	return store.Notice{Kind: b.Kind, Body: noticeJSON(b)}
}

func noticeJSON(b store.NoticeBody) []byte {
	out, _ := json.Marshal(b) // strings and lists of them: it cannot fail
	return out
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
