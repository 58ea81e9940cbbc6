package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// checkEncoding holds the state's own encoder to cjson.Marshal: the same
// bytes, or an error where Marshal has one.
func checkEncoding(t interface{ Fatalf(string, ...any) }, st *state, what string) {
	got, err1 := st.encode()
	want, err2 := cjson.Marshal(st)
	if (err1 != nil) != (err2 != nil) || (err1 != nil && err1.Error() != err2.Error()) || !bytes.Equal(got, want) {
		t.Fatalf("%s: the state encodes as\n%s (%v)\ncjson.Marshal writes\n%s (%v)", what, got, err1, want, err2)
	}
}

// The state's encoder writes exactly what cjson.Marshal writes: for every
// state a run of each example bundle passes through (as Decide keeps it and
// as its document decodes), and for states with members the fast path
// leaves to Marshal.
func TestStateEncodingIsMarshal(t *testing.T) {
	bundles := map[string]*Workflow{}
	for _, name := range []string{"refund-agent", "support-agent", "ops-agent"} {
		bundles[name] = compileExample(t, name)
	}
	rapid.Check(t, func(rt *rapid.T) {
		name := rapid.SampledFrom([]string{"refund-agent", "support-agent", "ops-agent"}).Draw(rt, "bundle")
		w := bundles[name]
		doc, err := w.Init(fmt.Sprintf("run-codec-%d", rapid.IntRange(0, 2).Draw(rt, "run")))
		if err != nil {
			rt.Fatalf("init: %v", err)
		}
		var open []Effect
		for seq := int64(1); seq <= int64(rapid.IntRange(1, 8).Draw(rt, "steps")); seq++ {
			var in Input
			v, verr := w.Inspect(doc)
			switch {
			case len(open) > 0 && rapid.Bool().Draw(rt, "receipt"):
				outcome := rapid.SampledFrom([]string{protocol.OutcomeConfirmedSuccess, protocol.OutcomeConfirmedFailure}).Draw(rt, "outcome")
				in = Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(open[0], outcome)}
				open = open[1:]
			case verr == nil && len(v.Offers) > 0 && rapid.Bool().Draw(rt, "choose"):
				in = choiceInput(seq, v.Offers[0].ProposalID, rapid.SampledFrom(v.Offers[0].Options).Draw(rt, "option"), "dana", "operator", "mrp.choose_option")
			case verr == nil && len(v.Held) > 0 && rapid.Bool().Draw(rt, "resume"):
				// Held proposals decided again: requests that keep the
				// person's resumption.
				in = controlInput(seq, trig(mrp.Resume), "dana", "operator", "mrp.resume")
			case name == "ops-agent":
				typ := rapid.SampledFrom([]string{"diagnostics.requested/1", "restart.requested/1"}).Draw(rt, "type")
				in = Input{Seq: seq, Kind: KindInput, Body: opsInput(typ, fmt.Sprintf("id-%d", seq), "api", "dest:ops-api",
					map[string]string{"diagnostics.requested/1": "probe", "restart.requested/1": "reason"}[typ],
					rapid.SampledFrom([]string{"health", "leak", "unknown"}).Draw(rt, "extra"))}
			default:
				in = Input{Seq: seq, Kind: KindInput, Body: refundInput(fmt.Sprintf("r-%d", seq), rapid.Int64Range(1, 900).Draw(rt, "amount"),
					rapid.SampledFrom([]string{"alice", "bob", "carol"}).Draw(rt, "payee"),
					rapid.SampledFrom([]string{"late", "damaged", "goodwill"}).Draw(rt, "reason"))}
			}
			in.Digest = cjson.Digest(in.Body)
			r, err := w.Decide(doc, in)
			if err != nil {
				rt.Fatalf("step %d: %v", seq, err)
			}
			if r.Refusal != "" {
				continue
			}
			doc = r.State
			open = append(open, r.Effects...)
			if e, ok := w.cache.m[string(doc)]; ok && e.st != nil {
				checkEncoding(rt, e.st, "kept state")
			}
			st, err := decodeState(doc)
			if err != nil {
				rt.Fatalf("decode: %v", err)
			}
			checkEncoding(rt, st, "decoded state")
			if b, _ := st.encode(); !bytes.Equal(b, doc) {
				rt.Fatalf("the decoded state encodes as\n%s\nnot as its document\n%s", b, doc)
			}
			// Members the fast path leaves to cjson.Marshal, or writes
			// differently for nil and empty.
			switch rapid.IntRange(0, 9).Draw(rt, "odd") {
			case 0:
				st.FHRChain = "e\u0301" // not NFC
			case 1:
				st.Supports = append(st.Supports, support{ID: "fact:x", Predicate: "p", Args: []any{json.Number("1.5")}})
			case 2:
				st.Supports = append(st.Supports, support{ID: "fact:x", Predicate: "p", Args: []any{int64(-3), json.Number("7"), "s", nil}})
			case 3:
				st.Open, st.Supports, st.Pending = nil, nil, nil
			case 4:
				st.Snapshot, st.canonSnapshot = append([]byte(" "), st.Snapshot...), false
			case 5:
				st.Snapshot, st.canonSnapshot = json.RawMessage(`{"b":1, "a":[2,1]}`), false
			case 6:
				st.Snapshot, st.canonSnapshot = json.RawMessage(`{"a":1.5}`), false
			case 7:
				st.Supports = append(st.Supports, support{ID: "fact:x", Predicate: "p", Args: []any{float64(2)}})
			case 8:
				st.Open = append(st.Open, openIntent{IntentID: "intent:\u00e9\"\\\n", ProposalID: "p"})
			}
			checkEncoding(rt, st, "changed state")
		}
	})
}
