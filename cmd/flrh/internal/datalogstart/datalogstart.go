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
// releases it again every quarter millisecond and after every garbage
// collection until the command takes over, so the pages the remaining
// initialisation touches never pile up on top of those of the first part.
//
// It imports neither runtime/debug nor anything else that sorts late in
// the initialisation order (Go initialises, among the packages whose
// imports are done, the first by import path): runtime/debug held its
// first release back until package 155 of 249, at about 17–19 MB resident,
// where without it the first release comes at package 77, at about 13 MB.
// The collector's target for the rest of initialisation is set by the
// sibling package gctarget (LowerGC), which the command imports.
//
// For any other command it does nothing at all.
package datalogstart

import (
	"os"
	"runtime"
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
// it. A release every period caps what can pile up at what initialisation
// touches in that time: 3–5 MB of file pages in a quarter millisecond
// late in initialisation. The wait is a nanosleep (sleep), not a Go timer,
// whose wake-ups come no oftener than every millisecond or so whatever the
// period asked.
const releaseEvery = 250 * time.Microsecond

// state is what init found and did.
type state struct {
	mu       sync.Mutex
	stopped  bool
	pages    *startpages.Pages
	released int
	err      error
	cycles   int    // releases after a collection
	ticks    int    // releases by the clock
	gogcSet  bool   // GOGC is set: the collector's target stays the user's
	restore  func() // puts the collector's target back; nil when it was left alone
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
	s := &state{gogcSet: gogcSet}
	s.pages, s.err = startpages.Find()
	if s.err != nil {
		s.pages = nil
		return s
	}
	// The shared objects (the C library and the loader) too: they are
	// 1.4 MB resident, and only thread creation touches them again.
	s.pages = s.pages.WithLibraries()
	if s.released, s.err = s.pages.Release(); s.err != nil {
		s.pages = nil
		return s
	}
	s.arm()
	go s.tick(releaseEvery)
	return s
}

// tick releases the pages every period until stop. It is the one
// goroutine this package starts, and it ends at its first wake-up after
// the command takes over (or, if the command never starts, with the
// process). Its thread sleeps in the kernel between releases.
func (s *state) tick(period time.Duration) {
	wait := period
	for {
		sleep(wait)
		s.mu.Lock()
		if s.stopped || s.pages == nil {
			s.mu.Unlock()
			return
		}
		start := time.Now()
		if _, err := s.pages.Release(); err != nil {
			s.pages = nil
		} else {
			s.ticks++
		}
		wait = nextWait(period, time.Since(start))
		s.mu.Unlock()
	}
}

// releaseShare bounds the clock's releases to about one part in
// releaseShare of initialisation's wall time.
const releaseShare = 10

// nextWait is how long the clock waits after a release that took took:
// the period, or releaseShare times the release when that is longer. A
// release, and the faults that follow it, cost far more than the period
// on some machines (a virtual machine's madvise took start-up from
// 0.04 s to 0.5–0.8 s at a fixed 250 µs); there the clock backs off, so
// releasing never takes more than a small share of start-up.
func nextWait(period, took time.Duration) time.Duration {
	return max(period, releaseShare*took)
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
		if s.restore != nil {
			s.restore()
		}
	}
	return s.pages, s.released, true, s.err
}

// LowerGC sets the collector's target to initGCPercent for the rest of
// initialisation, with set (runtime/debug.SetGCPercent, passed in so that
// this package need not import it), when init released the pages and GOGC
// is not set; Stop puts the previous target back. Otherwise, and after
// Stop, it does nothing.
func LowerGC(set func(percent int) (previous int)) {
	st.lowerGC(set)
}

func (s *state) lowerGC(set func(int) int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.gogcSet || s.pages == nil || s.restore != nil {
		return
	}
	old := set(initGCPercent)
	s.restore = func() { set(old) }
}
