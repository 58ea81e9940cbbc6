package workflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"hash"
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
// When traces is not nil, every note of every tick's trace is written to
// it, its kind and then its body.
func goldenRun(t *testing.T, example string, inputs [][]byte, untraced func(seq int64) bool, traces hash.Hash) []any {
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
		if traces != nil {
			for _, n := range r.Trace {
				traces.Write([]byte(n.Kind))
				traces.Write(n.Body)
			}
		}
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
	var traces hash.Hash
	if untraced == nil {
		traces = sha256.New()
	}
	got, err := cjson.Marshal(map[string]any{
		"refund-agent": goldenRun(t, "refund-agent", [][]byte{
			refundInput("r-1", 40, "alice", "damaged"),
			refundInput("r-2", 900, "bob", "late"),
			refundInput("r-3", 20, "mallory", "damaged"),
			refundInput("r-4", 30, "carol", "goodwill"),
		}, untraced, traces),
		"ops-agent": goldenRun(t, "ops-agent", [][]byte{
			opsInput("diagnostics.requested/1", "chk-1", "api", "dest:ops-api", "probe", "health"),
			opsInput("restart.requested/1", "rst-1", "api", "dest:ops-api", "reason", "leak"),
			opsInput("restart.requested/1", "rst-2", "billing", "dest:ops-billing", "reason", "slow"),
		}, untraced, traces),
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
	if traces != nil {
		goldenTraces(t, hex.EncodeToString(traces.Sum(nil))+"\n")
	}
}

// goldenTraces holds the digest of the traced golden runs' notes (every
// note's kind and body, in order) to testdata/golden-traces.txt: the
// trace is not compared by a replay, so a change to what a tick notes,
// or one that drops a note's input believing nothing notes it, shows up
// here.
func goldenTraces(t *testing.T, got string) {
	const path = "testdata/golden-traces.txt"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("the golden runs' traces digest to %s, %s holds %s (rerun with -update if the change is intended)", got, path, want)
	}
}
