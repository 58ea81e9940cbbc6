// Package channel is the continuous form of the active-inference
// controller: a belief (mean and uncertainty) per declared observation
// channel, updated by trust-weighted prediction error.
//
// The pieces, each a pure function of its inputs:
//
//   - Observation (R2): a typed vector with one value per declared channel
//     (real, bool or count), each in a fixed raw range, normalized to
//     [0, 1]. Missing, extra, non-finite, out-of-range or mistyped values
//     are refused with the channel named.
//   - Precision registry (R7): one trust weight per channel,
//     Π = clamp(1 / max(V, v_min), Π_min, Π_max), applied wherever
//     prediction error, scoring or gating happens.
//   - Belief update (R3): ε = o − μ; μ ← μ + α·Π·ε with one learning rate α;
//     the uncertainty V is a running average of the squared miss against
//     the freshly updated belief, V ← (1−β)·V + β·(o − μ′)², never below
//     the floor V_floor > 0. The configuration is refused if α·Π_max > 1
//     (the belief would overshoot) or α = 0 (it could never move).
//   - Free energy per tick (R8): F = Σ Π·ε² / Σ Π, the trust-weighted mean
//     squared miss of the prior belief, one number per tick.
//   - Shared kernel (R4): a [Kernel] is the only description of how an
//     action moves the channels. The live loop's next prior and the forward
//     model's prediction both call [Config.Predict], which calls it.
//   - EFE core (R5): risk = Σ Π·KL(N(μ, σ²) ‖ N(C_μ, σ²_C)) and ambiguity
//     = Σ ½·ln(2πe·max(σ², V_floor)); nothing else is called EFE.
package channel

import (
	"fmt"
	"math"
	"sort"

	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/aif/internal/fmath"
)

// Channel value types (R2: the observation vector is typed).
const (
	TypeReal  = ""      // any finite value in [Min, Max]
	TypeBool  = "bool"  // 0 or 1; the range is fixed to [0, 1]
	TypeCount = "count" // a whole number in [Min, Max]
)

// Spec declares one observation channel.
type Spec struct {
	Name     string
	Type     string  // TypeReal, TypeBool or TypeCount
	Min, Max float64 // the raw range; values are normalized to [0, 1]
	// Preferred outcome, in normalized units, and its spread (σ²_C > 0).
	PreferMean, PreferVar float64
}

// Config is a channel model. The zero value is not valid; fill it and call
// Validate.
type Config struct {
	Channels []Spec
	Alpha    float64 // learning rate, (0, 1]
	Beta     float64 // uncertainty averaging rate, (0, 1]
	VFloor   float64 // uncertainty floor, > 0
	VMin     float64 // variance below which precision stops growing, > 0
	PiMin    float64 // precision clamp, 0 < PiMin ≤ PiMax
	PiMax    float64
}

// Error is a typed rejection naming the channel or parameter at fault.
type Error struct {
	Code    string
	Pointer string
	Detail  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("channel: %s at %s: %s", e.Code, e.Pointer, e.Detail)
}

// Rejection codes.
const (
	CodeConfig      = "CHANNEL_BAD_CONFIG"
	CodeMissing     = "CHANNEL_MISSING_VALUE"
	CodeUnknown     = "CHANNEL_UNKNOWN"
	CodeNotFinite   = "CHANNEL_NOT_FINITE"
	CodeOutOfRange  = "CHANNEL_OUT_OF_RANGE"
	CodeType        = "CHANNEL_WRONG_TYPE"
	CodeBadAction   = "CHANNEL_UNKNOWN_ACTION"
	CodeBeliefShape = "CHANNEL_BELIEF_SHAPE"
)

func bad(ptr, format string, args ...any) error {
	return &Error{CodeConfig, ptr, fmt.Sprintf(format, args...)}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks the configuration.
func (c *Config) Validate() error {
	if len(c.Channels) == 0 {
		return bad("/channels", "at least one channel")
	}
	seen := map[string]bool{}
	for i, s := range c.Channels {
		at := fmt.Sprintf("/channels/%d", i)
		if s.Name == "" || seen[s.Name] {
			return bad(at+"/name", "empty or repeated name %q", s.Name)
		}
		seen[s.Name] = true
		switch s.Type {
		case TypeReal:
		case TypeCount:
			if s.Min != math.Trunc(s.Min) || s.Max != math.Trunc(s.Max) {
				return bad(at, "a count channel has whole-number bounds")
			}
		case TypeBool:
			if s.Min != 0 || s.Max != 1 {
				return bad(at, "a bool channel has the range [0, 1]")
			}
		default:
			return bad(at+"/type", "unknown channel type %q", s.Type)
		}
		if !finite(s.Min) || !finite(s.Max) || !(s.Max > s.Min) {
			return bad(at, "range [%v, %v] must be finite with max > min", s.Min, s.Max)
		}
		if !finite(s.PreferMean) || s.PreferMean < 0 || s.PreferMean > 1 {
			return bad(at+"/prefer_mean", "must be in [0, 1] (normalized units)")
		}
		if !finite(s.PreferVar) || !(s.PreferVar > 0) {
			return bad(at+"/prefer_var", "must be > 0")
		}
	}
	for _, p := range []struct {
		name   string
		v      float64
		lo, hi float64
	}{{"alpha", c.Alpha, 0, 1}, {"beta", c.Beta, 0, 1}} {
		if !finite(p.v) || !(p.v > p.lo) || p.v > p.hi {
			return bad("/"+p.name, "must be in (0, 1], have %v", p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"v_floor", c.VFloor}, {"v_min", c.VMin}, {"pi_min", c.PiMin}, {"pi_max", c.PiMax}} {
		if !finite(p.v) || !(p.v > 0) {
			return bad("/"+p.name, "must be finite and > 0, have %v", p.v)
		}
	}
	if c.PiMin > c.PiMax {
		return bad("/pi_min", "pi_min %v exceeds pi_max %v", c.PiMin, c.PiMax)
	}
	if float64(c.Alpha*c.PiMax) > 1 {
		return bad("/alpha", "alpha·pi_max = %v > 1: the belief would overshoot the observation", c.Alpha*c.PiMax)
	}
	return nil
}

// Belief is the per-channel belief in normalized units.
type Belief struct {
	Mu []float64 // means
	V  []float64 // uncertainties (running mean squared miss), ≥ VFloor
}

// Initial returns a belief at the given means with uncertainty v0 (raised
// to the floor if below it).
func (c *Config) Initial(mu []float64, v0 float64) (Belief, error) {
	if len(mu) != len(c.Channels) {
		return Belief{}, &Error{CodeBeliefShape, "/mu", fmt.Sprintf("want %d channels", len(c.Channels))}
	}
	b := Belief{Mu: append([]float64(nil), mu...), V: make([]float64, len(mu))}
	for i := range b.V {
		if !finite(mu[i]) || mu[i] < 0 || mu[i] > 1 {
			return Belief{}, &Error{CodeOutOfRange, fmt.Sprintf("/mu/%d", i), "initial mean must be in [0, 1]"}
		}
		b.V[i] = math.Max(v0, c.VFloor)
	}
	return b, nil
}

// Normalize converts a raw observation (one value per declared channel, by
// name) into the normalized vector, in channel order.
func (c *Config) Normalize(raw map[string]float64) ([]float64, error) {
	out := make([]float64, len(c.Channels))
	for i, s := range c.Channels {
		x, ok := raw[s.Name]
		at := "/" + s.Name
		switch {
		case !ok:
			return nil, &Error{CodeMissing, at, "no value for a declared channel"}
		case !finite(x):
			return nil, &Error{CodeNotFinite, at, fmt.Sprint(x)}
		case x < s.Min || x > s.Max:
			return nil, &Error{CodeOutOfRange, at, fmt.Sprintf("%v outside [%v, %v]", x, s.Min, s.Max)}
		case s.Type == TypeBool && x != 0 && x != 1:
			return nil, &Error{CodeType, at, fmt.Sprintf("%v is not a bool (0 or 1)", x)}
		case s.Type == TypeCount && x != math.Trunc(x):
			return nil, &Error{CodeType, at, fmt.Sprintf("%v is not a whole count", x)}
		}
		out[i] = (x - s.Min) / (s.Max - s.Min)
	}
	if len(raw) != len(c.Channels) {
		for _, name := range sortedNames(raw) {
			if c.index(name) < 0 {
				return nil, &Error{CodeUnknown, "/" + name, "not a declared channel"}
			}
		}
	}
	return out, nil
}

func (c *Config) index(name string) int {
	for i, s := range c.Channels {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// Precision returns the trust of each channel under the belief.
func (c *Config) Precision(b Belief) []float64 {
	out := make([]float64, len(b.V))
	for i, v := range b.V {
		out[i] = math.Min(math.Max(1/math.Max(v, c.VMin), c.PiMin), c.PiMax)
	}
	return out
}

// Tick is what one live update computes.
type Tick struct {
	Prior      Belief
	Posterior  Belief
	Errors     []float64 // ε = o − μ (prior)
	Precision  []float64 // Π of the prior
	FreeEnergy float64   // Σ Π ε² / Σ Π
}

// FreeEnergy is the trust-weighted mean squared miss of belief b for the
// normalized observation o: a pure function of belief, observation and
// precision, nothing else.
func (c *Config) FreeEnergy(b Belief, o []float64) (float64, error) {
	if err := c.checkBelief(b); err != nil {
		return 0, err
	}
	if len(o) != len(c.Channels) {
		return 0, &Error{CodeBeliefShape, "/observation", fmt.Sprintf("want %d channels, have %d", len(c.Channels), len(o))}
	}
	pi := c.Precision(b)
	num, den := 0.0, 0.0
	for i := range o {
		e := o[i] - b.Mu[i]
		num += float64(pi[i] * float64(e*e))
		den += pi[i]
	}
	return num / den, nil
}

// checkBelief verifies that a belief has one finite mean and one finite,
// non-negative uncertainty per channel.
func (c *Config) checkBelief(b Belief) error {
	if len(b.Mu) != len(c.Channels) || len(b.V) != len(c.Channels) {
		return &Error{CodeBeliefShape, "/belief", fmt.Sprintf("want %d channels, have %d means and %d uncertainties", len(c.Channels), len(b.Mu), len(b.V))}
	}
	for i := range b.Mu {
		if !finite(b.Mu[i]) || !finite(b.V[i]) || b.V[i] < 0 {
			return &Error{CodeNotFinite, fmt.Sprintf("/belief/%d", i), "mean and uncertainty must be finite, uncertainty ≥ 0"}
		}
	}
	return nil
}

// Update applies one observation (normalized) to the belief.
func (c *Config) Update(b Belief, o []float64) (Tick, error) {
	fe, err := c.FreeEnergy(b, o)
	if err != nil {
		return Tick{}, err
	}
	for i, x := range o {
		if !finite(x) {
			return Tick{}, &Error{CodeNotFinite, fmt.Sprintf("/observation/%d", i), fmt.Sprint(x)}
		}
	}
	pi := c.Precision(b)
	t := Tick{Prior: b, Precision: pi, Errors: make([]float64, len(o)), FreeEnergy: fe}
	post := Belief{Mu: make([]float64, len(o)), V: make([]float64, len(o))}
	for i := range o {
		e := o[i] - b.Mu[i]
		t.Errors[i] = e
		gain := float64(c.Alpha * pi[i])
		post.Mu[i] = b.Mu[i] + float64(gain*e)
		miss := o[i] - post.Mu[i]
		v := float64((1-c.Beta)*b.V[i]) + float64(c.Beta*float64(miss*miss))
		post.V[i] = math.Max(v, c.VFloor)
	}
	t.Posterior = post
	return t, nil
}

// Kernel is the one description of how an action moves the channels. Step
// returns the next means and the process variance the action adds; it must
// be pure. The live loop and the forward model both reach it through
// Config.Predict.
type Kernel interface {
	Step(mu []float64, action string) (next []float64, addVar []float64, err error)
}

// Effects is a declarative Kernel: per action, a shift of each channel's
// mean and the variance the action adds. Means are clamped to [0, 1].
type Effects map[string]Effect

// Effect is one action's effect, indexed by channel.
type Effect struct {
	Shift  []float64
	AddVar []float64
}

// Step implements Kernel.
func (e Effects) Step(mu []float64, action string) ([]float64, []float64, error) {
	eff, ok := e[action]
	if !ok {
		return nil, nil, &Error{CodeBadAction, "/" + action, "no such action"}
	}
	if len(eff.Shift) != len(mu) || len(eff.AddVar) != len(mu) {
		return nil, nil, &Error{CodeBeliefShape, "/" + action, "effect needs one shift and one variance per channel"}
	}
	next := make([]float64, len(mu))
	for i := range mu {
		next[i] = math.Min(math.Max(mu[i]+eff.Shift[i], 0), 1)
	}
	return next, append([]float64(nil), eff.AddVar...), nil
}

// Predict moves the belief through the kernel under an action: the means
// follow the kernel, the uncertainty grows by the action's process variance.
func (c *Config) Predict(k Kernel, b Belief, action string) (Belief, error) {
	if err := c.checkBelief(b); err != nil {
		return Belief{}, err
	}
	mu, add, err := k.Step(b.Mu, action)
	if err != nil {
		return Belief{}, err
	}
	if len(mu) != len(b.Mu) || len(add) != len(b.V) {
		return Belief{}, &Error{CodeBeliefShape, "/" + action, "the kernel must return one mean and one added variance per channel"}
	}
	for i, x := range mu {
		if !finite(x) {
			return Belief{}, &Error{CodeNotFinite, fmt.Sprintf("/%s/mu/%d", action, i), "the kernel returned a non-finite mean"}
		}
	}
	out := Belief{Mu: mu, V: make([]float64, len(b.V))}
	for i, v := range b.V {
		if !finite(add[i]) || add[i] < 0 {
			return Belief{}, &Error{CodeNotFinite, fmt.Sprintf("/%s/add_var/%d", action, i), "process variance must be finite and ≥ 0"}
		}
		out.V[i] = math.Max(v+add[i], c.VFloor)
	}
	return out, nil
}

// Core is the two-term expected free energy of a predicted belief.
type Core struct {
	Risk      float64
	Ambiguity float64
}

// G returns Risk + Ambiguity.
func (c Core) G() float64 { return c.Risk + c.Ambiguity }

// Score computes the EFE core of a predicted belief, weighting each
// channel's risk by its precision.
func (c *Config) Score(pred Belief) (Core, error) {
	if err := c.checkBelief(pred); err != nil {
		return Core{}, err
	}
	pi := c.Precision(pred)
	var core Core
	for i, s := range c.Channels {
		v := math.Max(pred.V[i], c.VFloor)
		d := pred.Mu[i] - s.PreferMean
		// KL(N(μ, v) ‖ N(m, w)) = ½[ln(w/v) + (v + (μ−m)²)/w − 1]
		kl := 0.5 * (fmath.Log(s.PreferVar/v) + (v+float64(d*d))/s.PreferVar - 1)
		core.Risk += float64(pi[i] * kl)
		core.Ambiguity += float64(0.5 * (fmath.Ln2Pi + 1 + fmath.Log(v)))
	}
	return core, nil
}

// ScoreCascade scores a sequence of actions from belief b: each step is
// predicted by the shared kernel and scored, and step t contributes
// discount^t of its risk and ambiguity. The cascade, not its first move, is
// what is scored.
func (c *Config) ScoreCascade(k Kernel, b Belief, actions []string, discount float64) (Core, []Core, error) {
	if !finite(discount) || !(discount > 0) || discount > 1 {
		return Core{}, nil, bad("/discount", "temporal discount must be in (0, 1]")
	}
	var total Core
	steps := make([]Core, 0, len(actions))
	w := 1.0
	for _, a := range actions {
		var err error
		b, err = c.Predict(k, b, a)
		if err != nil {
			return Core{}, nil, err
		}
		s, err := c.Score(b)
		if err != nil {
			return Core{}, nil, err
		}
		steps = append(steps, s)
		total.Risk += float64(w * s.Risk)
		total.Ambiguity += float64(w * s.Ambiguity)
		w = float64(w * discount)
	}
	return total, steps, nil
}

// TickRecord is the persisted form of a Tick (fixed point at 1e9).
type TickRecord struct {
	Kind       string      `json:"kind"`
	Version    int64       `json:"version"`
	Scale      int64       `json:"scale"`
	Channels   []string    `json:"channels"`
	Mu         []fixed.Num `json:"mu"`
	V          []fixed.Num `json:"uncertainty"`
	Errors     []fixed.Num `json:"prediction_error"`
	Precision  []fixed.Num `json:"precision"`
	FreeEnergy fixed.Num   `json:"free_energy"`
}

// Record converts a tick to its canonical form.
func (c *Config) Record(t Tick) TickRecord {
	names := make([]string, len(c.Channels))
	for i, s := range c.Channels {
		names[i] = s.Name
	}
	fe, _ := fixed.MustFloat(t.FreeEnergy)
	return TickRecord{Kind: "flrh.aif.channel-tick", Version: 1, Scale: fixed.Scale, Channels: names,
		Mu: nums(t.Posterior.Mu), V: nums(t.Posterior.V), Errors: nums(t.Errors), Precision: nums(t.Precision), FreeEnergy: fe}
}

func nums(v []float64) []fixed.Num {
	out := make([]fixed.Num, len(v))
	for i, x := range v {
		out[i], _ = fixed.MustFloat(x)
	}
	return out
}

func sortedNames(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
