package runner

import (
	"context"
	"fmt"

	"flrh.dev/flrh/store"
)

// DutySeparator is implemented by workflows whose approvals may not come
// from anyone who handed the run an input: the maker-checker rule, under
// which whoever asked for a payment (started the run, or added to it) is
// never the one who approves it. Denying stays open to them: stopping
// what one asked for needs no second pair of eyes.
type DutySeparator interface {
	SeparatesDuties() bool
}

// separates reports whether wf keeps makers from approving.
func separates(wf Workflow) bool {
	d, ok := wf.(DutySeparator)
	return ok && d.SeparatesDuties()
}

// makerOf reports whether actor handed run runID an input: one the run
// accepted (its event log says who submitted it) or one still in inbox,
// the run's pending entries. It says which, for the refusal.
func (r *Runner) makerOf(ctx context.Context, runID, actor string, inbox []store.Inbound) (string, bool, error) {
	for _, in := range inbox {
		if in.Kind == KindInput && in.Actor == actor && !in.Consumed {
			return fmt.Sprintf("%s handed this run an input (%s, not yet read)", actor, in.ID), true, nil
		}
	}
	evs, err := r.cfg.Store.Events(ctx, runID, 0)
	if err != nil {
		return "", false, err
	}
	for _, e := range evs {
		if e.Kind != EventAccepted {
			continue
		}
		a, err := DecodeAccepted(e.Body)
		if err != nil {
			return "", false, fmt.Errorf("runner: event %d of run %s: %w", e.Seq, runID, err)
		}
		if a.Kind == KindInput && a.Actor == actor {
			return fmt.Sprintf("%s handed this run an input (event %d)", actor, e.Seq), true, nil
		}
	}
	return "", false, nil
}

// dutyRefusal is why the workflow's policy refuses an approval by actor
// of run runID, "" when it does not.
func (r *Runner) dutyRefusal(ctx context.Context, wf Workflow, runID, actor string, inbox []store.Inbound) (string, error) {
	if !separates(wf) {
		return "", nil
	}
	what, made, err := r.makerOf(ctx, runID, actor, inbox)
	if err != nil || !made {
		return "", err
	}
	return what + "; the approval policy separates duties: someone else must approve", nil
}
