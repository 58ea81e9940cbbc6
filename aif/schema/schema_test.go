package schema

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"flrh.dev/flrh/aif"
	"flrh.dev/flrh/aif/budget"
	"flrh.dev/flrh/aif/channel"
	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/evidence"
	"flrh.dev/flrh/aif/reduce"
	"flrh.dev/flrh/aif/strategy"
	"flrh.dev/flrh/cjson"
)

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every kind of record the packages produce validates against the schema.
func TestRecordsValidate(t *testing.T) {
	var records [][]byte

	text, err := os.ReadFile("../../examples/aif/ops.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := aif.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	run, err := aif.Run(doc, "sha256:model", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	records = append(records, marshal(t, run), marshal(t, run.Steps[0]))

	m := doc.Model
	post, _ := m.Infer(m.Prior(), []int{0, 0})
	cands := m.Candidates(m.EvaluatePolicies(post.Q), nil)
	req := choice.Request{Candidates: cands, Nothing: cands[0], Margin: 0.1, Temperature: 0.5, EventDigest: "sha256:e"}
	d, err := choice.Select(req)
	if err != nil {
		t.Fatal(err)
	}
	set := choice.BuildSet([]choice.Proposal{{ID: "a", Relevance: 1}, {ID: "b", Relevance: 0.5}}, nil, 1)
	records = append(records, marshal(t, choice.Record(req, d, &set)))

	rep, _, err := reduce.BuildReport([]reduce.Parameter{{Name: "fit", Prior: []float64{1, 1}, Posterior: []float64{1, 30}}},
		[]reduce.Proposal{{ID: "p", Reduced: map[string][]float64{"fit": {0.001, 1}}}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	records = append(records, marshal(t, rep))

	cfg := &channel.Config{Channels: []channel.Spec{{Name: "c", Min: 0, Max: 1, PreferMean: 1, PreferVar: 0.1}},
		Alpha: 0.1, Beta: 0.2, VFloor: 1e-4, VMin: 1e-3, PiMin: 0.1, PiMax: 10}
	b, _ := cfg.Initial([]float64{0.5}, 0.1)
	tick, _ := cfg.Update(b, []float64{0.7})
	records = append(records, marshal(t, cfg.Record(tick)))
	records = append(records, marshal(t, cfg.RecordHypotheses(channel.Hypotheses{Goal: "g", Belief: tick.Posterior, ExpectedNext: tick.Posterior.Mu})))

	lvl, _ := strategy.New("a", "b")
	w := evidence.Witness{Kind: evidence.WitnessKindReceipt, ReceiptDigest: "sha256:" + strings.Repeat("0", 64),
		Producer: "dest", VerifiedBy: "v", Verified: true, Tags: &evidence.Tags{Independent: true, Measured: true, Settled: true}}
	lvl, err = lvl.Update(strategy.Outcome{Option: "a", Success: true, Actor: "agent", Witness: w})
	if err != nil {
		t.Fatal(err)
	}
	records = append(records, marshal(t, lvl.Record()))

	arb, err := budget.Arbitrate([]budget.Field{{Name: "f", SubBudget: 3, Options: []budget.Option{{ID: "o", Cost: 2, Value: 5}, {ID: "x", Cost: 9, Value: 5}}}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	records = append(records, marshal(t, arb))

	btext, err := os.ReadFile("../../examples/aif/build.json")
	if err != nil {
		t.Fatal(err)
	}
	bdoc, err := channel.DecodeDocument(btext)
	if err != nil {
		t.Fatal(err)
	}
	crun, err := channel.Run(bdoc, "sha256:m", []channel.Input{{Observe: map[string]float64{"tests-passing": 120, "compiles": 1, "diff-lines": 40}}})
	if err != nil {
		t.Fatal(err)
	}
	records = append(records, marshal(t, crun), marshal(t, crun.Steps[0]))

	seen := map[string]bool{}
	for _, r := range records {
		if err := Validate(r); err != nil {
			t.Errorf("%.80s…: %v", r, err)
		}
		v, _ := cjson.Decode(r)
		seen[v.(map[string]any)["kind"].(string)] = true
	}
	for k := range Kinds {
		if !seen[k] {
			t.Errorf("kind %s not exercised", k)
		}
	}
}

func TestRejections(t *testing.T) {
	lvl, _ := strategy.New("a")
	good, err := cjson.Marshal(lvl.Record())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"RECORD_NOT_CANONICAL": bytes.Replace(good, []byte(`"updates":0`), []byte(`"updates":0.5`), 1),
		"RECORD_SCHEMA":        bytes.Replace(good, []byte(`"mode":"exploration"`), []byte(`"mode":"dreaming"`), 1),
		"RECORD_UNKNOWN_KIND":  bytes.Replace(good, []byte(`"flrh.aif.strategy"`), []byte(`"flrh.aif.nope"`), 1),
	}
	for code, text := range cases {
		if bytes.Equal(text, good) {
			t.Fatalf("%s: substitution did not apply to %s", code, good)
		}
		err := Validate(text)
		e, ok := err.(*Error)
		if !ok || e.Code != code {
			t.Errorf("want %s, got %v", code, err)
		}
	}
	extra := bytes.Replace(good, []byte(`"updates":0`), []byte(`"extra":1,"updates":0`), 1)
	if err := Validate(extra); err == nil {
		t.Error("unknown member accepted")
	}
}
