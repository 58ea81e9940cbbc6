package store

import (
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
)

// ParkPrefix begins the quarantine reason of a run a tripwire parked
// ("tripwire DEGRADED_SAFE_MODE: wedge", say). Only such a quarantine may be
// released: a run quarantined because its checkpoint is corrupt, too new or
// written by other code stays quarantined, since releasing it would resume
// from a state nobody can trust.
const ParkPrefix = "tripwire "

// IsPark reports whether a quarantine reason is a tripwire's park.
func IsPark(quarantine string) bool { return strings.HasPrefix(quarantine, ParkPrefix) }

// ReleaseKind is the trace kind of the record a release writes.
const ReleaseKind = "release"

// Release is a person's release of a run a tripwire parked.
type Release struct {
	RunID string
	// Park is the quarantine reason the person read and releases, exactly:
	// the store refuses (CodeHeadMismatch) when the run was parked again,
	// or for another reason, since, so a release answers one park only.
	Park       string
	By         string // the person
	Role       string // the person's role
	Capability string // the capability the park's disposition names
	Reason     string // why the person releases it
}

// ReleaseRecord is the canonical body of the trace record a release
// writes, at the store's clock reading inside its transaction.
func ReleaseRecord(op string, rel Release, at time.Time) ([]byte, error) {
	w := cjson.Members{B: make([]byte, 0, 160+len(rel.Park)+len(rel.By)+len(rel.Reason))}
	w.Open()
	w.Str("at", at.UTC().Format(time.RFC3339Nano))
	w.Str("by", rel.By)
	w.Str("capability", rel.Capability)
	w.Str("park", rel.Park)
	w.Str("reason", rel.Reason)
	w.Str("role", rel.Role)
	w.Str("run_id", rel.RunID)
	w.Close()
	if w.Err != nil {
		return nil, Errorf(CodeInvalidInput, op, rel.RunID, w.Err, "the release cannot be recorded")
	}
	return w.B, nil
}

// CheckRelease refuses a release that names no person, capability or
// reason (CodeInvalidInput). Backends call it before touching anything.
func CheckRelease(op string, rel Release) error {
	if rel.RunID == "" || rel.By == "" || rel.Capability == "" || rel.Reason == "" || rel.Park == "" {
		return Errorf(CodeInvalidInput, op, rel.RunID, nil, "a release names the run, the park, the person, the capability and a reason")
	}
	return nil
}

// CheckReleasable refuses a release of run as it stands: not parked
// (CodeInvalidTransition), quarantined for something other than a trip
// (CodeInvalidTransition), or parked under another reason than the one
// released (CodeHeadMismatch).
func CheckReleasable(op string, run Run, rel Release) error {
	switch {
	case run.Outcome != "":
		return Errorf(CodeInvalidTransition, op, run.ID, nil, "the run has ended (%s)", run.Outcome)
	case run.Quarantine == "":
		return Errorf(CodeInvalidTransition, op, run.ID, nil, "the run is not parked")
	case !IsPark(run.Quarantine):
		return Errorf(CodeInvalidTransition, op, run.ID, nil, "the run is quarantined, not parked by a trip: %s", run.Quarantine)
	case run.Quarantine != rel.Park:
		return Errorf(CodeHeadMismatch, op, run.ID, nil, "the run's park is now %q", run.Quarantine)
	}
	return nil
}

// ReleaseBody checks a release of run as it stands (CheckReleasable) and
// returns the trace record it writes at position seq (ReleaseRecord),
// sealed when the store seals its trace: the part of a release that does
// not depend on the backend.
func ReleaseBody(op string, run Run, rel Release, at time.Time, seq int64, sealer Sealer) ([]byte, error) {
	if err := CheckReleasable(op, run, rel); err != nil {
		return nil, err
	}
	body, err := ReleaseRecord(op, rel, at)
	if err != nil || sealer == nil {
		return body, err
	}
	return SealBody(sealer, op, SealRef{RunID: rel.RunID, Kind: SealTrace + "/" + ReleaseKind, Seq: seq}, body)
}
