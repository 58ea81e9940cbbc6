package bundle

import (
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/store"
)

// A rate-limited destination: the sandbox answers the refund's first
// attempt 429 with Retry-After: 1 over real HTTP, and the runner sends the
// retry, with the same key, no sooner than a second later. One payment,
// a record that verifies and replays.
func TestRateLimitedDestinationIsRetriedWhenItAsks(t *testing.T) {
	h := newHarness(t, "refund-agent")
	if err := h.sb.Inject(sandbox.Fault{Times: 1, Status: 429, RetryAfterSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	h.start("refund-limited", refund("r-1101", 40, "alice", "damaged item"))
	took := time.Since(began)
	if s := h.status("refund-limited"); s.State != "SUCCEEDED" {
		t.Fatalf("state %s", s.State)
	}
	ins := h.intents("refund-limited")
	if len(ins) != 1 || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
		t.Fatalf("intents %+v", ins)
	}
	ats, err := h.st.Attempts(h.ctx, ins[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ats) != 2 || ats[0].Status != store.AttemptFailedTransient || ats[0].Detail != "INJECTED_FAILURE" || ats[1].Status != store.AttemptSucceeded {
		t.Fatalf("attempts %+v", ats)
	}
	if took < time.Second {
		t.Fatalf("the run ended %v after it started: the retry did not wait the second the destination asked", took)
	}
	recs := h.trace("refund-limited", "retry_scheduled")
	if len(recs) != 1 || recs[0]["destination_asked_millis"] != float64(1000) || recs[0]["wait_millis"].(float64) < 1000 {
		t.Fatalf("retry_scheduled %v", recs)
	}
	h.checkRecord("refund-limited")
}
