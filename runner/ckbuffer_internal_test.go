package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestEncodeReusedMatchesEncode writes a run's checkpoints one after
// another into its buffer (encodeReused) while its state and its other
// members grow and shrink: each is encode's bytes.
func TestEncodeReusedMatchesEncode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCheckpoint(t)
		for i := range rapid.IntRange(1, 8).Draw(t, "flushes") {
			if i > 0 {
				next := genCheckpoint(t)
				next.written, next.rest, next.restBefore = c.written, c.rest, c.restBefore
				c = next
			}
			want, werr := c.encode()
			got, gerr := c.encodeReused()
			if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("flush %d: encodeReused = %s, %v\nencode = %s, %v", i, got, gerr, want, werr)
			}
		}
	})
}

// TestCheckpointBufferGrowsByDoubling holds a run's checkpoint buffer to
// about one allocation each time its checkpoints double in length, as
// its state grows at every flush.
// The checkpoints of a governed step alternate between one holding an
// open effect (its intent and payload, a kilobyte or more) and one
// without: the buffer still doubles, rather than being grown by append at
// every other flush.
func TestCheckpointBufferGrowsByDoubling(t *testing.T) {
	for _, alternating := range []bool{false, true} {
		t.Run(fmt.Sprint("alternating=", alternating), func(t *testing.T) { checkBufferDoubles(t, alternating) })
	}
}

func checkBufferDoubles(t *testing.T, alternating bool) {
	c := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, WorkflowID: "wf", WorkflowDigest: "d", Completion: "continue"}
	var strip []any
	allocs := 0
	first := 0
	for i := range 200 {
		strip = append(strip, map[string]any{"step": fmt.Sprint(i), "note": "a note of the step's journey, some forty bytes"})
		c.setState(map[string]any{"strip": strip})
		c.Open = []openEffect{}
		if alternating && i%2 == 1 {
			c.Open = []openEffect{{IntentID: "i", Stage: stagePlanned, Intent: map[string]any{"note": strings.Repeat("x", 1500)},
				Payload: map[string]any{"amount": int64(i)}}}
		}
		if _, err := c.stateEmbedded(); err != nil {
			t.Fatal(err)
		}
		before := cap(c.written)
		b, err := c.encodeReused()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = len(b)
		} else if cap(c.written) != before {
			allocs++
		}
	}
	// From the first checkpoint's length to the last's, doublings:
	last, _ := c.encode()
	doublings := 0
	for n := first; n < len(last); n *= 2 {
		doublings++
	}
	t.Logf("replaced %d times for checkpoints from %d to %d bytes (%d doublings)", allocs, first, len(last), doublings)
	if allocs > doublings {
		t.Fatalf("the buffer was replaced %d times for checkpoints from %d to %d bytes (%d doublings)", allocs, first, len(last), doublings)
	}
}
