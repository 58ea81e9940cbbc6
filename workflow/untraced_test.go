package workflow

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// DecideUntraced answers as Decide does, the trace aside: over drawn runs
// of the refund and ops agents — requests of drawn amounts and payees
// (approvals, blocked payees, refusals), receipts of drawn outcomes for
// the effects planned so far, receipts for intents never planned, bodies
// that do not parse, and inputs out of logical order — the same State
// bytes, Effects, Completion and Refusal, or the same error, tick by
// tick, with no Trace. Three workflows of their own caches decide each
// run: one traced, one untraced and one that alternates, so that a
// traced tick follows an untraced one, whose snapshot has no digest
// kept.
func TestDecideUntracedIsDecide(t *testing.T) {
	examples := map[string][3]*Workflow{}
	for _, name := range []string{"refund-agent", "ops-agent"} {
		examples[name] = [3]*Workflow{compileExample(t, name), compileExample(t, name), compileExample(t, name)}
	}
	run := 0
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.SampledFrom([]string{"refund-agent", "ops-agent"}).Draw(t, "example")
		ws := examples[name]
		run++
		runID := "run-" + strconv.Itoa(run)
		var states [3][]byte
		for i, w := range ws {
			st, err := w.Init(runID)
			if err != nil {
				t.Fatal(err)
			}
			states[i] = st
		}
		var planned []Effect
		seq := int64(0)
		for step := rapid.IntRange(1, 6).Draw(t, "steps"); step > 0; step-- {
			seq++
			in := Input{Seq: seq, Kind: KindInput}
			switch k := rapid.IntRange(0, 9).Draw(t, "kind"); {
			case k <= 3 && name == "refund-agent":
				in.Body = refundInput("r-"+strconv.Itoa(rapid.IntRange(0, 3).Draw(t, "refund")),
					rapid.Int64Range(-5, 1200).Draw(t, "amount"),
					rapid.SampledFrom([]string{"alice", "bob", "mallory", "payee-1"}).Draw(t, "payee"),
					rapid.SampledFrom([]string{"damaged", "late", "goodwill"}).Draw(t, "reason"))
			case k <= 3:
				if rapid.Bool().Draw(t, "restart") {
					in.Body = opsInput("restart.requested/1", "rst-"+strconv.Itoa(rapid.IntRange(0, 3).Draw(t, "id")),
						rapid.SampledFrom([]string{"api", "billing"}).Draw(t, "service"),
						rapid.SampledFrom([]string{"dest:ops-api", "dest:ops-billing"}).Draw(t, "target"), "reason", "leak")
				} else {
					in.Body = opsInput("diagnostics.requested/1", "chk-"+strconv.Itoa(rapid.IntRange(0, 3).Draw(t, "id")),
						"api", "dest:ops-api", "probe", "health")
				}
			case k <= 6 && len(planned) > 0:
				e := planned[rapid.IntRange(0, len(planned)-1).Draw(t, "effect")]
				in.Kind = KindReceipt
				in.Body = receiptFor(e, rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess,
					protocol.OutcomeConfirmedFailure, protocol.OutcomeUnknown}).Draw(t, "outcome"))
			case k == 7:
				in.Kind = KindReceipt
				in.Body = receiptFor(Effect{Intent: protocol.EffectIntent{IntentID: "intent:never", ActionDigest: "sha256:00",
					IdempotencyKey: "effect:00"}}, protocol.OutcomeConfirmedSuccess)
			case k == 8:
				in.Body = []byte(rapid.SampledFrom([]string{`{"type":"refund.requested/1"}`, `not json`, `{"type":"nope/1","payload":{}}`}).Draw(t, "bad"))
			default:
				// Out of logical order: the error, or the refusal, of each.
				in.Seq = rapid.Int64Range(0, seq).Draw(t, "seq")
				in.Body = []byte(`{"type":"refund.requested/1","payload":{}}`)
			}
			var rs [3]Result
			var errs [3]error
			for i, w := range ws {
				untraced := i == 1 || (i == 2 && seq%2 == 0)
				if untraced {
					rs[i], errs[i] = w.DecideUntraced(states[i], in)
				} else {
					rs[i], errs[i] = w.Decide(states[i], in)
				}
				if untraced && rs[i].Trace != nil {
					t.Fatalf("workflow %d, seq %d: an untraced tick with a trace of %d notes", i, seq, len(rs[i].Trace))
				}
				// A traced tick after an untraced one traces what Decide
				// alone traces.
				if i == 2 && !untraced && errs[0] == nil && errs[2] == nil && !reflect.DeepEqual(rs[2].Trace, rs[0].Trace) {
					t.Fatalf("seq %d: trace after an untraced tick %v\ntraced %v", seq, rs[2].Trace, rs[0].Trace)
				}
			}
			for i := 1; i < 3; i++ {
				if fmt.Sprint(errs[i]) != fmt.Sprint(errs[0]) {
					t.Fatalf("workflow %d, seq %d: error %v, traced %v", i, seq, errs[i], errs[0])
				}
				if errs[0] != nil {
					continue
				}
				a, b := rs[i], rs[0]
				if !bytes.Equal(a.State, b.State) {
					t.Fatalf("workflow %d, seq %d: state\n%s\ntraced\n%s", i, seq, a.State, b.State)
				}
				if a.Completion != b.Completion || a.Refusal != b.Refusal || !reflect.DeepEqual(a.Effects, b.Effects) {
					t.Fatalf("workflow %d, seq %d: %v %q %#v\ntraced %v %q %#v", i, seq, a.Completion, a.Refusal, a.Effects,
						b.Completion, b.Refusal, b.Effects)
				}
			}
			if errs[0] != nil {
				seq-- // the run did not move
				continue
			}
			for i := range states {
				states[i] = rs[i].State
			}
			if rs[0].Refusal == "" {
				planned = append(planned, rs[0].Effects...)
			} else {
				seq--
			}
		}
	})
}
