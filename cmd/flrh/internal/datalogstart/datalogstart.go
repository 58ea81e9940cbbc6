// Package datalogstart releases the executable's start-up pages while the
// product's packages are still initialising, when the command line asks
// for `flrh datalog`.
//
// Initialising every package of the product faults in most of the
// binary's code and tables, and the kernel maps each touched page with
// its neighbours (fault-around), so by the time the command runs the
// executable's pages alone are about 19 MB of resident memory: the whole
// peak of a small Datalog run. Releasing them once when the command
// starts (internal/startpages) comes too late for that peak. This package
// is initialised part-way through (its imports place it after the
// standard library's and before most of the product's own and third-party
// initialisation), releases what start-up touched so far, and then
// releases it again every millisecond and after every garbage collection
// until the command takes over, so the pages the remaining initialisation
// touches never pile up on top of those of the first part.
//
// For any other command it does nothing at all.
package datalogstart

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"flrh.dev/flrh/internal/startpages"
)

// initGCPercent is the collector's target while the remaining packages
// initialise: a cycle, and so a release, every half of the live heap
// allocated. Initialisation allocates a few megabytes; at the default
// target it sees one cycle, at this one three or four.
const initGCPercent = 50

// releaseEvery is how often the pages are released while the remaining
// packages initialise. Collections alone came too seldom: the code of a
// hundred packages, run once each, faulted 13–15 MB of the executable back
// between two of them, and the release that followed (an madvise, which
// is when the kernel records the resident high-water mark) counted all of
// it. A release every millisecond caps what can pile up at what
// initialisation touches in that time; 0.25, 0.5 and 2 ms measured the
// same within the noise.
const releaseEvery = time.Millisecond

// state is what init found and did.
type state struct {
	mu       sync.Mutex
	stopped  bool
	pages    *startpages.Pages
	released int
	err      error
	cycles   int           // releases after a collection
	ticks    int           // releases by the clock
	done     chan struct{} // closed by stop; ends the clock's releases
	oldGC    int           // the target to restore; -1 when it was left alone
}

var st *state

func init() {
	_, gogcSet := os.LookupEnv("GOGC")
	st = start(os.Args, gogcSet)
}

// start releases the start-up pages and watches the collector when args
// name the datalog command; otherwise it returns nil and changes nothing.
func start(args []string, gogcSet bool) *state {
	if len(args) < 2 || args[1] != "datalog" {
		return nil
	}
	s := &state{oldGC: -1, done: make(chan struct{})}
	s.pages, s.err = startpages.Find()
	if s.err != nil {
		s.pages = nil
		return s
	}
	if s.released, s.err = s.pages.Release(); s.err != nil {
		s.pages = nil
		return s
	}
	if !gogcSet {
		s.oldGC = debug.SetGCPercent(initGCPercent)
	}
	s.arm()
	go s.tick(releaseEvery)
	return s
}

// tick releases the pages every period until stop. It is the one
// goroutine this package starts, and it ends when the command takes over
// (or, if the command never starts, with the process).
func (s *state) tick(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.stopped || s.pages == nil {
			s.mu.Unlock()
			return
		}
		if _, err := s.pages.Release(); err != nil {
			s.pages = nil
		} else {
			s.ticks++
		}
		s.mu.Unlock()
	}
}

// sentinel is what the finalizer hangs on: big enough not to be batched
// with other tiny allocations, whose finalizers may never run.
type sentinel struct{ _ [16]byte }

// arm releases the pages again after the next collection, and re-arms.
// The finalizer runs on the runtime's finalizer goroutine; it uses only
// startpages, which this package's imports have initialised before it.
func (s *state) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stopped || s.pages == nil {
			return
		}
		if _, err := s.pages.Release(); err != nil {
			s.pages = nil
			return
		}
		s.cycles++
		s.arm()
	})
}

// Stop ends the watch, puts the collector's target back and returns the
// plan init found, the bytes its first release advised and, when nothing
// was released, why. ran is false when init did nothing (the command line
// did not start with datalog, as when the command runs inside a test), so
// the caller plans for itself.
func Stop() (pages *startpages.Pages, released int, ran bool, err error) {
	return st.stop()
}

func (s *state) stop() (*startpages.Pages, int, bool, error) {
	if s == nil {
		return nil, 0, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.stopped = true
		close(s.done)
		if s.oldGC >= 0 {
			debug.SetGCPercent(s.oldGC)
		}
	}
	return s.pages, s.released, true, s.err
}
