package verify

import (
	"crypto/sha256"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// bodySum, continuing control records from the openings it kept, gives
// sha256.Sum256 of every body, whatever came before: stored records, and
// records changed anywhere — inside the opening a kept state follows,
// just after it, near the end — or cut short, one after another through
// one scratch, so that a changed record meets the state kept from its
// honest twin.
func TestBodySumIsSum256(t *testing.T) {
	var bodies [][]byte
	for _, e := range recordedControls(t) {
		bodies = append(bodies, e.Body)
	}
	if len(bodies) < 4 {
		t.Fatalf("only %d control records", len(bodies))
	}
	rapid.Check(t, func(t *rapid.T) {
		x := new(stepScratch)
		n := rapid.IntRange(1, 30).Draw(t, "records")
		for range n {
			b := append([]byte(nil), rapid.SampledFrom(bodies).Draw(t, "record")...)
			switch rapid.IntRange(0, 3).Draw(t, "change") {
			case 1:
				at := rapid.IntRange(0, min(len(b)-1, 200)).Draw(t, "at")
				b[at] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
			case 2:
				at := rapid.IntRange(0, len(b)-1).Draw(t, "at")
				b[at] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
			case 3:
				b = b[:rapid.IntRange(0, len(b)).Draw(t, "cut")]
			}
			kind := rapid.SampledFrom([]string{runner.EventControl, runner.EventRejected, runner.EventAccepted}).Draw(t, "kind")
			if got, want := x.bodySum(kind, b), sha256.Sum256(b); got != want {
				t.Fatalf("bodySum %x, Sum256 %x, of %s", got, want, b)
			}
		}
	})
}

// A run's control records are hashed from the kept openings: for the
// recorded runs, the openings are far fewer than the records.
func TestBodySumKeepsFewOpenings(t *testing.T) {
	x := new(stepScratch)
	controls := recordedControls(t)
	records := len(controls)
	for _, e := range controls {
		if !store.SumMatches(e.Digest, x.bodySum(e.Kind, e.Body)) {
			t.Fatalf("event %d: digest %s is not its body's", e.Seq, e.Digest)
		}
	}
	if len(x.openings) == 0 || len(x.openings) >= records {
		t.Fatalf("%d openings kept for %d records", len(x.openings), records)
	}
	t.Logf("%d openings kept for %d control records", len(x.openings), records)
}

// recordedControls returns the control records of the recorded runs
// "small" and "large", in order.
func recordedControls(t *testing.T) []store.Event {
	t.Helper()
	st := open(t, recorded(t), true)
	var out []store.Event
	for _, id := range []string{"small", "large"} {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == runner.EventControl {
				out = append(out, e)
			}
		}
	}
	return out
}
