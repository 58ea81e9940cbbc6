package bundle

import (
	"fmt"
	"testing"
)

// BenchmarkGovernedRefundRun is one whole run of the refund bundle per
// iteration: input accepted, F/L/seam/R/H, intent + checkpoint + outbox
// committed on SQLite (synchronous=FULL), the payment sent to the sandbox
// over loopback HTTP, the receipt committed and decided, the run verified
// complete.
func BenchmarkGovernedRefundRun(b *testing.B) {
	h := newHarnessTB(b, "refund-agent")
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("bench-%d", i)
		h.start(id, refund("r-"+id, 40, "alice", "damaged"))
	}
	b.StopTimer()
	if s := h.status(fmt.Sprintf("bench-%d", i)); s.State != "SUCCEEDED" {
		b.Fatalf("last run ended %s", s.State)
	}
}
