package mrp

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// stripOracle is the Journey Strip as the contract states it: HOLD,
// then each accepted change's visible state that differs from the last.
func stripOracle(m Machine) []State {
	out := []State{Hold}
	for _, e := range m.Journey {
		if e.Rejected == "" && e.To.Visible() != out[len(out)-1] {
			out = append(out, e.To.Visible())
		}
	}
	return out
}

// AppendStrip leaves what dst holds and appends Strip's states, whatever
// room dst has; Strip is the oracle's strip.
func TestAppendStripIsStrip(t *testing.T) {
	states := []State{Hold, Options, Test, Decide, Failsafe, Exit, Escalate}
	rapid.Check(t, func(rt *rapid.T) {
		var m Machine
		for range rapid.IntRange(0, 24).Draw(rt, "entries") {
			e := Entry{To: rapid.SampledFrom(states).Draw(rt, "to")}
			if rapid.IntRange(0, 3).Draw(rt, "rejected") == 0 {
				e.Rejected = "REJECTED"
			}
			m.Journey = append(m.Journey, e)
		}
		want := stripOracle(m)
		if got := m.Strip(); !slices.Equal(got, want) {
			rt.Fatalf("Strip %v, want %v", got, want)
		}
		prefix := rapid.SliceOfN(rapid.SampledFrom(states), 0, 3).Draw(rt, "prefix")
		dst := make([]State, len(prefix), len(prefix)+rapid.IntRange(0, 12).Draw(rt, "room"))
		copy(dst, prefix)
		got := m.AppendStrip(dst)
		if !slices.Equal(got[:len(prefix)], prefix) || !slices.Equal(got[len(prefix):], want) {
			rt.Fatalf("AppendStrip(%v) %v, want the prefix and %v", prefix, got, want)
		}
	})
}
