package workflow

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden run digests")

// goldenRun scripts a run of an example bundle: inputs, and after each
// effect its receipt, recording per step the state digest, the intents
// and the completion. The digests pin the whole pipeline's bytes (F, L,
// seam, R, H and the state layout) so any change to what a run decides or
// records shows up here, on every architecture. untraced picks the ticks
// decided by DecideUntraced (nil: none), which must record the same.
func goldenRun(t *testing.T, example string, inputs [][]byte, untraced func(seq int64) bool) []any {
	w := compileExample(t, example)
	st, err := w.Init("golden-" + example)
	if err != nil {
		t.Fatal(err)
	}
	var steps []any
	seq := int64(0)
	decide := func(kind string, body []byte) Result {
		seq++
		decide := w.Decide
		if untraced != nil && untraced(seq) {
			decide = w.DecideUntraced
		}
		r, err := decide(st, Input{Seq: seq, Kind: kind, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		st = r.State
		var intents []any
		for _, e := range r.Effects {
			intents = append(intents, map[string]any{"intent_id": e.Intent.IntentID, "idempotency_key": e.Intent.IdempotencyKey,
				"approval": e.Approval != nil})
		}
		steps = append(steps, map[string]any{"seq": seq, "kind": kind, "state": cjson.Digest(r.State), "intents": nonNilAny(intents),
			"completion": string(r.Completion), "refusal": r.Refusal})
		return r
	}
	for _, in := range inputs {
		r := decide(KindInput, in)
		for _, e := range r.Effects {
			decide(KindReceipt, receiptFor(e, protocol.OutcomeConfirmedSuccess))
		}
	}
	return steps
}

// The golden runs, decided by Decide, by DecideUntraced, and by the two
// in turn (an untraced tick keeps no snapshot digest for the next).
func TestGoldenRuns(t *testing.T) {
	for _, mode := range []struct {
		name     string
		untraced func(seq int64) bool
	}{
		{"traced", nil},
		{"untraced", func(int64) bool { return true }},
		{"odd-untraced", func(seq int64) bool { return seq%2 == 1 }},
		{"even-untraced", func(seq int64) bool { return seq%2 == 0 }},
	} {
		t.Run(mode.name, func(t *testing.T) { testGoldenRuns(t, mode.untraced) })
	}
}

func testGoldenRuns(t *testing.T, untraced func(seq int64) bool) {
	got, err := cjson.Marshal(map[string]any{
		"refund-agent": goldenRun(t, "refund-agent", [][]byte{
			refundInput("r-1", 40, "alice", "damaged"),
			refundInput("r-2", 900, "bob", "late"),
			refundInput("r-3", 20, "mallory", "damaged"),
			refundInput("r-4", 30, "carol", "goodwill"),
		}, untraced),
		"ops-agent": goldenRun(t, "ops-agent", [][]byte{
			opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health"),
			opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak"),
			opsInput("restart.requested/1", "rst-2", "billing", "dest:ops-billing", "reason", "slow"),
		}, untraced),
	})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const path = "testdata/golden-runs.json"
	if *update && untraced == nil {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("golden runs differ from %s (rerun with -update if the change is intended)\n got %s", path, got)
	}
}
