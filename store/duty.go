package store

import (
	"context"
	"time"
	"unicode/utf8"
)

// Duties is implemented by stores that let one process among several that
// share the store hold a named duty at a time: upkeep that every server of
// a deployment is configured to do (pruning ended runs on a schedule, say)
// but one of them should do at a time, with no server in charge.
//
// A duty's lease is advisory. A holder paused past its lease and resumed
// may still be working when its successor starts, so what a duty does must
// be safe when two do it at once (a pruning is one transaction per run,
// refused to the second); the lease keeps the work from being done several
// times over, not from being wrong. The expiry is read on the store's clock
// (the database's, for a shared one), so holders on machines whose clocks
// differ agree on it.
type Duties interface {
	// HoldDuty takes the duty name for holder until ttl past the store's
	// clock, when no one holds it or its holder's lease has expired, or
	// renews it when holder holds it already. It returns the lease as it
	// then stands: Held says whether holder holds it. A duty another
	// holder holds unexpired is returned with Held false and no error.
	// Generation rises each time the duty passes to a holder, never on a
	// renewal. A name or holder that is empty, longer than 200 bytes or
	// not UTF-8, or a ttl that is not positive, is CodeInvalidInput.
	HoldDuty(ctx context.Context, name, holder string, ttl time.Duration) (Duty, error)
	// ReleaseDuty gives d up if its holder still holds it at its
	// generation, so that another may take it at once; otherwise it
	// changes nothing and returns nil (the duty has moved on).
	ReleaseDuty(ctx context.Context, d Duty) error
	// Duty returns the duty's lease as the store holds it, with Held
	// always false; CodeNotFound when no one ever held it.
	Duty(ctx context.Context, name string) (Duty, error)
}

// Duty is the lease on a duty.
type Duty struct {
	Name       string
	Holder     string    // "" once released
	Generation int64     // raised each time the duty passes to a holder
	ExpiresAt  time.Time // on the store's clock; zero once released
	Held       bool      // HoldDuty's caller holds it
}

// DutiesOf returns the Duties of s, or of the first store it wraps that
// has them.
func DutiesOf(s Store) (Duties, bool) { return As[Duties](s) }

// maxDutyText bounds a duty's name and holder.
const maxDutyText = 200

// ValidateDutyRequest checks HoldDuty's arguments before a store looks at
// the duty.
func ValidateDutyRequest(name, holder string, ttl time.Duration) error {
	const op = "hold duty"
	for _, f := range []struct{ what, s string }{{"name", name}, {"holder", holder}} {
		switch {
		case f.s == "":
			return Errorf(CodeInvalidInput, op, "", nil, "a duty %s is required", f.what)
		case len(f.s) > maxDutyText:
			return Errorf(CodeInvalidInput, op, "", nil, "the duty %s is %d bytes, over %d", f.what, len(f.s), maxDutyText)
		case !utf8.ValidString(f.s):
			return Errorf(CodeInvalidInput, op, "", nil, "the duty %s is not UTF-8", f.what)
		}
	}
	if ttl <= 0 {
		return Errorf(CodeInvalidInput, op, "", nil, "duty %q needs a positive ttl, not %s", name, ttl)
	}
	return nil
}

// NextDuty decides a HoldDuty against the duty's row as it stands (have,
// Held false; a zero Duty with name set when there is none) at the store's
// clock reading now: the lease to write and whether holder gets it. A
// store calls it inside the transaction that read have, and writes the
// result only when held.
func NextDuty(have Duty, holder string, ttl time.Duration, now time.Time) (next Duty, held bool) {
	switch {
	case have.Holder == holder:
		// A renewal, or a holder taking back what it let lapse and no
		// one took meanwhile: the same hand, the same generation.
	case have.Holder == "" || !have.ExpiresAt.After(now):
		have.Generation++
		have.Holder = holder
	default:
		return have, false
	}
	have.ExpiresAt = now.Add(ttl).UTC()
	have.Held = true
	return have, true
}
