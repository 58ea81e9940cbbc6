package store

import (
	"context"
	"time"
	"unicode/utf8"
)

// PausedSchedule is a schedule an operator paused: no server sharing the
// store starts its runs until it is resumed. Schedules are named in the
// servers' schedules files; the store keeps only which are paused, by
// whom, why and since when, so that every server sharing it, and one
// restarted, holds the same pause.
type PausedSchedule struct {
	Name   string
	By     string
	Reason string
	// Since is when it was paused, on the store's clock.
	Since time.Time
	// From, when not zero, is when a pause set ahead begins: times due
	// before it start runs as if there were none. Zero holds from Since.
	From time.Time
	// Until, when not zero, ends the pause: times due from then on start
	// runs again, without anyone resuming it. Zero pauses until resumed.
	Until time.Time
}

// Holds reports whether the pause holds for a time due at t: from From
// (always, without it) and before Until (always, without it).
func (p PausedSchedule) Holds(t time.Time) bool {
	return (p.From.IsZero() || !t.Before(p.From)) && (p.Until.IsZero() || t.Before(p.Until))
}

// Over reports whether the pause has ended by t: before, it holds or is
// set ahead to hold.
func (p PausedSchedule) Over(t time.Time) bool { return !p.Until.IsZero() && !t.Before(p.Until) }

// SchedulePausing is implemented by stores that keep schedules' pauses
// (both of flrh's). A pause is not evidence: it decides which runs are
// started, and each run started records who started it.
type SchedulePausing interface {
	// PauseSchedule pauses the schedule p names, by p.By for p.Reason,
	// until p.Until (the store sets Since). A schedule paused already
	// keeps its first pause: who paused it, since and until when stand;
	// but a pause whose Until has passed, on the store's clock, is
	// replaced.
	PauseSchedule(ctx context.Context, p PausedSchedule) error
	// ResumeSchedule lifts the schedule's pause and reports whether it
	// was paused.
	ResumeSchedule(ctx context.Context, name string) (bool, error)
	// PausedSchedules lists the schedules paused, by name.
	PausedSchedules(ctx context.Context) ([]PausedSchedule, error)
}

// SchedulePausingOf returns the SchedulePausing of s, or of the first
// store it wraps that has it.
func SchedulePausingOf(s Store) (SchedulePausing, bool) { return As[SchedulePausing](s) }

const (
	maxScheduleName  = 200
	maxPauseText     = 500
	maxPauseActorLen = 200
)

// ValidatePause checks PauseSchedule's argument, for both stores.
func ValidatePause(p PausedSchedule) error {
	const op = "pause schedule"
	switch {
	case p.Name == "" || len(p.Name) > maxScheduleName || !utf8.ValidString(p.Name):
		return Errorf(CodeInvalidInput, op, "", nil, "a schedule's name is 1 to %d bytes of UTF-8", maxScheduleName)
	case p.By == "" || len(p.By) > maxPauseActorLen || !utf8.ValidString(p.By):
		return Errorf(CodeInvalidInput, op, "", nil, "who pauses a schedule is named, in 1 to %d bytes of UTF-8", maxPauseActorLen)
	case len(p.Reason) > maxPauseText || !utf8.ValidString(p.Reason):
		return Errorf(CodeInvalidInput, op, "", nil, "a reason is UTF-8 of at most %d bytes", maxPauseText)
	case !p.Until.IsZero() && (p.Until.Year() < 2000 || p.Until.Year() > 9999):
		return Errorf(CodeInvalidInput, op, "", nil, "a pause's end is a time between the years 2000 and 9999, not %s", p.Until)
	case !p.From.IsZero() && (p.From.Year() < 2000 || p.From.Year() > 9999):
		return Errorf(CodeInvalidInput, op, "", nil, "a pause's start is a time between the years 2000 and 9999, not %s", p.From)
	case !p.From.IsZero() && !p.Until.IsZero() && !p.Until.After(p.From):
		return Errorf(CodeInvalidInput, op, "", nil, "a pause's end, %s, is not after its start, %s", p.Until, p.From)
	}
	return nil
}

// ValidateResume checks ResumeSchedule's argument.
func ValidateResume(name string) error { return ValidateScheduleName("resume schedule", name) }
