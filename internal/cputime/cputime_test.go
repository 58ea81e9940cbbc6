//go:build unix

package cputime

import (
	"os"
	"testing"
	"time"
)

// Busy work moves the reading forward, and the reading never goes back.
func TestUsedGrowsWithWork(t *testing.T) {
	before := Used()
	if before <= 0 {
		t.Fatalf("Used() = %v at start, want > 0", before)
	}
	x := uint64(1)
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	after := Used()
	if after <= before {
		t.Fatalf("Used() went from %v to %v over 50 ms of work (x=%d)", before, after, x)
	}
}

// This process read through /proc agrees with Used to within the
// ticks' resolution, and a process that does not exist is an error.
func TestOfProcessesReadsProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	x := uint64(1)
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		x = x*6364136223846793005 + 1442695040888963407
	}
	got, err := OfProcesses([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if used := Used(); got <= 0 || got > used+20*time.Millisecond || got < used-100*time.Millisecond {
		t.Fatalf("OfProcesses(self) = %v, Used = %v (x=%d)", got, used, x)
	}
	if _, err := OfProcesses([]int{1 << 30}); err == nil {
		t.Fatal("a process that does not exist was read")
	}
}
