package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/protocol"
)

func refundInput(id string, amount int64, payee, reason string) []byte {
	b, _ := cjson.Marshal(map[string]any{"type": "refund.requested/1",
		"payload": map[string]any{"refund_id": id, "amount": amount, "payee": payee, "reason": reason}})
	return b
}

func outcomes(r Result) []map[string]any {
	var out []map[string]any
	for _, n := range r.Trace {
		if n.Kind == "h.outcome" {
			var m map[string]any
			json.Unmarshal(n.Body, &m)
			out = append(out, m)
		}
	}
	return out
}

// receiptFor builds the receipt the runner would feed back for an effect.
func receiptFor(e Effect, outcome string) []byte {
	rc := protocol.ActionReceipt{Kind: protocol.KindActionReceipt, IntentID: e.Intent.IntentID, ActionDigest: e.Intent.ActionDigest,
		Outcome: outcome, IdempotencyKey: e.Intent.IdempotencyKey, OutputDigests: protocol.DigestSet{}}
	b, _ := cjson.Marshal(rc)
	return b
}

type decideCase struct {
	State []byte
	In    Input
}

func TestDecideIsDeterministic(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, err := w.Init("run-det")
	if err != nil {
		t.Fatal(err)
	}
	step := func(c decideCase) string {
		r, err := w.Decide(c.State, c.In)
		if err != nil {
			return "error: " + err.Error()
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
		b, err := cjson.Marshal(map[string]any{"state": string(r.State), "effects": effects, "completion": string(r.Completion),
			"refusal": r.Refusal, "trace": trace})
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	for i, in := range [][]byte{
		refundInput("r-1", 40, "alice", "damaged"),
		refundInput("r-2", 900, "bob", "late"),
		refundInput("r-3", 40, "carol", "goodwill"),
		refundInput("r-4", 40, "mallory", "damaged"),
		[]byte(`{"type":"nope/1","payload":{}}`),
	} {
		out := determinism.Check(t, decideCase{State: st, In: Input{Seq: 1, Kind: KindInput, Body: in}}, step)
		if strings.HasPrefix(out, "error") {
			t.Fatalf("case %d: %s", i, out)
		}
	}
}

// A run: a small refund is authorized, its receipt completes the run; the
// state after each step is canonical and the whole run replays to the
// same bytes.
func TestRefundRunAndReplay(t *testing.T) {
	w := compileExample(t, "refund-agent")
	run := func() ([]byte, []Result) {
		st, _ := w.Init("run-1")
		var rs []Result
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")})
		if err != nil || r.Refusal != "" || len(r.Effects) != 1 || r.Completion != Continue {
			t.Fatalf("%v %q %d %s", err, r.Refusal, len(r.Effects), r.Completion)
		}
		rs = append(rs, r)
		r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
		if err != nil || r2.Refusal != "" || len(r2.Effects) != 0 || r2.Completion != Complete {
			t.Fatalf("receipt: %v %q %d %s", err, r2.Refusal, len(r2.Effects), r2.Completion)
		}
		rs = append(rs, r2)
		return r2.State, rs
	}
	a, ra := run()
	b, rb := run()
	if !bytes.Equal(a, b) {
		t.Fatal("two replays of the same inputs end in different states")
	}
	if c, _ := cjson.Canonicalize(a); !bytes.Equal(c, a) {
		t.Fatal("the state is not canonical")
	}
	if ra[0].Effects[0].Intent.IntentID != rb[0].Effects[0].Intent.IntentID {
		t.Fatal("intent ids differ across replays")
	}
	// A failed receipt fails the run.
	st, _ := w.Init("run-2")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")})
	r2, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedFailure)})
	if err != nil || r2.Completion != Fail {
		t.Fatalf("failure receipt: %v %s", err, r2.Completion)
	}
	// A receipt for an intent the run never planned is refused.
	r3, err := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(Effect{Intent: protocol.EffectIntent{IntentID: "intent:other"}}, "confirmed_success")})
	if err != nil || r3.Refusal == "" || !bytes.Equal(r3.State, r.State) {
		t.Fatalf("foreign receipt: %v %q", err, r3.Refusal)
	}
	// Logical time must advance.
	if _, err := w.Decide(r.State, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-5", 4, "alice", "x")}); err == nil {
		t.Fatal("a repeated logical time was accepted")
	}
}

func TestRefusalsChangeNothing(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-r")
	for _, body := range []string{
		`[]`,
		`{"type":"refund.requested/1"}`,
		`{"type":"refund.requested/1","payload":{},"extra":1}`,
		`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":0,"payee":"a","reason":""}}`,
		`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":5,"payee":"a"}}`,
		`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":5,"payee":"a","reason":"","aggregate_id":"x"}}`,
		`{"type":"flrh.receipt/1","payload":{"proposal_id":"p","outcome":"confirmed_success"}}`,
		`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":5,"payee":"a","reason":""},"occurred_at":"yesterday"}`,
	} {
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: []byte(body)})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if r.Refusal == "" || !bytes.Equal(r.State, st) || len(r.Effects) != 0 {
			t.Errorf("%s: refusal %q, effects %d", body, r.Refusal, len(r.Effects))
		}
	}
	r, _ := w.Decide(st, Input{Seq: 1, Kind: "choice", Body: []byte(`{}`)})
	if r.Refusal == "" {
		t.Error("an unknown input kind was accepted")
	}
}

// Decide never emits an effect the gates did not authorize. The oracle is
// the refund policy stated independently of the pipeline: a payee on the
// block list, a goodwill reason (contested) or an amount over the
// capability's limit never yields an effect; an effect over 100 always
// waits for an approval and one at or under 100 never does; every effect
// is exactly the requested refund and has an authorizing H outcome. Like
// the runner, each effect's receipt comes back before the next input. On a
// fresh run (MRP machine not yet deliberating) a permitted refund always
// yields its effect.
func TestDecideEmitsOnlyAuthorizedEffects(t *testing.T) {
	w := compileExample(t, "refund-agent")
	rapid.Check(t, func(rt *rapid.T) {
		st, _ := w.Init("run-prop")
		n := rapid.IntRange(1, 4).Draw(rt, "inputs")
		seq := int64(0)
		for i := 0; i < n; i++ {
			seq++
			id := fmt.Sprintf("r-%d", i)
			amount := rapid.Int64Range(1, 20000).Draw(rt, "amount")
			payee := rapid.SampledFrom([]string{"alice", "bob", "mallory"}).Draw(rt, "payee")
			reason := rapid.SampledFrom([]string{"damaged", "goodwill", "late"}).Draw(rt, "reason")
			r, err := w.Decide(st, Input{Seq: seq, Kind: KindInput, Body: refundInput(id, amount, payee, reason)})
			if err != nil {
				rt.Fatal(err)
			}
			if r.Refusal != "" {
				rt.Fatalf("refused: %s", r.Refusal)
			}
			st = r.State
			forbidden := payee == "mallory" || reason == "goodwill" || amount > 10000
			if forbidden && len(r.Effects) > 0 {
				rt.Fatalf("%d to %s for %s produced an effect", amount, payee, reason)
			}
			if i == 0 && !forbidden && len(r.Effects) != 1 {
				rt.Fatalf("%d to %s for %s produced %d effects: %v", amount, payee, reason, len(r.Effects), outcomes(r))
			}
			for _, e := range r.Effects {
				if (e.Approval != nil) != (amount > 100) {
					rt.Fatalf("amount %d: approval %v", amount, e.Approval != nil)
				}
				var p map[string]any
				json.Unmarshal(e.Payload, &p)
				if p["refund_id"] != id || p["payee"] != payee || p["amount"] != float64(amount) {
					rt.Fatalf("payload %s is not the requested refund", e.Payload)
				}
				authorized := slices.ContainsFunc(outcomes(r), func(o map[string]any) bool {
					return o["intent_id"] == e.Intent.IntentID && (o["outcome"] == "INTENT" || o["outcome"] == "APPROVAL_REQUEST")
				})
				if !authorized {
					rt.Fatalf("effect %s has no authorizing H outcome", e.Intent.IntentID)
				}
				seq++
				rr, err := w.Decide(st, Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(e, protocol.OutcomeConfirmedSuccess)})
				if err != nil || rr.Refusal != "" || len(rr.Effects) != 0 {
					rt.Fatalf("receipt: %v %q", err, rr.Refusal)
				}
				st = rr.State
			}
		}
	})
}

// After an approved refund is settled the MRP machine has decided, so the
// next refund in the same run proceeds; after a contested turn the machine
// waits in OPTIONS for a person, and later refunds are held.
func TestMachineAcrossTurns(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-turns")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 500, "bob", "late")})
	if len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("large refund: %v", outcomes(r))
	}
	r, _ = w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
	r, _ = w.Decide(r.State, Input{Seq: 3, Kind: KindInput, Body: refundInput("r-2", 50, "alice", "late")})
	if len(r.Effects) != 1 || r.Effects[0].Approval != nil {
		t.Fatalf("small refund after an approved one: %v", outcomes(r))
	}
	r, _ = w.Decide(r.State, Input{Seq: 4, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
	r, _ = w.Decide(r.State, Input{Seq: 5, Kind: KindInput, Body: refundInput("r-3", 50, "alice", "goodwill")})
	if o := outcomes(r); len(r.Effects) != 0 || len(o) != 1 || o[0]["outcome"] != "OPTIONS" {
		t.Fatalf("goodwill: %v", o)
	}
	r, _ = w.Decide(r.State, Input{Seq: 6, Kind: KindInput, Body: refundInput("r-4", 50, "alice", "late")})
	if o := outcomes(r); len(r.Effects) != 0 || len(o) != 1 || o[0]["outcome"] != "HELD" || o[0]["mrp_state"] != "OPTIONS" {
		t.Fatalf("refund while options are open: %v", o)
	}
}

// A bundle whose rules run out of budget makes Decide return
// ErrRuleBudget (a control event for the runner), not a refusal.
func TestRuleBudget(t *testing.T) {
	files := editBundle(t, func(m map[string]any) { m["limits"] = map[string]any{"max_firings": int64(1)} }, nil)
	w, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := w.Init("run-budget")
	_, err = w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 40, "alice", "damaged")})
	if !errors.Is(err, ErrRuleBudget) {
		t.Fatalf("got %v, want ErrRuleBudget", err)
	}
	for _, bad := range []map[string]any{{"max_firings": int64(0)}, {"max_depth": "x"}, {"max_time": int64(3)}} {
		if _, err := Compile(editBundle(t, func(m map[string]any) { m["limits"] = bad }, nil)); err == nil {
			t.Errorf("limits %v accepted", bad)
		}
	}
}

// Every accepted turn records where the MRP machine stands: its state and
// the Journey Strip so far.
func TestJourneyTracedEveryTurn(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-journey")
	r, _ := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-1", 500, "bob", "late")})
	r2, _ := w.Decide(r.State, Input{Seq: 2, Kind: KindReceipt, Body: receiptFor(r.Effects[0], protocol.OutcomeConfirmedSuccess)})
	var got []string
	for _, res := range []Result{r, r2} {
		n := 0
		for _, note := range res.Trace {
			if note.Kind != "mrp.journey" {
				continue
			}
			n++
			var m map[string]any
			json.Unmarshal(note.Body, &m)
			got = append(got, fmt.Sprint(m["state"], " ", m["strip"]))
		}
		if n != 1 {
			t.Fatalf("%d journey notes in a turn", n)
		}
	}
	// Waiting for the approval the machine holds; once the approved
	// effect's receipt is in, it has decided.
	if got[0] != "HOLD [HOLD]" || got[1] != "DECIDE [HOLD DECIDE]" {
		t.Fatalf("journey %q", got)
	}
}

// The state binds every FHR the trace records: its fhr_chain is the hash
// chain over the traced FHR digests, turn by turn.
func TestFHRChainBindsTheTrace(t *testing.T) {
	w := compileExample(t, "refund-agent")
	st, _ := w.Init("run-fhr")
	chain := ""
	seq := int64(0)
	for _, in := range [][]byte{refundInput("r-1", 40, "alice", "late"), refundInput("r-2", 20, "mallory", "late")} {
		seq++
		r, err := w.Decide(st, Input{Seq: seq, Kind: KindInput, Body: in})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range r.Trace {
			if n.Kind != "h.fhr" {
				continue
			}
			var m struct {
				FHR struct {
					Digest string `json:"fhr_digest"`
				} `json:"fhr"`
			}
			json.Unmarshal(n.Body, &m)
			chain, _ = cjson.DigestOf(map[string]any{"kind": "flrh.workflow.fhr-chain", "prev": chain, "fhr": m.FHR.Digest})
		}
		st = r.State
		for _, e := range r.Effects {
			seq++
			rr, _ := w.Decide(st, Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(e, protocol.OutcomeConfirmedSuccess)})
			st = rr.State
		}
	}
	var s struct {
		Chain string `json:"fhr_chain"`
	}
	json.Unmarshal(st, &s)
	if s.Chain == "" || s.Chain != chain {
		t.Fatalf("state chain %q, recomputed from the trace %q", s.Chain, chain)
	}
}
