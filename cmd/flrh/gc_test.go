package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// The collector's target is set for a command, and restored after it,
// unless GOGC is set: then the environment's word stands.
func TestCollectorTarget(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	if v, set := os.LookupEnv("GOGC"); set {
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	os.Unsetenv("GOGC")
	restore := collectorTarget(400)
	if got := debug.SetGCPercent(400); got != 400 {
		t.Errorf("target %d while the command runs, want 400", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("target %d after the command, want 100 restored", got)
	}

	t.Setenv("GOGC", "50")
	restore = collectorTarget(400)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("target %d with GOGC set, want it left at 100", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("target %d after the command with GOGC set, want 100", got)
	}
}
