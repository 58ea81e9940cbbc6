package store

import (
	"strings"
	"testing"
)

// A pruned run that could not have been kept so is refused, each for its
// own reason; one that could is taken.
func TestValidatePrunedRun(t *testing.T) {
	hash := "sha256:" + strings.Repeat("a", 64)
	good := func() PrunedRun {
		return PrunedRun{
			Run:     Run{ID: "r", State: "SUCCEEDED", Outcome: "success", Head: 3, HeadHash: hash},
			Pruning: Pruning{RunID: "r", HeadHash: hash, Kept: RecordCounts{Events: 3, Intents: 1}},
			Keys:    []Intent{{ID: "i", RunID: "r", EffectType: "refund.pay", IdempotencyKey: "k", ContentDigest: hash}},
		}
	}
	if err := ValidatePrunedRun("import", good()); err != nil {
		t.Fatalf("a pruned run as a store keeps it: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func(*PrunedRun)
		says  string
	}{
		{"no id", func(r *PrunedRun) { r.Run.ID = "" }, "run id is required"},
		{"not ended", func(r *PrunedRun) { r.Run.Outcome = "" }, "has not ended"},
		{"quarantined", func(r *PrunedRun) { r.Run.Quarantine = "x" }, "quarantined"},
		{"another run's pruning", func(r *PrunedRun) { r.Pruning.RunID = "s" }, "is not the header's"},
		{"another head", func(r *PrunedRun) { r.Pruning.HeadHash = "sha256:" + strings.Repeat("b", 64) }, "is not the header's"},
		{"a key missing", func(r *PrunedRun) { r.Keys = nil }, "0 keys, but the pruning kept 1"},
		{"a key of another run", func(r *PrunedRun) { r.Keys[0].RunID = "s" }, "incomplete or of another run"},
		{"a key without its content", func(r *PrunedRun) { r.Keys[0].ContentDigest = "" }, "incomplete"},
		{"a key without its key", func(r *PrunedRun) { r.Keys[0].IdempotencyKey = "" }, "incomplete"},
		{"a malformed head hash", func(r *PrunedRun) { r.Run.HeadHash, r.Pruning.HeadHash = "x", "x" }, "not sha256"},
		{"a negative count", func(r *PrunedRun) { r.Pruning.Kept.Trace = -1 }, "negative count"},
	} {
		r := good()
		tc.spoil(&r)
		err := ValidatePrunedRun("import", r)
		if CodeOf(err) != CodeInvalidInput || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want INVALID_INPUT saying %q", tc.name, err, tc.says)
		}
	}
}
