package tamper

import (
	"flag"
	"strconv"
	"testing"

	"flrh.dev/flrh/internal/racebuild"
)

// FewerChecksUnderRace sets rapid's number of checks (-rapid.checks) to n
// for the rest of t when the race detector is on and more were asked for.
// A draw of these properties opens, changes and reads a store, ten times
// slower under the detector; a few draws still put the stores' and the
// runner's goroutines under it.
func FewerChecksUnderRace(t testing.TB, n int) {
	f := flag.Lookup("rapid.checks")
	if !racebuild.Enabled || f == nil {
		return
	}
	was := f.Value.String()
	if cur, err := strconv.Atoi(was); err != nil || cur <= n {
		return
	}
	if err := f.Value.Set(strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Value.Set(was) })
}
