package httpadapter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// DefaultQueueWait is Config.QueueWait's default.
const DefaultQueueWait = 5 * time.Second

// Bounds on an adapter's limits.
const (
	MaxInFlightLimit = 1024
	MaxPerSecond     = 100_000
	MaxQueueWait     = time.Minute
)

// A Sharer admits requests under limits held beyond this process: for
// every process that shares a store (package sharedlimit).
type Sharer interface {
	// Admit waits, until ctx is done, for room for one request under the
	// limit name: at most maxInFlight open at once and perSecond started a
	// second (0: no bound), across everything the Sharer reaches. It
	// returns what gives the room back once the request is done, which
	// is given back anyway after hold, should this process stop before.
	// An error means no room was found or the limit could not be read;
	// nothing is held then.
	Admit(ctx context.Context, name string, maxInFlight, perSecond int, hold time.Duration) (release func(), err error)
}

// sharedHoldMargin is how long past the adapter's timeout a request's
// shared slot stays held when its process stops before giving it back.
const sharedHoldMargin = 5 * time.Second

// limits holds back this adapter's requests to what the destination is
// said to bear: at most a number open at once, at most a number started a
// second. Both are this adapter's, in this process, and, when shared is
// set, held under the same name by every process it reaches too.
type limits struct {
	slots chan struct{} // nil: no bound on requests in flight
	rate  *rate.Limiter // nil: no bound on requests a second
	wait  time.Duration
	desc  string

	shared      Sharer
	name        string
	max, perSec int
	hold        time.Duration // a shared slot's hold: the request's timeout and a margin
}

func newLimits(cfg Config) (*limits, error) {
	switch {
	case cfg.MaxInFlight < 0 || cfg.MaxInFlight > MaxInFlightLimit:
		return nil, fmt.Errorf("httpadapter: MaxInFlight must be from 0 to %d", MaxInFlightLimit)
	case cfg.PerSecond < 0 || cfg.PerSecond > MaxPerSecond:
		return nil, fmt.Errorf("httpadapter: PerSecond must be from 0 to %d", MaxPerSecond)
	case cfg.QueueWait < 0 || cfg.QueueWait > MaxQueueWait:
		return nil, fmt.Errorf("httpadapter: QueueWait must be from 0 to %s", MaxQueueWait)
	case cfg.Shared != nil && cfg.SharedName == "":
		return nil, errors.New("httpadapter: shared limits need SharedName")
	case cfg.Shared == nil && cfg.SharedName != "":
		return nil, fmt.Errorf("httpadapter: SharedName %q names a shared limit but no Sharer holds it", cfg.SharedName)
	case cfg.Shared != nil && cfg.MaxInFlight == 0 && cfg.PerSecond == 0:
		return nil, fmt.Errorf("httpadapter: shared limit %q has no MaxInFlight and no PerSecond to share", cfg.SharedName)
	case cfg.MaxInFlight == 0 && cfg.PerSecond == 0:
		return nil, nil
	}
	l := &limits{wait: cfg.QueueWait, shared: cfg.Shared, name: cfg.SharedName, max: cfg.MaxInFlight, perSec: cfg.PerSecond}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	l.hold = timeout + sharedHoldMargin
	if l.wait == 0 {
		l.wait = DefaultQueueWait
	}
	if cfg.MaxInFlight > 0 {
		l.slots = make(chan struct{}, cfg.MaxInFlight)
		l.desc = fmt.Sprintf("%d in flight", cfg.MaxInFlight)
	}
	if cfg.PerSecond > 0 {
		// A burst of one second's worth: a quiet destination takes that
		// many at once, then one each 1/PerSecond.
		l.rate = rate.NewLimiter(rate.Limit(cfg.PerSecond), cfg.PerSecond)
		if l.desc != "" {
			l.desc += ", "
		}
		l.desc += fmt.Sprintf("%d a second", cfg.PerSecond)
	}
	if l.shared != nil {
		l.desc += fmt.Sprintf(", shared as %q", l.name)
	}
	return l, nil
}

// errBusy is a request that found no room within the queue wait.
var errBusy = errors.New("no room")

// admit waits, at most the queue wait, for room to send one request, and
// returns what gives it back once the request is done. Nothing has been
// sent when it fails.
func (l *limits) admit(ctx context.Context) (func(), error) {
	if l == nil {
		return func() {}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	release := func() {}
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			release = func() { <-l.slots }
		case <-wctx.Done():
			return nil, fmt.Errorf("%w for a request within %s (at most %s)", errBusy, l.wait, l.desc)
		}
	}
	if l.rate != nil {
		// Wait refuses at once a wait its context's deadline cannot cover.
		if err := l.rate.Wait(wctx); err != nil {
			release()
			return nil, fmt.Errorf("%w for a request within %s (at most %s)", errBusy, l.wait, l.desc)
		}
	}
	if l.shared != nil {
		// This process's room first: it costs nothing to ask for, and
		// keeps this process's waiters from asking the store at once.
		give, err := l.shared.Admit(wctx, l.name, l.max, l.perSec, l.hold)
		if err != nil {
			release()
			return nil, fmt.Errorf("%w for a request within %s (at most %s): %v", errBusy, l.wait, l.desc, err)
		}
		local := release
		release = func() { give(); local() }
	}
	return release, nil
}
