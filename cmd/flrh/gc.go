package main

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is the collector's target while flrh serve advances runs.
// A runner keeps little live (leases, caches, the runs it is advancing)
// and allocates fast (every tick decodes, decides and encodes): at the
// default target of 100 the collector ran many times a second and took
// about a fifth of a governed step's CPU. At 400 a step costs about 15 %
// less CPU (BenchmarkFlrhSQLite with GOGC=400, docs/performance/runner.md)
// for a heap that may grow to five times what is live; GOMEMLIMIT bounds
// it where memory is tight.
const serveGCPercent = 400

// collectorTarget sets the collector's target to percent unless the GOGC
// environment variable says otherwise, and returns what restores it.
func collectorTarget(percent int) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}
