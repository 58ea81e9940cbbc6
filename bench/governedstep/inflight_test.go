package governedstep

import (
	"errors"
	"sync"
	"testing"
)

// inFlight calls every index once, whatever the number in flight, and
// returns an error a call returned.
func TestInFlight(t *testing.T) {
	for _, c := range []int{0, 1, 3, 8, 40} {
		var mu sync.Mutex
		seen := map[int]int{}
		if err := inFlight(25, c, func(i int) error { mu.Lock(); seen[i]++; mu.Unlock(); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			if seen[i] != 1 {
				t.Fatalf("c=%d: index %d called %d times", c, i, seen[i])
			}
		}
		if len(seen) != 25 {
			t.Fatalf("c=%d: %d indices called, want 25", c, len(seen))
		}
		boom := errors.New("boom")
		if err := inFlight(25, c, func(i int) error {
			if i == 7 {
				return boom
			}
			return nil
		}); err != boom {
			t.Fatalf("c=%d: %v, want the call's error", c, err)
		}
	}
}
