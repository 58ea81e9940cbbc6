package aif

import (
	"errors"
	"math"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// tiny is a one-factor, one-modality model used by the rejection tests.
const tiny = `{
 "kind": "flrh.aif.model", "version": 1,
 "factors": [{"name": "s", "states": ["a", "b"], "actions": ["x", "y"],
   "B": [[[1, 0], [1, 0]], [[0, 1], [0, 1]]], "D": [0.5, 0.5]}],
 "modalities": [{"name": "o", "outcomes": ["u", "v"], "A": [[0.9, 0.2], [0.1, 0.8]], "C": [1, 0]}],
 "horizon": 2
}`

func TestDecodeRejectsBadModels(t *testing.T) {
	cases := []struct {
		name, from, to string
		code           Code
		ptr            string
	}{
		{"column not normalized", `[[0.9, 0.2], [0.1, 0.8]]`, `[[0.9, 0.2], [0.2, 0.8]]`, CodeNotNormalized, "/modalities/0/A/*/0"},
		{"negative probability", `[[0.9, 0.2], [0.1, 0.8]]`, `[[1.1, 0.2], [-0.1, 0.8]]`, CodeNegative, "/modalities/0/A/1/0"},
		{"A shape", `[[0.9, 0.2], [0.1, 0.8]]`, `[[0.9, 0.2, 0], [0.1, 0.8]]`, CodeShape, "/modalities/0/A/0"},
		{"B column", `[[[1, 0], [1, 0]], [[0, 1], [0, 1]]]`, `[[[1, 0], [1, 0]], [[0, 1], [0, 0]]]`, CodeNotNormalized, "/factors/0/B/*/1/1"},
		{"D not normalized", `"D": [0.5, 0.5]`, `"D": [0.5, 0.6]`, CodeNotNormalized, "/factors/0/D"},
		{"D shape", `"D": [0.5, 0.5]`, `"D": [1]`, CodeShape, "/factors/0/D"},
		{"C shape", `"C": [1, 0]`, `"C": [1]`, CodeShape, "/modalities/0/C"},
		{"number too fine", `"C": [1, 0]`, `"C": [1, 0.0000000001]`, CodeNumber, "/modalities/0/C/1"},
		{"number too large", `"C": [1, 0]`, `"C": [1, 1e12]`, CodeRange, "/modalities/0/C/1"},
		{"string number", `"C": [1, 0]`, `"C": [1, "NaN"]`, CodeNumber, "/modalities/0/C/1"},
		{"negative count", `"A": [[0.9, 0.2], [0.1, 0.8]]`, `"pA": [[9, 2], [1, -8]]`, CodeNegative, "/modalities/0/pA/1/1"},
		{"unknown member", `"horizon": 2`, `"horizon": 2, "gama": 3`, CodeSyntax, "/gama"},
		{"duplicate state", `["a", "b"]`, `["a", "a"]`, CodeName, "/factors/0/states/1"},
		{"gamma", `"horizon": 2`, `"horizon": 2, "gamma": 0`, CodeRange, "/gamma"},
		{"discount", `"horizon": 2`, `"horizon": 2, "discount": 1.5`, CodeRange, "/discount"},
		{"policy action", `"horizon": 2`, `"policies": [[["x"], ["z"]]]`, CodePolicy, "/policies/0/1/0"},
		{"E shape", `"horizon": 2`, `"horizon": 2, "E": [1]`, CodeShape, "/E"},
		{"not json", `{`, `[`, CodeSyntax, ""},
		{"duplicate member", `"D": [0.5, 0.5]`, `"D": [0.5, 0.5], "D": [1, 0]`, CodeSyntax, "/factors/0/D"},
		{"duplicate nested", `"C": [1, 0]}`, `"C": [1, 0], "name": "x"}`, CodeSyntax, "/modalities/0/name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(tiny, c.from, c.to, 1)
			if text == tiny {
				t.Fatalf("substitution %q did not apply", c.from)
			}
			_, err := Decode([]byte(text))
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("want *Error, have %v", err)
			}
			if ae.Code != c.code || ae.Pointer != c.ptr {
				t.Fatalf("got %s at %q (%s), want %s at %q", ae.Code, ae.Pointer, ae.Detail, c.code, c.ptr)
			}
		})
	}
	if _, err := Decode([]byte(tiny)); err != nil {
		t.Fatalf("the valid model was refused: %v", err)
	}
}

func TestValidateRejectsNonFiniteGoValues(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		doc, err := Decode([]byte(tiny))
		if err != nil {
			t.Fatal(err)
		}
		m := doc.Model.clone()
		m.Modalities[0].A[3] = v
		err = m.Validate()
		var ae *Error
		if !errors.As(err, &ae) || ae.Code != CodeNotFinite || ae.Pointer != "/modalities/0/A/1/1" {
			t.Fatalf("%v: got %v", v, err)
		}
	}
}

func TestHorizonEnumerationAndPrefixSharing(t *testing.T) {
	doc, err := Decode([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	if len(m.Policies) != 4 {
		t.Fatalf("horizon 2 with 2 actions: %d policies", len(m.Policies))
	}
	// Scoring the policies together must equal scoring each one alone.
	together := m.EvaluatePolicies(m.Prior())
	for p, pol := range m.Policies {
		lone, err := m.ScorePolicies(m.Prior(), [][][]int{pol})
		if err != nil {
			t.Fatal(err)
		}
		alone := lone[0]
		if alone.G != together[p].G || alone.Risk != together[p].Risk {
			t.Fatalf("policy %d: shared-prefix score %v differs from lone score %v", p, together[p], alone)
		}
	}
}

func TestScorePoliciesChecksInput(t *testing.T) {
	doc, err := Decode([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	for _, c := range []struct {
		q   [][]float64
		pol [][][]int
		ptr string
	}{
		{m.Prior(), [][][]int{{{0}}, {{2}}}, "/1/0/0"},
		{m.Prior(), [][][]int{{{0, 1}}}, "/0/0"},
		{m.Prior(), [][][]int{{}}, "/0"},
		{[][]float64{{1}}, [][][]int{{{0}}}, "/0/belief/0"},
	} {
		_, err := m.ScorePolicies(c.q, c.pol)
		var ae *Error
		if !errors.As(err, &ae) || ae.Pointer != c.ptr {
			t.Errorf("%v: got %v, want error at %s", c.pol, err, c.ptr)
		}
	}
	if _, err := m.UncertaintyBonus(m.Prior(), [][]int{{9}}, 1); err == nil {
		t.Error("bonus accepted an unknown action")
	}
}

func TestDegeneratePosteriorIsResetAndFlagged(t *testing.T) {
	text := strings.Replace(tiny, `[[0.9, 0.2], [0.1, 0.8]]`, `[[1, 1], [0, 0]]`, 1)
	doc, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	post, err := m.Infer(m.Prior(), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if post.Degenerate != DegenerateImpossible {
		t.Fatalf("impossible observation not flagged: %+v", post)
	}
	if post.Q[0][0] != 0.5 || post.Q[0][1] != 0.5 {
		t.Fatalf("belief not reset to the prior: %v", post.Q)
	}
	if _, err := m.Infer(m.Prior(), []int{2}); err == nil {
		t.Fatal("out-of-range outcome accepted")
	}
}

// Property: for random valid models, posteriors are distributions, free
// energy is complexity minus accuracy, G = risk + ambiguity = −(utility +
// info gain), risk ≥ 0, ambiguity ≥ 0, and the policy posterior sums to 1.
func TestRandomModelInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		S := rapid.IntRange(1, 5).Draw(t, "S")
		O := rapid.IntRange(1, 5).Draw(t, "O")
		U := rapid.IntRange(1, 3).Draw(t, "U")
		dist := func(n int, label string) []float64 {
			w := make([]float64, n)
			s := 0.0
			for i := range w {
				w[i] = float64(rapid.IntRange(0, 9).Draw(t, label))
				s += w[i]
			}
			if s == 0 {
				w[0], s = 1, 1
			}
			for i := range w {
				w[i] /= s
			}
			return w
		}
		B := make([]float64, S*S*U)
		for prev := 0; prev < S; prev++ {
			for a := 0; a < U; a++ {
				col := dist(S, "b")
				for next := 0; next < S; next++ {
					B[(next*S+prev)*U+a] = col[next]
				}
			}
		}
		A := make([]float64, O*S)
		for s := 0; s < S; s++ {
			col := dist(O, "a")
			for o := 0; o < O; o++ {
				A[o*S+s] = col[o]
			}
		}
		C := make([]float64, O)
		for o := range C {
			C[o] = float64(rapid.IntRange(-4, 4).Draw(t, "c"))
		}
		f := Factor{Name: "f", States: names("s", S), Actions: names("a", U), B: B, D: dist(S, "d")}
		md := Modality{Name: "m", Outcomes: names("o", O), A: A, C: C}
		m := &Model{Factors: []Factor{f}, Modalities: []Modality{md}, Gamma: 4, Discount: 0.9}
		m.Policies = EnumeratePolicies(m.Factors, rapid.IntRange(1, 3).Draw(t, "T"))
		if err := m.Validate(); err != nil {
			t.Fatalf("valid model refused: %v", err)
		}
		obs := []int{rapid.IntRange(0, O-1).Draw(t, "obs")}
		r, err := m.Step(m.Prior(), obs, SelectArgmax, "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Posterior.Degenerate == "" {
			sum := 0.0
			for _, x := range r.Posterior.Q[0] {
				sum += x
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("posterior sums to %v", sum)
			}
			if r.Posterior.Complexity < -1e-12 {
				t.Fatalf("negative complexity %v", r.Posterior.Complexity)
			}
		}
		total := 0.0
		for i, s := range r.Scores {
			if s.Risk < -1e-12 || s.Ambiguity < -1e-12 {
				t.Fatalf("negative term: %+v", s)
			}
			if math.Abs(s.G+s.Utility+s.InfoGain) > 1e-9 {
				t.Fatalf("views disagree with core: %+v", s)
			}
			total += r.QPi[i]
		}
		if math.Abs(total-1) > 1e-12 {
			t.Fatalf("policy posterior sums to %v", total)
		}
	})
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + string(rune('0'+i))
	}
	return out
}

func TestDirichletLearning(t *testing.T) {
	text := strings.Replace(tiny, `"A": [[0.9, 0.2], [0.1, 0.8]]`, `"pA": [[9, 2], [1, 8]]`, 1)
	text = strings.Replace(text, `"horizon": 2`, `"horizon": 2, "learning_rate": 1`, 1)
	doc, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	if m.Modalities[0].A[0] != 0.9 {
		t.Fatalf("A not derived from pA: %v", m.Modalities[0].A)
	}
	q := [][]float64{{1, 0}}
	m2, err := m.LearnA([]int{1}, q)
	if err != nil {
		t.Fatal(err)
	}
	// Column 0 counts become [9, 2]: A(u|a) = 9/11.
	if got := m2.Modalities[0].PA; got[0] != 9 || got[2] != 2 {
		t.Fatalf("pA after learning %v", got)
	}
	if math.Abs(m2.Modalities[0].A[0]-9.0/11) > 1e-15 {
		t.Fatalf("A(u|a) = %v, want 9/11", m2.Modalities[0].A[0])
	}
	if m.Modalities[0].PA[2] != 1 {
		t.Fatal("learning mutated the original model")
	}
}

// goldenRecordDigest pins the canonical digest of the T-maze first and second
// step records. The same test runs under GOARCH=arm64 (qemu-user), so equal
// digests there prove the computation is bitwise identical across the two
// architectures.
const goldenRecordDigest = "sha256:65d26025f5c17498b4204b615200d9c477edc7093791c2b4249fd7d7265f84a1"

func TestGoldenRecordDigest(t *testing.T) {
	doc := loadTMaze(t)
	m := doc.Model
	r1, err := m.Step(m.Prior(), []int{0, 0, 0}, SelectSample, "sha256:golden-1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.Step(r1.NextPrior, []int{3, 0, 2}, SelectSample, "sha256:golden-2")
	if err != nil {
		t.Fatal(err)
	}
	recs := []StepRecord{
		m.Record(1, []int{0, 0, 0}, "sha256:golden-1", SelectSample, r1),
		m.Record(2, []int{3, 0, 2}, "sha256:golden-2", SelectSample, r2),
	}
	d, err := cjson.DigestOf(map[string]any{"kind": "flrh.aif.golden", "records": recs})
	if err != nil {
		t.Fatal(err)
	}
	if d != goldenRecordDigest {
		t.Fatalf("record digest %s, want %s", d, goldenRecordDigest)
	}
}

func TestDirichletLearningOfB(t *testing.T) {
	text := strings.Replace(tiny, `"B": [[[1, 0], [1, 0]], [[0, 1], [0, 1]]]`, `"pB": [[[4, 1], [1, 1]], [[1, 1], [1, 4]]]`, 1)
	text = strings.Replace(text, `"horizon": 2`, `"horizon": 2, "learning_rate": 2`, 1)
	doc, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Model
	// B(next=a | prev=a, x) = 4/5 from the counts.
	if math.Abs(m.Factors[0].B[0]-0.8) > 1e-15 {
		t.Fatalf("B from pB: %v", m.Factors[0].B)
	}
	// Seeing a → b under action x adds lr·1 to pB[b][a][x].
	m2, err := m.LearnB([][]float64{{1, 0}}, [][]float64{{0, 1}}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	idx := (1*2+0)*2 + 0
	if m2.Factors[0].PB[idx] != 3 || m.Factors[0].PB[idx] != 1 {
		t.Fatalf("pB after learning %v (before %v)", m2.Factors[0].PB, m.Factors[0].PB)
	}
	if math.Abs(m2.Factors[0].B[idx]-3.0/7) > 1e-15 {
		t.Fatalf("B(b | a, x) = %v, want 3/7", m2.Factors[0].B[idx])
	}
	if _, err := m.LearnB([][]float64{{1, 0}}, [][]float64{{0, 1}}, []int{5}); err == nil {
		t.Fatal("unknown action accepted")
	}
}

func TestWorkLimit(t *testing.T) {
	const S = 128
	eye := make([]float64, S*S)
	for s := 0; s < S; s++ {
		eye[s*S+s] = 1
	}
	d := make([]float64, S)
	d[0] = 1
	f := func(name string) Factor {
		return Factor{Name: name, States: names128(), B: eye, D: d}
	}
	a := make([]float64, S*S)
	for i := range a {
		a[i] = 1
	}
	m := &Model{Factors: []Factor{f("x"), f("y")}, Modalities: []Modality{{Name: "o", Outcomes: []string{"only"}, A: a, C: []float64{0}}}, Gamma: 1}
	step := []int{0, 0}
	pol := make([][]int, 16)
	for i := range pol {
		pol[i] = step
	}
	for i := 0; i < 300; i++ {
		m.Policies = append(m.Policies, pol)
	}
	err := m.Validate()
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeLimit || ae.Pointer != "/policies" {
		t.Fatalf("300 policies × 16 steps × 16384 states: %v", err)
	}
}

func names128() []string {
	out := make([]string, 128)
	for i := range out {
		out[i] = "s" + itoa(i)
	}
	return out
}
