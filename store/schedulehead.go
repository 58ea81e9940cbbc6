package store

import (
	"context"
	"time"
	"unicode/utf8"

	"flrh.dev/flrh/cjson"
)

// ScheduleHead is the latest run a schedule started: the run of its
// latest time due (or trigger) any server sharing the store started. A
// schedule that does not start a run while its previous one is going
// (schedule.Spec's overlap "skip") reads it when a time is due, so that
// every server, and one restarted, waits on the same run.
type ScheduleHead struct {
	Name  string
	RunID string
	// Due is the time due the run is of.
	Due time.Time
}

// ScheduleHeads is implemented by stores that keep schedules' latest
// runs (both of flrh's). A head is not evidence: it decides which runs
// are started, and each run started records who started it.
type ScheduleHeads interface {
	// SetScheduleHead records h as its schedule's latest run, before the
	// run is started (so a run a scheduler started is always named by a
	// head, whatever becomes of the process after). A head of a later
	// time due stands: a slower server writing an earlier one, or a
	// backfill of past times, leaves it.
	SetScheduleHead(ctx context.Context, h ScheduleHead) error
	// ScheduleHead reads the schedule's head; ok is false when it has
	// none.
	ScheduleHead(ctx context.Context, name string) (h ScheduleHead, ok bool, err error)
}

// ScheduleHeadsOf returns the ScheduleHeads of s, or of the first store
// it wraps that has it.
func ScheduleHeadsOf(s Store) (ScheduleHeads, bool) { return As[ScheduleHeads](s) }

// ValidateScheduleHead checks SetScheduleHead's argument, for both
// stores.
func ValidateScheduleHead(h ScheduleHead) error {
	const op = "set schedule head"
	if err := ValidateScheduleName(op, h.Name); err != nil {
		return err
	}
	switch {
	case !cjson.ValidID(h.RunID):
		return Errorf(CodeInvalidInput, op, "", nil, "the run id %q is not an id", h.RunID)
	case h.Due.Year() < 1970 || h.Due.Year() > 9999:
		return Errorf(CodeInvalidInput, op, "", nil, "a time due is between the years 1970 and 9999, not %s", h.Due)
	}
	return nil
}

// ValidateScheduleName checks ScheduleHead's argument.
func ValidateScheduleName(op, name string) error {
	if name == "" || len(name) > maxScheduleName || !utf8.ValidString(name) {
		return Errorf(CodeInvalidInput, op, "", nil, "a schedule's name is 1 to %d bytes of UTF-8", maxScheduleName)
	}
	return nil
}
