package channel

import (
	"errors"
	"math"
	"testing"

	"flrh.dev/flrh/determinism"
	"pgregory.net/rapid"
)

func testConfig() *Config {
	return &Config{
		Channels: []Spec{
			{Name: "tests-passing", Min: 0, Max: 100, PreferMean: 1, PreferVar: 0.01},
			{Name: "diff-size", Min: 0, Max: 2000, PreferMean: 0.1, PreferVar: 0.05},
		},
		Alpha: 0.05, Beta: 0.2, VFloor: 1e-4, VMin: 1e-3, PiMin: 0.1, PiMax: 20,
	}
}

func TestValidate(t *testing.T) {
	if err := testConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mut  func(*Config)
		ptr  string
	}{
		{"overshoot", func(c *Config) { c.Alpha = 0.1 }, "/alpha"},
		{"frozen belief", func(c *Config) { c.Alpha = 0 }, "/alpha"},
		{"no floor", func(c *Config) { c.VFloor = 0 }, "/v_floor"},
		{"NaN floor", func(c *Config) { c.VFloor = math.NaN() }, "/v_floor"},
		{"clamp order", func(c *Config) { c.PiMin = 30 }, "/pi_min"},
		{"range", func(c *Config) { c.Channels[1].Max = 0 }, "/channels/1"},
		{"dup", func(c *Config) { c.Channels[1].Name = "tests-passing" }, "/channels/1/name"},
		{"pref var", func(c *Config) { c.Channels[0].PreferVar = 0 }, "/channels/0/prefer_var"},
		{"type", func(c *Config) { c.Channels[0].Type = "colour" }, "/channels/0/type"},
		{"bool range", func(c *Config) { c.Channels[0].Type = TypeBool }, "/channels/0"},
	}
	for _, tc := range cases {
		c := testConfig()
		tc.mut(c)
		var e *Error
		if err := c.Validate(); !errors.As(err, &e) || e.Pointer != tc.ptr {
			t.Errorf("%s: got %v, want error at %s", tc.name, err, tc.ptr)
		}
	}
}

func TestTypedObservations(t *testing.T) {
	c := testConfig()
	c.Channels = append(c.Channels, Spec{Name: "compiles", Type: TypeBool, Min: 0, Max: 1, PreferMean: 1, PreferVar: 0.1},
		Spec{Name: "failing-specs", Type: TypeCount, Min: 0, Max: 50, PreferMean: 0, PreferVar: 0.1})
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := c.Normalize(map[string]float64{"tests-passing": 99.5, "diff-size": 10, "compiles": 1, "failing-specs": 5})
	if err != nil || o[2] != 1 || o[3] != 0.1 {
		t.Fatalf("%v %v", o, err)
	}
	for name, raw := range map[string]map[string]float64{
		"compiles":      {"tests-passing": 1, "diff-size": 1, "compiles": 0.5, "failing-specs": 1},
		"failing-specs": {"tests-passing": 1, "diff-size": 1, "compiles": 1, "failing-specs": 2.5},
	} {
		_, err := c.Normalize(raw)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeType || e.Pointer != "/"+name {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	c := testConfig()
	o, err := c.Normalize(map[string]float64{"tests-passing": 50, "diff-size": 200})
	if err != nil || o[0] != 0.5 || o[1] != 0.1 {
		t.Fatalf("normalize: %v %v", o, err)
	}
	for _, raw := range []map[string]float64{
		{"tests-passing": 50},
		{"tests-passing": 150, "diff-size": 1},
		{"tests-passing": math.NaN(), "diff-size": 1},
		{"tests-passing": 1, "diff-size": 1, "mood": 3},
	} {
		if _, err := c.Normalize(raw); err == nil {
			t.Errorf("accepted %v", raw)
		}
	}
}

// The invariants of R3: the belief moves toward the observation by α·Π·ε,
// never past it, and its uncertainty never falls below the floor, however
// many perfect observations arrive.
func TestUpdateInvariants(t *testing.T) {
	c := testConfig()
	rapid.Check(t, func(t *rapid.T) {
		b, _ := c.Initial([]float64{rapid.Float64Range(0, 1).Draw(t, "m0"), rapid.Float64Range(0, 1).Draw(t, "m1")}, rapid.Float64Range(0, 1).Draw(t, "v"))
		for k := 0; k < 50; k++ {
			o := []float64{rapid.Float64Range(0, 1).Draw(t, "o0"), rapid.Float64Range(0, 1).Draw(t, "o1")}
			tick, err := c.Update(b, o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range o {
				before, after := math.Abs(o[i]-b.Mu[i]), math.Abs(o[i]-tick.Posterior.Mu[i])
				if after > before+1e-15 {
					t.Fatalf("belief moved away from the observation: %v -> %v", before, after)
				}
				if o[i] != b.Mu[i] && tick.Posterior.Mu[i] == b.Mu[i] {
					t.Fatalf("belief could not move")
				}
				if tick.Posterior.V[i] < c.VFloor {
					t.Fatalf("uncertainty %v below floor", tick.Posterior.V[i])
				}
				if tick.Precision[i] < c.PiMin || tick.Precision[i] > c.PiMax {
					t.Fatalf("precision %v outside clamp", tick.Precision[i])
				}
			}
			if tick.FreeEnergy < 0 {
				t.Fatal("negative free energy")
			}
			b = tick.Posterior
		}
	})
	// Perfect observations drive the uncertainty to the floor, not below.
	b, _ := c.Initial([]float64{0.5, 0.5}, 0.5)
	for k := 0; k < 2000; k++ {
		tick, _ := c.Update(b, []float64{0.5, 0.5})
		b = tick.Posterior
	}
	if b.V[0] != c.VFloor {
		t.Fatalf("uncertainty settled at %v, want the floor %v", b.V[0], c.VFloor)
	}
}

func TestFreeEnergyIsTrustWeightedMeanSquaredMiss(t *testing.T) {
	c := testConfig()
	b := Belief{Mu: []float64{0.5, 0.5}, V: []float64{0.1, 0.01}} // Π = 10, 20 (clamped at 20)
	fe, err := c.FreeEnergy(b, []float64{0.7, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := (10 * 0.2 * 0.2) / (10 + 20.0)
	if math.Abs(fe-want) > 1e-15 {
		t.Fatalf("F = %v, want %v", fe, want)
	}
	if z, _ := c.FreeEnergy(b, []float64{0.5, 0.5}); z != 0 {
		t.Fatal("F must be zero when every channel matches")
	}
}

func TestGaussianCoreAgainstClosedForm(t *testing.T) {
	c := testConfig()
	pred := Belief{Mu: []float64{0.8, 0.1}, V: []float64{0.04, 0.05}}
	core, err := c.Score(pred)
	if err != nil {
		t.Fatal(err)
	}
	pi := c.Precision(pred)
	kl := func(mu, v, m, w float64) float64 {
		return math.Log(math.Sqrt(w)/math.Sqrt(v)) + (v+(mu-m)*(mu-m))/(2*w) - 0.5
	}
	wantRisk := pi[0]*kl(0.8, 0.04, 1, 0.01) + pi[1]*kl(0.1, 0.05, 0.1, 0.05)
	wantAmb := 0.5*math.Log(2*math.Pi*math.E*0.04) + 0.5*math.Log(2*math.Pi*math.E*0.05)
	if math.Abs(core.Risk-wantRisk) > 1e-12 || math.Abs(core.Ambiguity-wantAmb) > 1e-12 {
		t.Fatalf("core %+v, want risk %v ambiguity %v", core, wantRisk, wantAmb)
	}
}

// R4: the live loop and the forward model share one kernel. The prior the
// live loop carries into the next tick equals the first step of the
// forward model's cascade prediction.
func TestForwardModelSharesLiveKernel(t *testing.T) {
	c := testConfig()
	k := Effects{
		"fix":  {Shift: []float64{0.3, 0.05}, AddVar: []float64{0.01, 0.01}},
		"wait": {Shift: []float64{0, 0}, AddVar: []float64{0.001, 0.001}},
	}
	b, _ := c.Initial([]float64{0.4, 0.1}, 0.05)
	live, err := c.Predict(k, b, "fix")
	if err != nil {
		t.Fatal(err)
	}
	total, steps, err := c.ScoreCascade(k, b, []string{"fix", "wait", "wait"}, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if s0, _ := c.Score(live); steps[0] != s0 {
		t.Fatal("forward model's first step differs from the live prediction")
	}
	want := steps[0].Risk + 0.9*steps[1].Risk + 0.81*steps[2].Risk
	if math.Abs(total.Risk-want) > 1e-12 {
		t.Fatalf("discounted risk %v, want %v", total.Risk, want)
	}
	if _, _, err := c.ScoreCascade(k, b, []string{"teleport"}, 1); err == nil {
		t.Fatal("unknown action accepted")
	}
	// Fixing first beats waiting when tests are below the preferred level.
	fixFirst, _, _ := c.ScoreCascade(k, b, []string{"fix", "wait"}, 0.9)
	waitFirst, _, _ := c.ScoreCascade(k, b, []string{"wait", "wait"}, 0.9)
	if !(fixFirst.G() < waitFirst.G()) {
		t.Fatalf("fix %v should beat wait %v", fixFirst.G(), waitFirst.G())
	}
}

func TestUpdateDeterministic(t *testing.T) {
	c := testConfig()
	b, _ := c.Initial([]float64{0.2, 0.9}, 0.1)
	determinism.Check2(t, b, []float64{0.7, 0.3}, func(b Belief, o []float64) TickRecord {
		tick, err := c.Update(b, o)
		if err != nil {
			t.Fatal(err)
		}
		return c.Record(tick)
	})
}

func BenchmarkUpdate(b *testing.B) {
	c := testConfig()
	bel, _ := c.Initial([]float64{0.2, 0.9}, 0.1)
	o := []float64{0.7, 0.3}
	for b.Loop() {
		if _, err := c.Update(bel, o); err != nil {
			b.Fatal(err)
		}
	}
}

func TestObserveCarriesHypotheses(t *testing.T) {
	c := testConfig()
	k := Effects{"fix": {Shift: []float64{0.2, 0}, AddVar: []float64{0.01, 0}}}
	b, _ := c.Initial([]float64{0.5, 0.2}, 0.05)
	h := Hypotheses{Goal: "green-build", Subgoals: []string{"fix-flaky-test"}, Blockers: []string{"ci-queue"}, PatternFit: 0.7, Belief: b}
	next, tick, err := c.Observe(h, k, "fix", []float64{0.6, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	live, _ := c.Predict(k, tick.Posterior, "fix")
	if next.ExpectedNext[0] != live.Mu[0] || next.Belief.V[0] != live.V[0] {
		t.Fatal("next prior is not the shared kernel's prediction")
	}
	if next.Goal != "green-build" || next.Blockers[0] != "ci-queue" {
		t.Fatalf("hypotheses lost: %+v", next)
	}
	rec := c.RecordHypotheses(next)
	if rec.PatternFit != 700_000_000 || len(rec.ExpectedNext) != 2 {
		t.Fatalf("record %+v", rec)
	}
	if _, _, err := c.Observe(Hypotheses{Belief: b}, k, "fix", []float64{0, 0}); err == nil {
		t.Fatal("belief state without a goal accepted")
	}
}

func TestShapeAndFinitenessChecks(t *testing.T) {
	c := testConfig()
	good, _ := c.Initial([]float64{0.5, 0.5}, 0.1)
	k := Effects{"x": {Shift: []float64{0, 0}, AddVar: []float64{0, 0}}}
	short := Belief{Mu: []float64{0.5}, V: []float64{0.1}}
	nan := Belief{Mu: []float64{0.5, math.NaN()}, V: []float64{0.1, 0.1}}
	for _, b := range []Belief{short, nan} {
		if _, err := c.FreeEnergy(b, []float64{0, 0}); err == nil {
			t.Errorf("FreeEnergy accepted %v", b)
		}
		if _, err := c.Score(b); err == nil {
			t.Errorf("Score accepted %v", b)
		}
		if _, err := c.Predict(k, b, "x"); err == nil {
			t.Errorf("Predict accepted %v", b)
		}
	}
	if _, err := c.Update(good, []float64{0.5}); err == nil {
		t.Error("short observation accepted")
	}
	if _, err := c.Update(good, []float64{0.5, math.Inf(1)}); err == nil {
		t.Error("infinite observation accepted")
	}
}
