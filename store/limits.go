package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SharedLimits is implemented by stores that hold adapters' request
// limits for every process sharing the store: a destination that bears
// three requests at once bears three from the whole deployment, not three
// from each of its processes.
//
// Both kinds of limit are read on the store's clock (the database's, for
// a shared one), so processes on machines whose clocks differ agree on
// them. Neither is evidence: nothing of a run is written, and a limit's
// rows may be lost (a restored backup, say) at the cost of one burst.
type SharedLimits interface {
	// TakeSlot takes for holder, until hold past the store's clock, the
	// lowest-numbered of the first max slots of the limit name that is
	// free (one no one holds, or whose holder's hold has passed: a
	// process that stopped while its request was open), unless the
	// holders waiting in the limit's queue before it take up every free
	// slot: free slots go to the longest waiting first. Processes may
	// declare one limit with different bounds (two bundles, or a bound
	// changed in a rolling deploy): the strictest bound declared by a
	// request holding a slot or waiting for one holds for every take
	// (SlotBound), and every slot held counts against it. A holder not
	// given a slot joins the queue, when queue is positive, or keeps its
	// place there, for queue past the store's clock: a waiter that stops
	// asking (its process stopped) leaves the queue when that passes.
	// Given a slot, it leaves the queue. ok is false when it was not given
	// one. A holder names one request: GiveSlot frees the slot only while
	// that request holds it.
	TakeSlot(ctx context.Context, name string, max int, holder string, hold, queue time.Duration) (slot int, ok bool, err error)
	// LeaveQueue takes holder out of the limit's queue (a request that
	// gave up waiting); nothing when it is not there.
	LeaveQueue(ctx context.Context, name, holder string) error
	// GiveSlot frees slot of the limit name if holder still holds it, and
	// otherwise changes nothing and returns nil: the slot's hold passed
	// and it has moved on.
	GiveSlot(ctx context.Context, name string, slot int, holder string) error
	// TakeToken books one request's room under the rate limit name,
	// which lets perSecond requests start a second, in a burst of at most
	// perSecond after a quiet second (NextArrival): now, or the earliest
	// moment not booked, when that is at most maxWait away. A slower rate
	// another process booked under within RateBoundFor holds instead
	// (RateBound). Booked, it
	// returns how long the request must wait before it starts (0: at
	// once); requests are so served in the order they booked. When the
	// room is further away it books nothing and returns booked false and
	// how long until there is room now.
	TakeToken(ctx context.Context, name string, perSecond int, maxWait time.Duration) (wait time.Duration, booked bool, err error)
	// LimitsInUse returns the limits in use at the store's clock: those
	// with a slot held or a request waiting for one, and those whose rate
	// is booked past now, sorted by name. It writes nothing.
	LimitsInUse(ctx context.Context) ([]LimitUse, error)
}

// LimitUse is one shared limit in use: why a limited adapter waits.
type LimitUse struct {
	Name string
	// Held are the slots held now, lowest first.
	Held []SlotHold
	// BookedUntil, when after the store's clock, is the limit's
	// theoretical arrival time: its rate is spaced out until then (a
	// request finds room once it is less than a second's worth away).
	BookedUntil time.Time
	// Waiting counts the requests in the queue for a slot.
	Waiting int
	// Bounds are the bounds (max) declared by the requests holding a
	// slot or waiting for one, each once, ascending: more than one means
	// processes disagree, and the first holds.
	Bounds []int
	// PerSecond is the rate the limit is booked under while BookedUntil
	// is after the store's clock: the slowest declared within
	// RateBoundFor.
	PerSecond int
}

// SlotHold is one slot held by one request.
type SlotHold struct {
	Slot   int
	Holder string
	Until  time.Time // when the hold passes if its holder never gives it back
	Bound  int       // the limit's max as its holder declared it (0: not recorded)
}

// LimitUses gathers LimitsInUse's answer as a store reads it: slots held
// and rates booked, in any order.
type LimitUses struct{ uses []LimitUse }

func (b *LimitUses) at(name string) *LimitUse {
	i, found := slices.BinarySearchFunc(b.uses, name, func(u LimitUse, n string) int { return strings.Compare(u.Name, n) })
	if !found {
		b.uses = slices.Insert(b.uses, i, LimitUse{Name: name})
	}
	return &b.uses[i]
}

// Held adds a slot held of the limit name.
func (b *LimitUses) Held(name string, h SlotHold) {
	u := b.at(name)
	i, _ := slices.BinarySearchFunc(u.Held, h.Slot, func(x SlotHold, slot int) int { return x.Slot - slot })
	u.Held = slices.Insert(u.Held, i, h)
	u.bound(h.Bound)
}

// bound adds a bound declared by a request holding or waiting.
func (u *LimitUse) bound(n int) {
	if i, found := slices.BinarySearch(u.Bounds, n); !found && n > 0 {
		u.Bounds = slices.Insert(u.Bounds, i, n)
	}
}

// Booked sets how far the limit name's rate is booked, and under which
// rate.
func (b *LimitUses) Booked(name string, until time.Time, perSecond int) {
	u := b.at(name)
	u.BookedUntil, u.PerSecond = until, perSecond
}

// Row adds one row of the union both stores read the limits in use as:
// a slot held (slot ≥ 0, its holder, its hold's end, its holder's
// bound) or a rate booked (slot < 0, its arrival time, its rate as
// bound).
func (b *LimitUses) Row(name string, slot int, holder string, until time.Time, bound int) {
	if slot < 0 {
		b.Booked(name, until, bound)
		return
	}
	b.Held(name, SlotHold{Slot: slot, Holder: holder, Until: until, Bound: bound})
}

// Waiting sets how many requests wait in the limit name's queue, and
// adds the bounds they declared.
func (b *LimitUses) Waiting(name string, n int, bounds ...int) {
	u := b.at(name)
	u.Waiting = n
	for _, x := range bounds {
		u.bound(x)
	}
}

// SplitBounds reads bounds a store joined with commas (SQL's
// group_concat or string_agg), skipping what is not a number.
func SplitBounds(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// List returns the limits gathered, sorted by name.
func (b *LimitUses) List() []LimitUse { return b.uses }

// SharedLimitsOf returns the SharedLimits of s, or of the first store it
// wraps that has them.
func SharedLimitsOf(s Store) (SharedLimits, bool) { return As[SharedLimits](s) }

// Bounds of shared limits.
const (
	MaxSharedSlots     = 1024
	MaxSharedPerSecond = 100_000
	maxLimitText       = 200
)

// ValidateSlot checks TakeSlot's and GiveSlot's arguments (max, hold and
// queue only when take is true) before a store looks at the limit.
func ValidateSlot(take bool, name string, slot, max int, holder string, hold, queue time.Duration) error {
	op := "give slot"
	if take {
		op = "take slot"
	}
	if err := validateLimitText(op, "name", name); err != nil {
		return err
	}
	if err := validateLimitText(op, "holder", holder); err != nil {
		return err
	}
	switch {
	case take && (max < 1 || max > MaxSharedSlots):
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q: max must be from 1 to %d, not %d", name, MaxSharedSlots, max)
	case take && hold <= 0:
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q needs a positive hold, not %s", name, hold)
	case take && queue < 0:
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q: a negative time in the queue %s", name, queue)
	case !take && (slot < 0 || slot >= MaxSharedSlots):
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q has no slot %d", name, slot)
	}
	return nil
}

// MayTakeSlot decides a TakeSlot: holder, with ahead live waiters before
// it in the limit's queue, may take a slot when one is free below max
// (lowest ≥ 0) and fewer than the free slots' number are waiting before
// it (every slot held counted in held, wherever it is: one taken under a
// larger bound is a request open all the same).
func MayTakeSlot(max, held, ahead, lowest int) bool {
	return lowest >= 0 && ahead < max-held
}

// SlotBound is the bound a TakeSlot declaring max takes under, given the
// strictest bound declared by the other requests holding a slot or
// waiting for one (0: none, or none recorded): the lesser. A destination
// that bears two at once bears two, whichever process says more.
func SlotBound(max, strictest int) int {
	if strictest > 0 && strictest < max {
		return strictest
	}
	return max
}

// RateBoundFor is how long the rate a request booked under binds other
// processes that declare the same limit faster: a process that stopped
// booking (stopped, or its bundle changed) stops binding after it.
const RateBoundFor = time.Minute

// RateBound decides the rate a TakeToken declaring perSecond books under,
// given the rate the limit was last booked under (kept, 0 for none) and
// until when it binds: a slower rate that binds still holds, and binds
// no longer than it did; otherwise the request's own, binding for
// RateBoundFor from now. It returns the rate and until when it binds,
// both written with a booking.
func RateBound(perSecond, kept int, keptUntil, now time.Time) (int, time.Time) {
	if kept > 0 && kept < perSecond && keptUntil.After(now) {
		return kept, keptUntil
	}
	return perSecond, now.Add(RateBoundFor).UTC()
}

// ValidateToken checks TakeToken's arguments.
func ValidateToken(name string, perSecond int, maxWait time.Duration) error {
	const op = "take token"
	if err := validateLimitText(op, "name", name); err != nil {
		return err
	}
	switch {
	case perSecond < 1 || perSecond > MaxSharedPerSecond:
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q: per second must be from 1 to %d, not %d", name, MaxSharedPerSecond, perSecond)
	case maxWait < 0:
		return Errorf(CodeInvalidInput, op, "", nil, "limit %q: a negative wait %s", name, maxWait)
	}
	return nil
}

func validateLimitText(op, what, s string) error {
	switch {
	case s == "":
		return Errorf(CodeInvalidInput, op, "", nil, "a limit %s is required", what)
	case len(s) > maxLimitText:
		return Errorf(CodeInvalidInput, op, "", nil, "the limit %s is %d bytes, over %d", what, len(s), maxLimitText)
	case !utf8.ValidString(s):
		return Errorf(CodeInvalidInput, op, "", nil, "the limit %s is not UTF-8", what)
	}
	return nil
}

// NextArrival decides a TakeToken at the store's clock reading now, given
// the rate limit's theoretical arrival time tat (the zero time for a limit
// never used): the generic cell rate algorithm, one instant a limit,
// which a store can hold in one column and decide on in the transaction
// that reads it. Requests are spaced 1/perSecond apart, and may run
// ahead of that spacing by perSecond-1 of them: a burst of perSecond once
// the limit has been quiet for a second. A request whose room is at most
// maxWait away books it: NextArrival returns the arrival time to write,
// how long the request waits before it starts, and true. Otherwise it
// returns tat unchanged, how long until there is room (more than zero,
// more than maxWait), and false.
func NextArrival(tat, now time.Time, perSecond int, maxWait time.Duration) (next time.Time, wait time.Duration, booked bool) {
	interval := time.Second / time.Duration(perSecond)
	ahead := time.Duration(perSecond-1) * interval
	base := tat
	if base.Before(now) {
		base = now
	}
	wait = max(base.Sub(now)-ahead, 0)
	if wait > maxWait {
		return tat, wait, false
	}
	return base.Add(interval).UTC(), wait, true
}
