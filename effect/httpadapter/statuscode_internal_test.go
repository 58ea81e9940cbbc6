package httpadapter

import (
	"fmt"
	"testing"
)

// statusCode spells every status as fmt.Sprintf("HTTP_%d") did, a
// success's without an allocation.
func TestStatusCodeIsSprintf(t *testing.T) {
	for s := -5; s < 1100; s++ {
		if got, want := statusCode(s), fmt.Sprintf("HTTP_%d", s); got != want {
			t.Fatalf("status %d: %q, want %q", s, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = statusCode(201) }); n != 0 {
		t.Fatalf("%v allocations for a success's code", n)
	}
}
