package workflow

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// resultBytes renders everything a tick returns, byte for byte.
func resultBytes(t interface{ Fatal(...any) }, r Result, err error) []byte {
	if err != nil {
		return []byte("error: " + err.Error())
	}
	var effects, trace []any
	for _, e := range r.Effects {
		var need any
		if e.Approval != nil {
			need = *e.Approval
		}
		effects = append(effects, map[string]any{"intent": e.Intent, "payload": string(e.Payload), "content": e.ContentDigest, "approval": need})
	}
	for _, n := range r.Trace {
		trace = append(trace, []any{n.Kind, string(n.Body)})
	}
	b, merr := cjson.Marshal(map[string]any{"state": string(r.State), "effects": effects, "completion": string(r.Completion),
		"refusal": r.Refusal, "trace": trace})
	if merr != nil {
		t.Fatal(merr)
	}
	return b
}

// cachedAndPlain is the refund agent compiled, and a copy of it without
// the materialization cache, evaluating every tick from scratch.
func cachedAndPlain(t *testing.T) (cached, plain *Workflow) {
	cached = compileExample(t, "refund-agent")
	p := *cached
	p.cache = nil
	p.empty = nil
	return cached, &p
}

// The materialization cache only saves work: a workflow with it and one
// that evaluates every tick from scratch decide every input sequence
// identically, byte for byte, trace included.
func TestCacheIsTransparent(t *testing.T) {
	cached, plain := cachedAndPlain(t)
	rapid.Check(t, func(rt *rapid.T) {
		runID := fmt.Sprintf("run-cache-%d", rapid.IntRange(0, 3).Draw(rt, "run"))
		a, _ := cached.Init(runID)
		b, _ := plain.Init(runID)
		seq := int64(0)
		var open []Effect
		for i := 0; i < rapid.IntRange(1, 6).Draw(rt, "steps"); i++ {
			seq++
			var in Input
			if len(open) > 0 && rapid.Bool().Draw(rt, "receipt") {
				outcome := rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure}).Draw(rt, "outcome")
				in = Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(open[0], outcome)}
				open = open[1:]
			} else {
				in = Input{Seq: seq, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", i), rapid.Int64Range(1, 300).Draw(rt, "amount"),
					rapid.SampledFrom([]string{"alice", "mallory"}).Draw(rt, "payee"), rapid.SampledFrom([]string{"late", "goodwill"}).Draw(rt, "reason"))}
			}
			ra, erra := cached.Decide(a, in)
			rb, errb := plain.Decide(b, in)
			if x, y := resultBytes(rt, ra, erra), resultBytes(rt, rb, errb); !bytes.Equal(x, y) {
				rt.Fatalf("step %d differs with the cache\n%s\n%s", i, x, y)
			}
			if erra != nil {
				return
			}
			if ra.Refusal == "" {
				a, b = ra.State, rb.State
				open = append(open, ra.Effects...)
			}
		}
	})
}

// A state whose supports a tick made is appended to in place by the next
// tick (state.ownSupports): deciding from any state a run reached —
// the latest, which the cache hands over with its list, or an earlier
// one, decoded afresh, whose list a later tick may have appended to —
// and refusals among them (a refund of nothing, a receipt for an intent
// already answered) decide as a workflow without the cache does, byte
// for byte, over runs long enough to grow the list several times.
func TestSupportsAppendedInPlaceAreTransparent(t *testing.T) {
	cached, plain := cachedAndPlain(t)
	rapid.Check(t, func(rt *rapid.T) {
		type reached struct {
			a, b []byte
			seq  int64
			open []Effect
		}
		runID := fmt.Sprintf("run-inplace-%d", rapid.IntRange(0, 3).Draw(rt, "run"))
		a, _ := cached.Init(runID)
		b, _ := plain.Init(runID)
		states := []reached{{a: a, b: b}}
		for i := 0; i < rapid.IntRange(1, 30).Draw(rt, "steps"); i++ {
			from := len(states) - 1
			if rapid.IntRange(0, 3).Draw(rt, "branch") == 0 {
				from = rapid.IntRange(0, len(states)-1).Draw(rt, "from")
			}
			s := states[from]
			var in Input
			switch {
			case len(s.open) > 0 && rapid.Bool().Draw(rt, "receipt"):
				k := rapid.IntRange(0, len(s.open)-1).Draw(rt, "which")
				in = Input{Seq: s.seq + 1, Kind: KindReceipt, Body: receiptFor(s.open[k], protocol.OutcomeConfirmedSuccess)}
			default:
				in = Input{Seq: s.seq + 1, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", i), rapid.Int64Range(0, 300).Draw(rt, "amount"),
					rapid.SampledFrom([]string{"alice", "bob", "mallory"}).Draw(rt, "payee"), "late")}
			}
			ra, erra := cached.Decide(s.a, in)
			rb, errb := plain.Decide(s.b, in)
			if x, y := resultBytes(rt, ra, erra), resultBytes(rt, rb, errb); !bytes.Equal(x, y) {
				rt.Fatalf("step %d (from state %d) differs with the cache\n%s\n%s", i, from, x, y)
			}
			if erra != nil || ra.Refusal != "" {
				continue
			}
			open := append([]Effect{}, s.open...)
			if in.Kind == KindReceipt {
				open = nil
				for _, e := range s.open {
					if !bytes.Equal(receiptFor(e, protocol.OutcomeConfirmedSuccess), in.Body) {
						open = append(open, e)
					}
				}
			}
			states = append(states, reached{a: ra.State, b: rb.State, seq: in.Seq, open: append(open, ra.Effects...)})
		}
	})
}
