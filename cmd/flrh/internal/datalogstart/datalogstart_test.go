package datalogstart

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Any command line but datalog's leaves the process as it was.
func TestOtherCommandsChangeNothing(t *testing.T) {
	before := gcPercent()
	for _, args := range [][]string{nil, {"flrh"}, {"flrh", "demo"}, {"flrh", "why", "datalog"}, {"flrh", "--help", "datalog"}} {
		if s := start(args, false); s != nil {
			t.Fatalf("%q: started", args)
		}
		if got := gcPercent(); got != before {
			t.Fatalf("%q: target %d %%, want %d %%", args, got, before)
		}
		var none *state
		none.lowerGC(debug.SetGCPercent)
		if got := gcPercent(); got != before {
			t.Fatalf("lowerGC without a start: target %d %%, want %d %%", got, before)
		}
		if p, n, ran, err := none.stop(); p != nil || n != 0 || ran || err != nil {
			t.Fatalf("stop without a start: %v %d %v %v", p, n, ran, err)
		}
	}
}

// For datalog the pages are released at once and after every collection,
// the target is lowered while packages initialise, and Stop ends the watch
// and puts the target back.
func TestDatalogReleasesAndStops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start-up pages are released on Linux only")
	}
	before := gcPercent()
	s := start([]string{"flrh", "datalog", "p.dl"}, false)
	if s == nil || s.err != nil || s.pages == nil || s.released == 0 {
		t.Fatalf("start: %+v", s)
	}
	if got := gcPercent(); got != before {
		s.stop()
		t.Fatalf("target %d %% before lowerGC, want %d %%", got, before)
	}
	s.lowerGC(debug.SetGCPercent)
	s.lowerGC(func(int) int { t.Fatal("lowered twice"); return 0 })
	if got := gcPercent(); got != initGCPercent {
		s.stop()
		t.Fatalf("target %d %% while initialising, want %d %%", got, initGCPercent)
	}
	cycles := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cycles
	}
	deadline := time.Now().Add(5 * time.Second)
	for cycles() < 2 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if cycles() < 2 {
		s.stop()
		t.Fatalf("%d releases after collections, want at least 2", cycles())
	}
	p, n, ran, err := s.stop()
	if p != s.pages || n != s.released || !ran || err != nil {
		t.Fatalf("stop: %v %d %v %v", p, n, ran, err)
	}
	if got := gcPercent(); got != before {
		t.Fatalf("target %d %% after stop, want %d %%", got, before)
	}
	after := cycles()
	for range 3 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if cycles() != after {
		t.Fatalf("released after stop: %d → %d", after, cycles())
	}
	// Stopping twice is harmless and changes nothing more, and the
	// target is not lowered once the command has taken over.
	if _, _, ran, _ := s.stop(); !ran || gcPercent() != before {
		t.Fatal("second stop")
	}
	s.lowerGC(debug.SetGCPercent)
	if got := gcPercent(); got != before {
		t.Fatalf("target %d %% after lowerGC past stop, want %d %%", got, before)
	}
}

// A GOGC the user set is kept while packages initialise.
func TestDatalogKeepsAGOGCTheUserSet(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start-up pages are released on Linux only")
	}
	before := gcPercent()
	s := start([]string{"flrh", "datalog"}, true)
	defer s.stop()
	s.lowerGC(debug.SetGCPercent)
	if got := gcPercent(); got != before {
		t.Fatalf("target %d %%, want %d %% (kept)", got, before)
	}
}

// For datalog the pages are also released by the clock, without any
// collection, and those releases end with stop.
func TestDatalogReleasesByTheClockUntilStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start-up pages are released on Linux only")
	}
	// No collection may run while the clock is watched: a target this
	// high leaves the test's few allocations far below it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	s := start([]string{"flrh", "datalog", "p.dl"}, true)
	if s == nil || s.err != nil || s.pages == nil {
		t.Fatalf("start: %+v", s)
	}
	counts := func() (ticks, cycles int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ticks, s.cycles
	}
	deadline := time.Now().Add(5 * time.Second)
	for ticks, _ := counts(); ticks < 3 && time.Now().Before(deadline); ticks, _ = counts() {
		time.Sleep(releaseEvery)
	}
	ticks, cycles := counts()
	if ticks < 3 || cycles != 0 {
		s.stop()
		t.Fatalf("%d releases by the clock and %d after collections, want at least 3 and 0", ticks, cycles)
	}
	s.stop()
	after, _ := counts()
	time.Sleep(20 * releaseEvery)
	if ticks, _ := counts(); ticks != after {
		t.Fatalf("released by the clock after stop: %d → %d", after, ticks)
	}
}

// The clock keeps its period while releases are cheap and backs off to
// ten times a release's cost when they are not.
func TestNextWaitBacksOff(t *testing.T) {
	for _, c := range []struct{ took, want time.Duration }{
		{0, releaseEvery},
		{10 * time.Microsecond, releaseEvery},
		{25 * time.Microsecond, releaseEvery},
		{100 * time.Microsecond, time.Millisecond},
		{3 * time.Millisecond, 30 * time.Millisecond},
	} {
		if got := nextWait(releaseEvery, c.took); got != c.want {
			t.Errorf("after a release of %v: wait %v, want %v", c.took, got, c.want)
		}
	}
}
