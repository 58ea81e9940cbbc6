// Package sharedlimit holds effect adapters' request limits for every
// process that shares a store: a destination that bears three requests
// at once bears three from the whole deployment (several `flrh serve`
// processes on one PostgreSQL, or a server and the command line on one
// embedded store), not three from each process.
//
// A Board is made before the store is opened, handed to the adapters as
// their httpadapter.Sharer when the bundles are wired, and bound to the
// store once it is open (Bind). Each request asks the store: one write to
// take a slot of a limit on requests open at once and one to give it back,
// one to book its turn under a limit on requests a second. Turns under a
// rate are booked ahead, so requests start in the order they asked,
// across processes. Waiters for a slot ask again, backing off, until
// their wait runs out, keeping their place in the limit's queue: a slot
// given back goes to the longest waiting, across processes.
package sharedlimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"flrh.dev/flrh/store"
)

// Errors Admit wraps.
var (
	// ErrUnbound: the board was never bound to a store that holds
	// shared limits, so it cannot say whether there is room.
	ErrUnbound = errors.New("no store holds the shared limits here")
	// ErrNoRoom: no room was found before the caller's context was done.
	ErrNoRoom = errors.New("no room")
)

// Polling bounds: a waiter for a slot asks again after firstPoll, doubling
// up to lastPoll, each with up to a quarter more at random so that waiters
// that found no room together do not ask together again.
const (
	firstPoll = 5 * time.Millisecond
	lastPoll  = 200 * time.Millisecond
	// giveTimeout bounds giving a slot back, which happens after the
	// request, whatever became of the request's context. A slot not given
	// back is free once its hold passes.
	giveTimeout = 5 * time.Second
	// queueFor is how long a waiter's place in a limit's queue is kept
	// without its asking again: several of its longest polls, so that a
	// slow store or a pause does not lose it, and short enough that a
	// stopped process's place is soon passed.
	queueFor = 2 * time.Second
	// maxBooking bounds how far ahead a turn under a rate is booked when
	// the caller sets no deadline: an adapter waits at most a minute.
	maxBooking = time.Minute
)

// Board admits requests under limits its store holds. The zero Board is
// unbound and admits nothing; it is safe for concurrent use.
type Board struct {
	// Observe, when set (before the board is first used), is told of each
	// Admit: the limit, its outcome (Admitted, NoRoom or Failed) and how
	// long it waited.
	Observe func(limit, outcome string, waited time.Duration)

	owner  string
	seq    atomic.Uint64
	limits atomic.Pointer[bound]
}

// Admit's outcomes, as Observe is told them.
const (
	Admitted = "admitted" // room found
	NoRoom   = "no_room"  // none found within the wait: nothing sent
	Failed   = "failed"   // the limit could not be read (no store, a store error): nothing sent
)

type bound struct{ l store.SharedLimits }

// New returns an unbound board whose requests' holders are named after
// owner (the process: a host and pid), each with its own sequence number.
func New(owner string) *Board { return &Board{owner: owner} }

// Bind has the board hold its limits in s from now on. It returns false,
// and leaves the board as it was, when s holds no shared limits.
func (b *Board) Bind(s store.Store) bool {
	l, ok := store.SharedLimitsOf(s)
	if ok {
		b.limits.Store(&bound{l})
	}
	return ok
}

// InUse reads the limits in use in the store the board is bound to
// (store.SharedLimits.LimitsInUse): ErrUnbound before it is bound.
func (b *Board) InUse(ctx context.Context) ([]store.LimitUse, error) {
	l := b.limits.Load()
	if l == nil {
		return nil, ErrUnbound
	}
	return l.l.LimitsInUse(ctx)
}

// Admit implements httpadapter.Sharer: it takes a slot of the limit name
// (when maxInFlight > 0), then room under its rate (when perSecond > 0),
// waiting until ctx is done. A rate's turn is booked, so that requests
// start in the order they asked; one that ctx's deadline cannot cover is
// refused at once. The slot is given back by the function it
// returns, or when hold passes.
func (b *Board) Admit(ctx context.Context, name string, maxInFlight, perSecond int, hold time.Duration) (func(), error) {
	if b.Observe == nil {
		return b.admit(ctx, name, maxInFlight, perSecond, hold)
	}
	began := time.Now()
	release, err := b.admit(ctx, name, maxInFlight, perSecond, hold)
	outcome := Admitted
	switch {
	case errors.Is(err, ErrNoRoom):
		outcome = NoRoom
	case err != nil:
		outcome = Failed
	}
	b.Observe(name, outcome, time.Since(began))
	return release, err
}

func (b *Board) admit(ctx context.Context, name string, maxInFlight, perSecond int, hold time.Duration) (func(), error) {
	bd := b.limits.Load()
	if bd == nil {
		return nil, fmt.Errorf("shared limit %q: %w", name, ErrUnbound)
	}
	l := bd.l
	release := func() {}
	if maxInFlight > 0 {
		holder := b.owner + "#" + strconv.FormatUint(b.seq.Add(1), 10)
		slot, err := takeSlot(ctx, l, name, maxInFlight, holder, hold)
		if err != nil {
			return nil, err
		}
		release = func() {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveTimeout)
			defer cancel()
			// An error leaves the slot held until its hold passes: the
			// limit is then the lower for a while, never exceeded.
			_ = l.GiveSlot(gctx, name, slot, holder)
		}
	}
	if perSecond > 0 {
		if err := takeToken(ctx, l, name, perSecond); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

func takeSlot(ctx context.Context, l store.SharedLimits, name string, max int, holder string, hold time.Duration) (int, error) {
	poll := firstPoll
	for {
		slot, ok, err := l.TakeSlot(ctx, name, max, holder, hold, queueFor)
		switch {
		case err == nil && ok:
			return slot, nil
		case ctx.Err() != nil:
			// A take the end of the wait cut short may have been made: its
			// slot is free again once its hold passes.
			leave(ctx, l, name, holder)
			return 0, fmt.Errorf("shared limit %q (%d in flight): %w", name, max, ErrNoRoom)
		case err != nil:
			leave(ctx, l, name, holder)
			return 0, fmt.Errorf("shared limit %q: %w", name, err)
		}
		if !sleep(ctx, poll+rand.N(poll/4+1)) {
			leave(ctx, l, name, holder)
			return 0, fmt.Errorf("shared limit %q (%d in flight): %w", name, max, ErrNoRoom)
		}
		poll = min(2*poll, lastPoll)
	}
}

// leave takes a waiter that gives up out of the limit's queue, whatever
// became of its context; if that fails, its place lapses after queueFor.
func leave(ctx context.Context, l store.SharedLimits, name, holder string) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveTimeout)
	defer cancel()
	_ = l.LeaveQueue(gctx, name, holder)
}

// takeToken books the request's turn under the rate, as far ahead as
// ctx's deadline allows (at most maxBooking), and waits for it: requests
// are served in the order they booked, across processes. A turn further
// away is refused at once.
func takeToken(ctx context.Context, l store.SharedLimits, name string, perSecond int) error {
	maxWait := maxBooking
	if d, ok := ctx.Deadline(); ok {
		maxWait = max(min(time.Until(d), maxBooking), 0)
	}
	wait, booked, err := l.TakeToken(ctx, name, perSecond, maxWait)
	switch {
	case err != nil && ctx.Err() != nil, err == nil && !booked:
		return fmt.Errorf("shared limit %q (%d a second): %w", name, perSecond, ErrNoRoom)
	case err != nil:
		return fmt.Errorf("shared limit %q: %w", name, err)
	}
	// A turn booked and not used (the caller gave up meanwhile) is lost:
	// the rate is the lower for one request, never exceeded.
	if wait > 0 && !sleep(ctx, wait) {
		return fmt.Errorf("shared limit %q (%d a second): %w", name, perSecond, ErrNoRoom)
	}
	return nil
}

// sleep waits d, or until ctx is done; it says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
