package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unicode/utf8"

	"flrh.dev/flrh/cjson"
)

// SealFollowUp is a follow-up's address, sealed under a reference whose
// RunID is the run's and whose Kind is SealFollowUp, "/" and the
// follow-up's name: an address moved to another run or name fails to
// open.
const SealFollowUp = "follow_up"

// FollowUp is where a person who started or fed a run from a chat (a
// Slack slash command or interaction, a Discord interaction) is told
// what becomes of it: an address the chat service takes messages to
// that person at, for a while (Slack's response_url for 30 minutes,
// Discord's interaction token for 15). A notifier sends each notice of
// the run there as well, until it expires.
type FollowUp struct {
	RunID string
	// Name names it among the run's follow-ups, and among the routes a
	// notice reached: FollowUpName of its address.
	Name string
	// Scheme is the chat service's, which says the message's shape:
	// FollowUpSlack or FollowUpDiscord.
	Scheme string
	// Address is the URL messages are posted to. It is a credential
	// (whoever holds it may write to the person), sealed at rest when the
	// store encrypts bodies, and never logged.
	Address string
	// Added and Expires are on the store's clock.
	Added, Expires time.Time
}

// The chat services a follow-up's message is shaped for.
const (
	FollowUpSlack   = "slack"
	FollowUpDiscord = "discord"
)

// FollowUps is implemented by stores that keep follow-ups (both of
// flrh's). They are not evidence: a run's record never holds one, and
// one lost costs a message, never a step.
type FollowUps interface {
	// AddFollowUp keeps f (its RunID, Scheme and Address; the store sets
	// Name, Added and Expires) for ttl from now, on the store's clock.
	// The same address for the same run again keeps the first. In the
	// same transaction every expired follow-up (of any run) is dropped,
	// and the run's beyond the MaxFollowUps most recently added.
	AddFollowUp(ctx context.Context, f FollowUp, ttl time.Duration) error
	// FollowUps lists the run's follow-ups not expired on the store's
	// clock, the first added first.
	FollowUps(ctx context.Context, runID string) ([]FollowUp, error)
	// DropFollowUp drops the run's follow-up of that name and reports
	// whether it was kept.
	DropFollowUp(ctx context.Context, runID, name string) (bool, error)
}

// FollowUpsOf returns the FollowUps of s, or of the first store it
// wraps that has it.
func FollowUpsOf(s Store) (FollowUps, bool) { return As[FollowUps](s) }

// Bounds of follow-ups.
const (
	// MaxFollowUps is how many follow-ups a run keeps: the people who
	// last started or fed it from a chat.
	MaxFollowUps = 4
	// MaxFollowUpTTL is the longest a follow-up is kept: longer than any
	// chat service keeps an address to answer at.
	MaxFollowUpTTL = time.Hour
	// MaxFollowUpAddress is the longest address kept.
	MaxFollowUpAddress = 2048
)

// followUpPrefix starts every follow-up's name. The colon is not in a
// notify route's name, so a follow-up is never taken for a route.
const followUpPrefix = "follow-up:"

// FollowUpName is the name of the follow-up at address: its digest's
// first 16 hex digits, so the name says nothing of the address.
func FollowUpName(address string) string {
	d := sha256.Sum256([]byte(address))
	return followUpPrefix + hex.EncodeToString(d[:8])
}

// FollowUpRef is the seal reference of the run's follow-up of that name.
func FollowUpRef(runID, name string) SealRef {
	return SealRef{RunID: runID, Kind: SealFollowUp + "/" + name}
}

// ValidateFollowUp checks AddFollowUp's arguments, for both stores, and
// returns f named.
func ValidateFollowUp(f FollowUp, ttl time.Duration) (FollowUp, error) {
	const op = "add follow-up"
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidInput, op, f.RunID, nil, format, args...)
	}
	switch {
	case !cjson.ValidID(f.RunID):
		return f, bad("the run id %q is not an id", f.RunID)
	case f.Scheme != FollowUpSlack && f.Scheme != FollowUpDiscord:
		return f, bad("a follow-up's scheme is %s or %s, not %q", FollowUpSlack, FollowUpDiscord, f.Scheme)
	case f.Address == "" || len(f.Address) > MaxFollowUpAddress || !utf8.ValidString(f.Address):
		return f, bad("a follow-up's address is 1 to %d bytes of UTF-8", MaxFollowUpAddress)
	case ttl <= 0 || ttl > MaxFollowUpTTL:
		return f, bad("a follow-up is kept for more than nothing and at most %s, not %s", MaxFollowUpTTL, ttl)
	}
	f.Name = FollowUpName(f.Address)
	return f, nil
}

// ValidateFollowUpRun checks a run id FollowUps or DropFollowUp is given.
func ValidateFollowUpRun(op, runID string) error {
	if !cjson.ValidID(runID) {
		return Errorf(CodeInvalidInput, op, runID, nil, "the run id %q is not an id", runID)
	}
	return nil
}
