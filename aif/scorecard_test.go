package aif

import (
	"math"
	"strings"
	"testing"

	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/cjson"
)

// The T-maze scorecard through the choice layer: the cue wins on the core,
// the pick is moved by the core, and the record keeps the core apart.
func TestTMazeScorecard(t *testing.T) {
	m := loadTMaze(t).Model
	post, err := m.Infer(m.Prior(), []int{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	cands := m.Candidates(m.EvaluatePolicies(post.Q), nil)
	req := choice.Request{Candidates: cands, Nothing: cands[0], Margin: 0.5}
	d, err := choice.Select(req)
	if err != nil {
		t.Fatal(err)
	}
	if d.Pick != "to-cue+stay" || d.MovedBy[0] != "core" {
		t.Fatalf("%+v", d)
	}
	sc := choice.Record(req, d, nil)
	b, err := cjson.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"efe":4842705233`) {
		t.Fatalf("cue EFE not in record: %s", b)
	}
}

func TestUncertaintyBonusIsAugmentationOnly(t *testing.T) {
	text := strings.Replace(tiny, `"A": [[0.9, 0.2], [0.1, 0.8]]`, `"pA": [[900, 2], [100, 8]]`, 1)
	doc, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	q := [][]float64{{1, 0}}
	// Moving to the rarely observed state b (action y) earns a larger bonus.
	toB, err := m.UncertaintyBonus(q, [][]int{{1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	toA, _ := m.UncertaintyBonus(q, [][]int{{0}}, 1)
	if toB.Name != choice.ModelUncertaintyBonus || !(toB.Value < toA.Value) || toA.Value >= 0 {
		t.Fatalf("bonus to b %v, to a %v", toB, toA)
	}
	scores, err := m.ScorePolicies(q, [][][]int{{{0}}, {{1}}})
	if err != nil {
		t.Fatal(err)
	}
	cands := m.Candidates(scores, map[int][]choice.Term{0: {toA}, 1: {toB}})
	for i, c := range cands {
		if c.Core.EFE() != scores[i].G {
			t.Fatal("bonus leaked into the core")
		}
	}
	plain, _ := Decode([]byte(tiny))
	if b, _ := plain.Model.UncertaintyBonus(q, [][]int{{1}}, 1); b.Value != 0 {
		t.Fatalf("bonus without pA: %v", b)
	}
}

func TestParameterInfoGain(t *testing.T) {
	// State b has been observed far less often than a: its likelihood column
	// has small counts, so visiting it is expected to teach more.
	text := strings.Replace(tiny, `"A": [[0.9, 0.2], [0.1, 0.8]]`, `"pA": [[90, 2], [10, 8]]`, 1)
	doc, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	q := [][]float64{{1, 0}}
	toA, err := m.ParameterInfoGain(q, [][]int{{0}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	toB, _ := m.ParameterInfoGain(q, [][]int{{1}}, 1)
	if toA.Name != choice.ParameterInfoGain || !(toB.Value < toA.Value) || !(toA.Value < 0) {
		t.Fatalf("gain to a %v, to b %v", toA, toB)
	}
	// Closed form at state b: W = ½(1/a − 1/a0) with a = [2, 8], a0 = 10;
	// Q(o) = [0.2, 0.8]; gain = Σ Q(o)·W(o) with the sign flipped.
	w0, w1 := 0.5*(1.0/2-1.0/10), 0.5*(1.0/8-1.0/10)
	want := 0.2*w0 + 0.8*w1
	if math.Abs(-toB.Value-want) > 1e-15 {
		t.Fatalf("gain at b %v, want %v", -toB.Value, want)
	}
	plain, _ := Decode([]byte(tiny))
	if g, _ := plain.Model.ParameterInfoGain(q, [][]int{{1}}, 1); g.Value != 0 {
		t.Fatalf("gain without pA: %v", g)
	}
}
