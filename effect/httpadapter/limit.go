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

// limits holds back this adapter's requests to what the destination is
// said to bear: at most a number open at once, at most a number started a
// second. Both are this adapter's, in this process: several processes
// reaching one destination each hold their own.
type limits struct {
	slots chan struct{} // nil: no bound on requests in flight
	rate  *rate.Limiter // nil: no bound on requests a second
	wait  time.Duration
	desc  string
}

func newLimits(cfg Config) (*limits, error) {
	switch {
	case cfg.MaxInFlight < 0 || cfg.MaxInFlight > MaxInFlightLimit:
		return nil, fmt.Errorf("httpadapter: MaxInFlight must be from 0 to %d", MaxInFlightLimit)
	case cfg.PerSecond < 0 || cfg.PerSecond > MaxPerSecond:
		return nil, fmt.Errorf("httpadapter: PerSecond must be from 0 to %d", MaxPerSecond)
	case cfg.QueueWait < 0 || cfg.QueueWait > MaxQueueWait:
		return nil, fmt.Errorf("httpadapter: QueueWait must be from 0 to %s", MaxQueueWait)
	case cfg.MaxInFlight == 0 && cfg.PerSecond == 0:
		return nil, nil
	}
	l := &limits{wait: cfg.QueueWait}
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
	return release, nil
}
