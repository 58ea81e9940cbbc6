package reduce

import (
	"errors"
	"math"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

// The literature's worked example: posterior q = [1, 30] under a flat prior
// p = [1, 1]; the reduced prior r = [0.001, 1] all but removes the first
// outcome. ΔF ≈ −3.397 (exact value computed in 30-digit arithmetic:
// −3.39723653298384775974825882311), past the 3-nat threshold: accepted.
func TestWorkedExample(t *testing.T) {
	d, s, err := DeltaF([]float64{1, 30}, []float64{1, 1}, []float64{0.001, 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d-(-3.39723653298384775974825882311)) > 1e-12 {
		t.Fatalf("ΔF = %.15g", d)
	}
	if s[0] != 0.001 || s[1] != 30 {
		t.Fatalf("reduced posterior %v, want [0.001 30]", s)
	}
	outs, err := Evaluate([]Parameter{{"fit", []float64{1, 1}, []float64{1, 30}}},
		[]Proposal{
			{"prune-first", map[string][]float64{"fit": {0.001, 1}}},
			{"keep", map[string][]float64{}},
		}, DefaultThreshold)
	if err != nil {
		t.Fatal(err)
	}
	if !outs[0].Accepted || outs[1].Accepted || outs[1].DeltaF != 0 {
		t.Fatalf("decisions %+v", outs)
	}
	// Balanced counts [20, 20] refute the same reduction: ΔF ≈ +6.189.
	d2, _, _ := DeltaF([]float64{20, 20}, []float64{1, 1}, []float64{0.001, 1})
	if math.Abs(d2-6.18936539192023430518244437406) > 1e-11 {
		t.Fatalf("ΔF for balanced counts = %.15g", d2)
	}
	// The threshold is strict and stated: at 3.4 nats the example is refused.
	outs, _ = Evaluate([]Parameter{{"fit", []float64{1, 1}, []float64{1, 30}}},
		[]Proposal{{"prune-first", map[string][]float64{"fit": {0.001, 1}}}}, 3.4)
	if outs[0].Accepted {
		t.Fatal("accepted below the threshold")
	}
}

// The identity reduction (r = p) never changes the evidence.
func TestIdentityReductionIsZero(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 6).Draw(t, "n")
		p := make([]float64, n)
		q := make([]float64, n)
		for i := range p {
			p[i] = float64(rapid.IntRange(1, 50).Draw(t, "p")) / 10
			q[i] = p[i] + float64(rapid.IntRange(0, 500).Draw(t, "k"))
		}
		d, _, err := DeltaF(q, p, p)
		if err != nil || math.Abs(d) > 1e-9 {
			t.Fatalf("ΔF(r=p) = %v, %v", d, err)
		}
	})
}

func TestRejections(t *testing.T) {
	parent := []Parameter{{"fit", []float64{1, 1}, []float64{1, 30}}}
	cases := []struct {
		name   string
		parent []Parameter
		prop   Proposal
		code   string
		ptr    string
	}{
		{"negative reduced prior", parent, Proposal{"x", map[string][]float64{"fit": {-1, 1}}}, CodeCount, "/proposals/0/reduced_prior/fit/0"},
		{"shape", parent, Proposal{"x", map[string][]float64{"fit": {1, 1, 1}}}, CodeShape, "/proposals/0/reduced_prior/fit"},
		{"unknown", parent, Proposal{"x", map[string][]float64{"nope": {1, 1}}}, CodeUnknown, "/proposals/0/reduced_prior/nope"},
		{"invalid reduction", []Parameter{{"fit", []float64{5, 1}, []float64{1, 30}}}, Proposal{"x", map[string][]float64{"fit": {0.1, 1}}}, CodeReduction, "/proposals/0/reduced_prior/fit/0"},
		{"NaN parent", []Parameter{{"fit", []float64{math.NaN(), 1}, []float64{1, 30}}}, Proposal{"x", nil}, CodeCount, "/parameters/0/prior/0"},
		{"zero posterior", []Parameter{{"fit", []float64{1, 1}, []float64{0, 30}}}, Proposal{"x", nil}, CodeCount, "/parameters/0/posterior/0"},
	}
	for _, c := range cases {
		_, err := Evaluate(c.parent, []Proposal{c.prop}, 3)
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code || e.Pointer != c.ptr {
			t.Errorf("%s: got %v, want %s at %s", c.name, err, c.code, c.ptr)
		}
	}
}

func TestReportReplaysExactly(t *testing.T) {
	text := []byte(`{"kind": "flrh.aif.counts", "version": 1, "threshold": 3,
	  "parameters": [{"name": "fit", "prior": [1, 1], "posterior": [1, 30]},
	                 {"name": "zone", "prior": [1, 1], "posterior": [12, 14]}],
	  "proposals": [{"id": "prune-fit", "reduced_prior": {"fit": [0.001, 1]}},
	                {"id": "prune-both", "reduced_prior": {"fit": [0.001, 1], "zone": [0.001, 1]}}]}`)
	c, err := DecodeCounts(text)
	if err != nil {
		t.Fatal(err)
	}
	rep := determinism.Check(t, c, func(c Counts) Report {
		r, _, err := BuildReport(c.Parameters, c.Proposals, c.Threshold)
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
	if rep.Proposals[0].Decision != "accepted" || rep.Proposals[1].Decision != "rejected" {
		t.Fatalf("decisions %+v", rep.Proposals)
	}
	if rep.Proposals[0].DeltaF != -3_397_236_533 {
		t.Fatalf("ΔF fixed point %d", rep.Proposals[0].DeltaF)
	}
	if _, err := cjson.Marshal(rep); err != nil {
		t.Fatalf("report is not canonical JSON: %v", err)
	}
	if !cjson.ValidDigest(rep.ParentDigest) {
		t.Fatalf("parent digest %q", rep.ParentDigest)
	}
}

func TestModelUncertaintyBonus(t *testing.T) {
	// Beta(1,1): sd = sqrt(1/12); more counts shrink it.
	if got := ModelUncertaintyBonus([]float64{1, 1}); math.Abs(got-math.Sqrt(1.0/12)) > 1e-15 {
		t.Fatalf("Beta(1,1) spread %v", got)
	}
	if ModelUncertaintyBonus([]float64{2, 1}) >= ModelUncertaintyBonus([]float64{1, 1}) ||
		ModelUncertaintyBonus([]float64{200, 100}) >= ModelUncertaintyBonus([]float64{2, 1}) {
		t.Fatal("spread does not shrink with evidence")
	}
}

func FuzzDecodeCounts(f *testing.F) {
	f.Add([]byte(`{"kind":"flrh.aif.counts","version":1,"parameters":[{"name":"a","prior":[1,1],"posterior":[1,30]}],"proposals":[{"id":"p","reduced_prior":{"a":[0.001,1]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCounts(b)
		if err != nil {
			return
		}
		_, _, _ = BuildReport(c.Parameters, c.Proposals, c.Threshold)
	})
}

func BenchmarkDeltaF(b *testing.B) {
	q, p, r := []float64{1, 30}, []float64{1, 1}, []float64{0.001, 1}
	for b.Loop() {
		if _, _, err := DeltaF(q, p, r); err != nil {
			b.Fatal(err)
		}
	}
}
