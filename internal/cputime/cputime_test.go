//go:build unix

package cputime

import (
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
