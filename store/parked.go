package store

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// SealParked is a parked delivery's body, sealed under a reference whose
// RunID is the delivery's key (a parked delivery belongs to no run).
const SealParked = "parked"

// ParkedDelivery is a webhook delivery whose signature held but which
// could not be taken: its template found nothing where it looked, the
// workflow refused the input it made, the run it was for did not exist.
// Senders do not all retry what is refused (GitHub never does), so the
// delivery is kept for an operator to see, mend its cause and take again
// (or drop), rather than lost.
type ParkedDelivery struct {
	// Key names the delivery as the inbox would: the webhook's name, a
	// colon and the delivery's id as its sender names it.
	Key string
	// Hook is the webhook's name, the part of Key before its first colon.
	Hook string
	// Event is the kind of event the sender said it is ("" for none).
	Event string
	// Body is the delivery's body as read, as JSON: what its templates
	// were given. It is sealed at rest when the store encrypts bodies.
	Body []byte
	// Status and Reason are the answer the delivery was refused with,
	// the last time it was.
	Status int
	Reason string
	// First and Last are when it was first and last refused, on the
	// store's clock; Times counts the refusals.
	First, Last time.Time
	Times       int
}

// DeliveryParking is implemented by stores that keep parked deliveries
// (both of flrh's). Parked deliveries are not evidence: no run holds them
// until one is taken, when its input is written as any delivery's.
type DeliveryParking interface {
	// ParkDelivery keeps d (its Key, Hook, Event, Body, Status and
	// Reason; the store sets First, Last and Times). A delivery of the
	// same key already parked is refused again: its body, event, status
	// and reason replaced, Last now and Times one more, First kept. The
	// hook's deliveries beyond the keep most recently refused are then
	// dropped, in the same transaction.
	ParkDelivery(ctx context.Context, d ParkedDelivery, keep int) error
	// ParkedDeliveries lists the hook's parked deliveries, the most
	// recently refused first, at most limit.
	ParkedDeliveries(ctx context.Context, hook string, limit int) ([]ParkedDelivery, error)
	// ParkedDelivery reads the parked delivery of key: CodeNotFound when
	// none is.
	ParkedDelivery(ctx context.Context, key string) (ParkedDelivery, error)
	// UnparkDelivery drops the parked delivery of key (taken at last, or
	// given up) and reports whether one was parked.
	UnparkDelivery(ctx context.Context, key string) (bool, error)
	// ParkedCounts counts the parked deliveries of each hook that has
	// some, sorted by hook.
	ParkedCounts(ctx context.Context) ([]ParkedCount, error)
}

// ParkedCount is how many deliveries a hook has parked, and since when
// the longest parked has waited.
type ParkedCount struct {
	Hook  string
	Count int
	// Oldest is the earliest time one of them was first refused.
	Oldest time.Time
}

// DeliveryParkingOf returns the DeliveryParking of s, or of the first
// store it wraps that has it.
func DeliveryParkingOf(s Store) (DeliveryParking, bool) { return As[DeliveryParking](s) }

// Bounds of parked deliveries.
const (
	MaxParkedKeep   = 100_000
	MaxParkedBody   = 4 << 20
	maxParkedKey    = 512
	maxParkedReason = 2000
)

// ValidateParked checks ParkDelivery's arguments, for both stores.
func ValidateParked(d ParkedDelivery, keep int) error {
	const op = "park delivery"
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidInput, op, "", nil, format, args...)
	}
	if err := ValidateParkedKey(op, d.Key); err != nil {
		return err
	}
	switch {
	case d.Hook == "" || !strings.HasPrefix(d.Key, d.Hook+":"):
		return bad("the key %q is not the hook %q's", d.Key, d.Hook)
	case !utf8.ValidString(d.Event) || len(d.Event) > maxParkedKey:
		return bad("an event is UTF-8 of at most %d bytes", maxParkedKey)
	case len(d.Body) == 0 || len(d.Body) > MaxParkedBody:
		return bad("a parked body is 1 to %d bytes, not %d", MaxParkedBody, len(d.Body))
	case d.Status < 400 || d.Status > 599:
		return bad("a parked delivery was refused: its status is 4xx or 5xx, not %d", d.Status)
	case !utf8.ValidString(d.Reason) || len(d.Reason) > maxParkedReason:
		return bad("a reason is UTF-8 of at most %d bytes", maxParkedReason)
	case keep < 1 || keep > MaxParkedKeep:
		return bad("keep is 1 to %d, not %d", MaxParkedKeep, keep)
	}
	return nil
}

// ValidateParkedKey checks a parked delivery's key.
func ValidateParkedKey(op, key string) error {
	if key == "" || len(key) > maxParkedKey || !utf8.ValidString(key) || !strings.Contains(key, ":") {
		return Errorf(CodeInvalidInput, op, "", nil, "a parked delivery's key is hook:id, UTF-8 of at most %d bytes", maxParkedKey)
	}
	return nil
}

// ValidateParkedList checks ParkedDeliveries' arguments.
func ValidateParkedList(hook string, limit int) error {
	if hook == "" || limit < 1 {
		return Errorf(CodeInvalidInput, "parked deliveries", "", nil, "a hook and a limit of at least 1 are required")
	}
	return nil
}

// ParkedRef is the seal reference of the parked delivery of key.
func ParkedRef(key string) SealRef { return SealRef{RunID: key, Kind: SealParked} }

// ParkedReason cuts a reason to what a parked delivery keeps.
func ParkedReason(reason string) string {
	if len(reason) <= maxParkedReason {
		return reason
	}
	cut := maxParkedReason
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}
