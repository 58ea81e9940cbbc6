package authority

import (
	"testing"

	"flrh.dev/flrh/internal/racebuild"
)

// TestAuthorizeAllocations counts a decision's allocations for a batch
// of one proposal with a verified capability: its records, its string
// arena's buffer (the gates' reasons are cut from it too) and the control
// event's payload map (two). The
// ticket's side effects, its view for the MRP step and the machine's
// journey are in the records, the FHR's digest in the decision's
// strings; the strings found plain are in the pooled preimage buffer.
func TestAuthorizeAllocations(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	in := policy100Input(t, false)
	if d, err := Authorize(in); err != nil || d.Outcomes[0].Intent == nil {
		t.Fatalf("does not authorize: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Authorize(in) }); n > 4 {
		t.Fatalf("Authorize allocates %v times a decision, want at most 4", n)
	}
}
