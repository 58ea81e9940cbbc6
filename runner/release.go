package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/tripwire"
)

// NotParkedError reports a release of a run no tripwire parked: it is live,
// it has ended, or it is quarantined for a checkpoint nobody can trust
// (corrupt, too new, other code), which stays quarantined. Nothing is
// written.
type NotParkedError struct {
	RunID      string
	Quarantine string // the run's quarantine, "" when it has none
	Outcome    string // the run's outcome, "" while it lives
}

func (e *NotParkedError) Error() string {
	switch {
	case e.Outcome != "":
		return fmt.Sprintf("run %s has ended (%s): there is nothing to release", e.RunID, e.Outcome)
	case e.Quarantine == "":
		return fmt.Sprintf("run %s is not parked", e.RunID)
	}
	return fmt.Sprintf("run %s is quarantined, not parked by a tripwire, and cannot be released: %s", e.RunID, e.Quarantine)
}

// ReleaseRefusedError reports a release by someone the park does not
// summon: not a person, or without the capability the trip's disposition
// names. Nothing is written.
type ReleaseRefusedError struct {
	RunID, Actor string
	Need         string // the capability the park's disposition names
	Reason       string
}

func (e *ReleaseRefusedError) Error() string {
	return fmt.Sprintf("%s may not release run %s (needs a person holding %s): %s", e.Actor, e.RunID, e.Need, e.Reason)
}

// personRoles are the roles a person acts under; an agent or the runner
// itself never releases a run, since the park exists to stop the machinery
// until a person looked (SPEC §7.3).
var personRoles = map[string]bool{"operator": true, "human_reconciler": true, "human_approver": true, "authorized_requester": true}

// Release lifts a tripwire's park on a person's word. by must be a person
// holding the capability the park's disposition summons (the last tripwire
// report's, or, without one, the one its park implies); otherwise
// ReleaseRefusedError and nothing is written. The store records the
// release in the run's trace and makes the run live again: the next pass
// loads it afresh and takes its inbox, so a cancel queued while it was
// parked is honoured. A run whose cause persists trips again on that pass
// and is parked anew, for a person again: a release never becomes a loop.
func (r *Runner) Release(ctx context.Context, runID, reason string, by Actor) error {
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return err
	}
	if run.Outcome != "" || !store.IsPark(run.Quarantine) {
		return &NotParkedError{RunID: runID, Quarantine: run.Quarantine, Outcome: run.Outcome}
	}
	need, err := r.summoned(ctx, run)
	if err != nil {
		return err
	}
	refuse := func(why string) error {
		return &ReleaseRefusedError{RunID: runID, Actor: by.Name, Need: need, Reason: why}
	}
	switch {
	case by.Name == "":
		return refuse("the release names no person")
	case !personRoles[by.Role]:
		return refuse(fmt.Sprintf("role %q is not a person's", by.Role))
	case by.Capability != need:
		return refuse(fmt.Sprintf("the capability held is %q", by.Capability))
	case strings.TrimSpace(reason) == "":
		return refuse("a release says why")
	}
	err = r.cfg.Store.Release(ctx, store.Release{RunID: runID, Park: run.Quarantine, By: by.Name, Role: by.Role, Capability: by.Capability, Reason: reason})
	if err != nil {
		return err
	}
	r.forget(runID) // nothing cached of the parked run outlives the park
	return nil
}

// Summoned returns the capability the park of a run asks of the person who
// releases it, so that a command acting for a person can name it;
// NotParkedError when no tripwire parked the run.
func (r *Runner) Summoned(ctx context.Context, runID string) (string, error) {
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return "", err
	}
	if run.Outcome != "" || !store.IsPark(run.Quarantine) {
		return "", &NotParkedError{RunID: runID, Quarantine: run.Quarantine, Outcome: run.Outcome}
	}
	return r.summoned(ctx, run)
}

// summoned returns the capability a run's park asks of the person who
// releases it: the disposition of the newest tripwire report in its trace,
// or, when the report could not be recorded, the one its park implies.
func (r *Runner) summoned(ctx context.Context, run store.Run) (string, error) {
	tr, err := r.cfg.Store.Trace(ctx, run.ID)
	if err != nil {
		return "", err
	}
	for i := len(tr) - 1; i >= 0; i-- {
		if tr[i].Kind == store.ReleaseKind {
			break // an older report was already released
		}
		if tr[i].Kind != tripwire.ReportKind {
			continue
		}
		var rep struct {
			Disposition tripwire.Disposition `json:"disposition"`
		}
		if json.Unmarshal(tr[i].Body, &rep) == nil && rep.Disposition.Summon != "" {
			return rep.Disposition.Summon, nil
		}
		break
	}
	if strings.HasPrefix(run.Quarantine, store.ParkPrefix+string(tripwire.ParkHumanReconciliation)) {
		return tripwire.SummonReconcile, nil
	}
	return tripwire.SummonSafeMode, nil
}
