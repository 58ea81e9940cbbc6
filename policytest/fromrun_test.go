package policytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/workflow"
)

// A recorded run's acts become a case pinned to what the bundle decides,
// under the run's id; a record the case cannot reproduce is refused,
// saying where the case parts from the run.
func TestFromRun(t *testing.T) {
	w := example(t, "refund-agent")
	const runID = "r-export"
	input, _ := cjson.Canonicalize([]byte(`{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":900,"payee":"bob","reason":"late"}}`))
	state, err := w.Init(runID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Decide(state, workflow.Input{Seq: 1, Kind: workflow.KindInput, Body: input, Digest: cjson.Digest(input), Actor: "alice"})
	if err != nil || len(res.Effects) != 1 || res.Effects[0].Approval == nil {
		t.Fatalf("%v %+v", err, res)
	}
	need := *res.Effects[0].Approval
	q := &request{need: need}
	grant, _ := q.grant("finance-lead")
	e, err := w.AuthorizeApproved(res.State, need, grant)
	if err != nil {
		t.Fatal(err)
	}
	intent := e.Intent.IntentID
	acts := []Act{
		{Kind: workflow.KindInput, Actor: "alice", Body: input},
		{Kind: ActApprove, Actor: "finance-lead", Request: need.RequestDigest},
		receiptAct(intent, "confirmed_success"),
	}
	out, err := FromRun(w, Record{RunID: runID, Acts: acts, Committed: []string{intent}, Ended: EndedComplete}, "the large refund", "from a test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name": "the large refund"`, `"run": "r-export"`, `"note": "from a test"`, `"as": "alice"`, `"approve": "finance-lead"`, `"approval": "approved"`, `"completion": "complete"`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %s in\n%s", want, out)
		}
	}
	results, err := Run(w, "run.test.json", out)
	if err != nil || len(results) != 1 || !results[0].Passed() || results[0].Steps != 3 {
		t.Fatalf("%v %+v", err, results)
	}
	// What it may not be made of, and what it must reproduce.
	for _, c := range []struct {
		name string
		rec  Record
		want string
	}{
		{"no acts", Record{RunID: runID}, "took no act"},
		{"another intent committed", Record{RunID: runID, Acts: acts, Committed: []string{"intent:other"}},
			"at act 2: the case authorizes " + intent + ", where the run committed intent:other"},
		{"an intent never authorized", Record{RunID: runID, Acts: acts[:1], Committed: []string{intent}},
			"the run committed " + intent + ", which the case never authorizes"},
		{"another end", Record{RunID: runID, Acts: acts, Committed: []string{intent}, Ended: EndedFail}, "the run ended fail, the case complete"},
		{"still running", Record{RunID: runID, Acts: acts[:2], Committed: []string{intent}, Ended: EndedComplete}, "the run ended complete, the case running"},
		{"a receipt for an intent not authorized", Record{RunID: runID, Acts: []Act{acts[0], receiptAct("intent:x", "confirmed_success")}},
			"at act 2: a receipt for intent:x, which the case has not authorized"},
		{"a receipt of an unknown outcome", Record{RunID: runID, Acts: []Act{acts[0], acts[1], receiptAct(intent, "outcome_unknown")}, Committed: []string{intent}},
			`at act 3: a receipt of "outcome_unknown", which a case does not take`},
		{"an approval of a request not waiting", Record{RunID: runID, Acts: []Act{acts[0], {Kind: ActApprove, Actor: "finance-lead", Request: "sha256:nothing"}}},
			"at act 2: an answer to request sha256:nothing, which the case is not waiting on"},
		{"an act of another kind", Record{RunID: runID, Acts: []Act{{Kind: "cancel"}}}, `at act 1: an act of kind "cancel"`},
		{"a control that does not read", Record{RunID: runID, Acts: []Act{acts[0], {Kind: workflow.KindControl, Body: []byte(`{"trigger":"NAP"}`)}}}, "at act 2: CONTROL_NOT_A_HUMAN_TRIGGER"},
		{"a step that cannot be taken", Record{RunID: runID, Acts: []Act{{Kind: ActDeny, Actor: "finance-lead"}}}, "at act 1: a denial, but no request is waiting for one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := FromRun(w, c.rec, "c", ""); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v; want %q", err, c.want)
			}
		})
	}
}

// Whatever Pin accepts, it pins: every case of its file passes against
// the bundle it was pinned to. Whatever it refuses is a BAD_TEST error
// or the run's own refusal to start.
func FuzzPin(f *testing.F) {
	w := example(f, "refund-agent")
	src, err := os.ReadFile(filepath.Join("..", "examples", "refund-agent", "policy.test.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src, true)
	f.Add([]byte(`{"cases": [{"name": "a", "run": "r-9", "steps": [{"input": {"type": "refund.requested/1", "payload": {"refund_id": "r", "amount": 900, "payee": "b", "reason": "goodwill"}}}, {"control": "PAUSE"}, {"choose": "path:store-credit"}]}]}`), false)
	f.Fuzz(func(t *testing.T, src []byte, yaml bool) {
		name := "c.json"
		if yaml {
			name = "c.yaml"
		}
		out, err := Pin(w, name, src)
		if err != nil {
			return
		}
		res, err := Run(w, "pinned.json", out)
		if err != nil {
			t.Fatalf("the pinned file does not read: %v\n%s", err, out)
		}
		for _, r := range res {
			if !r.Passed() {
				t.Fatalf("%s: step %d: %s\n%s", r.Name, r.Step, r.Failure, out)
			}
		}
	})
}

// FromRun takes any acts a damaged record might hold without panicking:
// a case, or an error.
func FuzzFromRun(f *testing.F) {
	w := example(f, "refund-agent")
	f.Add("input", []byte(`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":40,"payee":"b","reason":"x"}}`), "receipt", []byte(`{"intent_id":"x","outcome":"confirmed_success"}`))
	f.Add("choice", []byte(`{"proposal_id":"p","option":"o"}`), "mrp", []byte(`{"trigger":"PAUSE"}`))
	f.Fuzz(func(t *testing.T, k1 string, b1 []byte, k2 string, b2 []byte) {
		acts := []Act{{Kind: k1, Actor: "a", Body: b1}, {Kind: k2, Actor: "b", Body: b2, Request: string(b2)}}
		out, err := FromRun(w, Record{RunID: "r-f", Acts: acts}, "c", "")
		if err == nil {
			if _, err := Run(w, "run.test.json", out); err != nil {
				t.Fatalf("a case that does not read: %v\n%s", err, out)
			}
		}
	})
}

// A receipt settling a younger effect of the type an older one has names
// its rank among its type (nth); one settling a younger effect of another
// type names its type; the oldest of all names nothing.
func TestFromRunNamesTheEffectType(t *testing.T) {
	w := example(t, "ops-agent")
	const runID = "r-ops"
	state, err := w.Init(runID)
	if err != nil {
		t.Fatal(err)
	}
	var acts []Act
	var intents []string
	for i, in := range []string{
		`{"type":"diagnostics.requested/1","payload":{"check_id":"chk-1","service":"api","target":"dest:ops-api","probe":"health"}}`,
		`{"type":"diagnostics.requested/1","payload":{"check_id":"chk-2","service":"api","target":"dest:ops-api","probe":"health"}}`,
	} {
		res, act := inputAct(t, w, state, int64(i+1), in)
		state = res.State
		acts = append(acts, act)
		intents = append(intents, res.Effects[0].Intent.IntentID)
	}
	receipt := func(id string) Act { return receiptAct(id, "confirmed_success") }
	younger := append(slices.Clone(acts), receipt(intents[1]), receipt(intents[0]))
	out, err := FromRun(w, Record{RunID: runID, Acts: younger, Committed: intents}, "c", "")
	if err != nil || strings.Count(string(out), `"effect": "diag.read"`) != 1 || strings.Count(string(out), `"nth": 2`) != 1 {
		t.Fatalf("the younger diagnostic settled first: %v\n%s", err, out)
	}
	if res, err := Run(w, "c.test.json", out); err != nil || !res[0].Passed() {
		t.Fatalf("the case of it: %v %+v", err, res)
	}
	out, err = FromRun(w, Record{RunID: runID, Acts: append(acts, receipt(intents[0]), receipt(intents[1])), Committed: intents}, "c", "")
	if err != nil || strings.Contains(string(out), `"effect"`) || strings.Contains(string(out), `"nth"`) {
		t.Fatalf("%v\n%s", err, out)
	}
	// A restart approved after the diagnostics, settled before them.
	res, input := inputAct(t, w, state, 3, `{"type":"restart.requested/1","payload":{"restart_id":"rst-1","service":"api","target":"dest:ops-api","reason":"memory leak"}}`)
	if res.Effects[0].Approval == nil {
		t.Fatalf("the restart needs no approval: %+v", res)
	}
	need := *res.Effects[0].Approval
	grant, _ := (&request{need: need}).grant("oncall-lead")
	e, err := w.AuthorizeApproved(res.State, need, grant)
	if err != nil {
		t.Fatal(err)
	}
	acts = append(acts, input, Act{Kind: ActApprove, Actor: "oncall-lead", Request: need.RequestID}, receipt(e.Intent.IntentID))
	out, err = FromRun(w, Record{RunID: runID, Acts: acts, Committed: append(intents, e.Intent.IntentID)}, "c", "")
	if err != nil || strings.Count(string(out), `"effect": "service.restart"`) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
}

// BenchmarkFromRun makes the ops agent's case of a recorded run: two
// diagnostics and a restart approved, each settled (eight acts), checked
// against the intents the run committed; what flrh run case does after
// reading the record.
func BenchmarkFromRun(b *testing.B) {
	w := example(b, "ops-agent")
	const runID = "r-bench"
	state, err := w.Init(runID)
	if err != nil {
		b.Fatal(err)
	}
	var acts []Act
	var intents []string
	for i, in := range []string{
		`{"type":"diagnostics.requested/1","payload":{"check_id":"chk-1","service":"api","target":"dest:ops-api","probe":"health"}}`,
		`{"type":"diagnostics.requested/1","payload":{"check_id":"chk-2","service":"api","target":"dest:ops-api","probe":"disk"}}`,
		`{"type":"restart.requested/1","payload":{"restart_id":"rst-1","service":"api","target":"dest:ops-api","reason":"memory leak"}}`,
	} {
		res, act := inputAct(b, w, state, int64(i+1), in)
		state = res.State
		acts = append(acts, act)
		if need := res.Effects[0].Approval; need != nil {
			grant, _ := (&request{need: *need}).grant("oncall-lead")
			e, err := w.AuthorizeApproved(state, *need, grant)
			if err != nil {
				b.Fatal(err)
			}
			acts = append(acts, Act{Kind: ActApprove, Actor: "oncall-lead", Request: need.RequestID})
			intents = append(intents, e.Intent.IntentID)
			continue
		}
		intents = append(intents, res.Effects[0].Intent.IntentID)
	}
	for _, id := range intents {
		acts = append(acts, receiptAct(id, "confirmed_success"))
	}
	rec := Record{RunID: runID, Acts: acts, Committed: intents, Ended: EndedComplete}
	if _, err := FromRun(w, rec, "bench", ""); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromRun(w, rec, "bench", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// receiptAct is a recorded receipt of outcome for intent id.
func receiptAct(id, outcome string) Act {
	b, _ := cjson.Marshal(map[string]any{"intent_id": id, "outcome": outcome})
	return Act{Kind: workflow.KindReceipt, Body: b}
}

// inputAct decides input (JSON) at seq as alice hands it to the run in
// state, which must plan one effect, and returns the decision and the
// act a record keeps of it.
func inputAct(tb testing.TB, w *workflow.Workflow, state []byte, seq int64, input string) (workflow.Result, Act) {
	tb.Helper()
	body, err := cjson.Canonicalize([]byte(input))
	if err != nil {
		tb.Fatal(err)
	}
	res, err := w.Decide(state, workflow.Input{Seq: seq, Kind: workflow.KindInput, Body: body, Digest: cjson.Digest(body), Actor: "alice"})
	if err != nil || len(res.Effects) != 1 {
		tb.Fatalf("%v %+v", err, res)
	}
	return res, Act{Kind: workflow.KindInput, Actor: "alice", Body: body}
}
