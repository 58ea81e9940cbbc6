// Package choice turns scored candidates into an auditable decision.
//
// It keeps four disciplines of the active-inference controller:
//
//   - Scorecard (R5): every candidate carries the canonical two-term core
//     (risk, ambiguity; their sum is the expected free energy) and, apart
//     from it, a list of named augmentations (cost, intrinsic value, the
//     model-uncertainty bonus, ...). The record says whether the pick was
//     moved by the core or by which augmentation. Nothing but risk +
//     ambiguity is labelled EFE.
//   - Candidate set (R6): a bounded set built by retrieval (ranked by
//     relevance) plus gating rules; every inclusion and every exclusion is
//     recorded with its reason.
//   - Commitment temperature (R14): P(a) ∝ exp(−G(a)/τ), with τ a dial
//     coupled to diagnostics (recent regressions, belief uncertainty,
//     contradiction rate, time pressure). Randomness comes only from a
//     stream seeded by the triggering event's digest.
//   - Abstention: the controller abstains when the set is empty, when no
//     candidate beats doing nothing by the stated margin, or when the best
//     core is tied (the core does not discriminate, so any pick would be
//     decided by an augmentation or by order, which is invention).
//
// Cascades (R13) are scored as wholes: [Cascade] sums the per-step cores
// with a named temporal discount, distinct from the temperature.
package choice

import (
	"fmt"
	"math"
	"sort"

	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/aif/internal/draw"
	"flrh.dev/flrh/aif/internal/fmath"
)

// Core is the canonical expected-free-energy decomposition.
type Core struct {
	Risk      float64
	Ambiguity float64
}

// EFE returns Risk + Ambiguity: the only quantity called EFE.
func (c Core) EFE() float64 { return c.Risk + c.Ambiguity }

// Term is a named engineering augmentation, added to the core to form the
// total score (lower is better, like G). A bonus is a negative term.
type Term struct {
	Name  string
	Value float64
}

// Well-known augmentation names.
const (
	ModelUncertaintyBonus = "model_uncertainty_bonus"
	ParameterInfoGain     = "parameter_info_gain"
	IntrinsicValue        = "intrinsic_value"
	Cost                  = "cost"
)

// Candidate is one scored option.
type Candidate struct {
	ID            string
	Core          Core
	Augmentations []Term
	// Steps holds the per-step cores of a cascade (nil for a single move).
	Steps []Core
	// Discount is the temporal discount a cascade was scored with.
	Discount float64
}

// Total returns the core EFE plus every augmentation, summed in order.
func (c Candidate) Total() float64 {
	t := c.Core.EFE()
	for _, a := range c.Augmentations {
		t += a.Value
	}
	return t
}

// TemporalDiscount names the discount applied to later steps of a cascade.
// It is a quantity of planning depth, never reused as the temperature.
const TemporalDiscount = "temporal_discount"

// Cascade scores a multi-step policy as one candidate: step t contributes
// discount^t of its risk and ambiguity. The thing scored is the cascade.
func Cascade(id string, steps []Core, discount float64, aug ...Term) (Candidate, error) {
	if math.IsNaN(discount) || !(discount > 0) || discount > 1 {
		return Candidate{}, fmt.Errorf("choice: %s must be in (0, 1], have %v", TemporalDiscount, discount)
	}
	if len(steps) == 0 {
		return Candidate{}, fmt.Errorf("choice: cascade %s has no steps", id)
	}
	c := Candidate{ID: id, Steps: append([]Core(nil), steps...), Discount: discount, Augmentations: aug}
	w := 1.0
	for _, s := range steps {
		c.Core.Risk += float64(w * s.Risk)
		c.Core.Ambiguity += float64(w * s.Ambiguity)
		w = float64(w * discount)
	}
	return c, nil
}

// ---- candidate set (R6) ----

// Proposal is a retrieved option before gating.
type Proposal struct {
	ID        string
	Relevance float64 // retrieval score, higher first
	Tags      []string
}

// Rule is a gating rule: Admit reports whether the proposal may enter the
// set and, if not, why. Rules must be pure.
type Rule struct {
	Name  string
	Admit func(Proposal) (bool, string)
}

// RequireTag admits only proposals carrying tag.
func RequireTag(tag string) Rule {
	return Rule{Name: "require:" + tag, Admit: func(p Proposal) (bool, string) {
		for _, t := range p.Tags {
			if t == tag {
				return true, ""
			}
		}
		return false, "lacks required tag " + tag
	}}
}

// ForbidTag refuses proposals carrying tag.
func ForbidTag(tag string) Rule {
	return Rule{Name: "forbid:" + tag, Admit: func(p Proposal) (bool, string) {
		for _, t := range p.Tags {
			if t == tag {
				return false, "carries forbidden tag " + tag
			}
		}
		return true, ""
	}}
}

// Inclusion records why a proposal entered the set.
type Inclusion struct {
	ID     string `json:"id"`
	Rank   int64  `json:"rank"`
	Reason string `json:"reason"`
}

// Exclusion records why a proposal was kept out.
type Exclusion struct {
	ID     string `json:"id"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Set is a bounded candidate set with its reasons.
type Set struct {
	Limit    int64       `json:"limit"`
	Included []Inclusion `json:"included"`
	Excluded []Exclusion `json:"excluded"`
}

// BoundRule names the exclusion of admissible proposals past the limit.
const BoundRule = "bound"

// BuildSet ranks the pool by relevance (then id), applies every rule in
// order, and admits at most limit proposals.
func BuildSet(pool []Proposal, rules []Rule, limit int) Set {
	ranked := append([]Proposal(nil), pool...)
	sort.SliceStable(ranked, func(i, j int) bool {
		if ranked[i].Relevance != ranked[j].Relevance {
			return ranked[i].Relevance > ranked[j].Relevance
		}
		return ranked[i].ID < ranked[j].ID
	})
	s := Set{Limit: int64(limit), Included: []Inclusion{}, Excluded: []Exclusion{}}
	seen := map[string]bool{}
	for rank, p := range ranked {
		if seen[p.ID] {
			s.Excluded = append(s.Excluded, Exclusion{p.ID, "unique", "duplicate id; first retrieval kept"})
			continue
		}
		seen[p.ID] = true
		admitted := true
		for _, r := range rules {
			if ok, why := r.Admit(p); !ok {
				s.Excluded = append(s.Excluded, Exclusion{p.ID, r.Name, why})
				admitted = false
				break
			}
		}
		if !admitted {
			continue
		}
		if len(s.Included) >= limit {
			s.Excluded = append(s.Excluded, Exclusion{p.ID, BoundRule, fmt.Sprintf("set already holds %d candidates", limit)})
			continue
		}
		s.Included = append(s.Included, Inclusion{p.ID, int64(rank + 1),
			fmt.Sprintf("retrieved at rank %d (relevance %s); passed %d gating rules", rank+1, num(p.Relevance), len(rules))})
	}
	return s
}

// ---- temperature (R14) ----

// Diagnostics are the signals the commitment dial reads.
type Diagnostics struct {
	RecentRegressions int     // count in the recent window
	BeliefUncertainty float64 // normalized to [0, 1]
	ContradictionRate float64 // [0, 1]
	TimePressure      float64 // [0, 1]; 1 = deadline now
}

// Dial couples the temperature to diagnostics:
//
//	τ = clamp(Base · (1 + KRegression·min(regressions, 10) + KUncertainty·u
//	          + KContradiction·c) / (1 + KTimePressure·p), Min, Max)
//
// Regressions, uncertainty and contradictions keep the field open (raise τ);
// time pressure commits to the front-runner (lowers τ). τ = 0 means argmin.
type Dial struct {
	Base, Min, Max                                           float64
	KRegression, KUncertainty, KContradiction, KTimePressure float64
}

// Temperature returns τ for the diagnostics, or an error for inputs outside
// their ranges.
func (d Dial) Temperature(g Diagnostics) (float64, error) {
	for _, v := range []float64{g.BeliefUncertainty, g.ContradictionRate, g.TimePressure} {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return 0, fmt.Errorf("choice: diagnostic %v outside [0, 1]", v)
		}
	}
	if g.RecentRegressions < 0 {
		return 0, fmt.Errorf("choice: negative regression count")
	}
	for _, v := range []float64{d.Base, d.Min, d.Max, d.KRegression, d.KUncertainty, d.KContradiction, d.KTimePressure} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("choice: dial parameter %v must be finite and ≥ 0", v)
		}
	}
	if d.Min > d.Max {
		return 0, fmt.Errorf("choice: dial min %v exceeds max %v", d.Min, d.Max)
	}
	up := 1 + float64(d.KRegression*float64(min(g.RecentRegressions, 10)))
	up += float64(d.KUncertainty * g.BeliefUncertainty)
	up += float64(d.KContradiction * g.ContradictionRate)
	down := 1 + float64(d.KTimePressure*g.TimePressure)
	tau := float64(d.Base*up) / down
	return math.Min(math.Max(tau, d.Min), d.Max), nil
}

// ---- selection ----

// Abstention reasons.
const (
	AbstainEmpty             = "EMPTY_SET"
	AbstainNoMargin          = "NO_MARGIN_OVER_NOTHING"
	AbstainNonDiscriminating = "CORE_DOES_NOT_DISCRIMINATE"
)

// SelectDomain separates selection draws from other uses of a digest.
const SelectDomain = "flrh-aif-choice/1"

// Request is everything a selection depends on.
type Request struct {
	Candidates []Candidate
	// Nothing is the do-nothing baseline; a candidate must beat its total
	// by Margin (in nats) or the controller abstains.
	Nothing     Candidate
	Margin      float64
	Temperature float64
	// EventDigest seeds the draw when Temperature > 0.
	EventDigest string
}

// Decision is the outcome of a selection, with the whole scorecard.
type Decision struct {
	Pick        string // empty when abstaining
	Abstain     string // reason, empty when a candidate was picked
	ArgminCore  string // best by core EFE alone
	ArgminTotal string // best by total score
	MovedBy     []string
	Probability []float64 // per candidate, in request order
}

// Select decides. Candidates are considered in request order; ties break
// to the earlier candidate.
func Select(r Request) (Decision, error) {
	if math.IsNaN(r.Temperature) || r.Temperature < 0 || math.IsInf(r.Temperature, 0) {
		return Decision{}, fmt.Errorf("choice: temperature must be finite and ≥ 0")
	}
	if math.IsNaN(r.Margin) || r.Margin < 0 {
		return Decision{}, fmt.Errorf("choice: margin must be ≥ 0")
	}
	seen := map[string]bool{}
	for _, c := range r.Candidates {
		if c.ID == "" || seen[c.ID] {
			return Decision{}, fmt.Errorf("choice: empty or duplicate candidate id %q", c.ID)
		}
		seen[c.ID] = true
		if !isFinite(c.Total()) {
			return Decision{}, fmt.Errorf("choice: candidate %s has a non-finite score", c.ID)
		}
	}
	var d Decision
	if len(r.Candidates) == 0 {
		d.Abstain = AbstainEmpty
		return d, nil
	}
	bc, bt := 0, 0
	for i, c := range r.Candidates {
		if c.Core.EFE() < r.Candidates[bc].Core.EFE() {
			bc = i
		}
		if c.Total() < r.Candidates[bt].Total() {
			bt = i
		}
	}
	d.ArgminCore, d.ArgminTotal = r.Candidates[bc].ID, r.Candidates[bt].ID
	d.MovedBy = movedBy(r.Candidates, bc, bt)

	// P(a) ∝ exp(−G_total(a)/τ); τ = 0 is the argmin limit.
	d.Probability = make([]float64, len(r.Candidates))
	if r.Temperature == 0 {
		d.Probability[bt] = 1
	} else {
		v := make([]float64, len(r.Candidates))
		for i, c := range r.Candidates {
			v[i] = -c.Total() / r.Temperature
		}
		fmath.Softmax(d.Probability, v)
	}

	// The core must discriminate: a tie for the best core (at the persisted
	// 1e-9 resolution) means the pick would be decided by something else.
	bestCore := numOf(r.Candidates[bc].Core.EFE())
	ties := 0
	for _, c := range r.Candidates {
		if numOf(c.Core.EFE()) == bestCore {
			ties++
		}
	}
	if ties > 1 {
		d.Abstain = AbstainNonDiscriminating
		return d, nil
	}
	if !(r.Candidates[bt].Total() < r.Nothing.Total()-r.Margin) {
		d.Abstain = AbstainNoMargin
		return d, nil
	}
	pick := bt
	if r.Temperature > 0 {
		pick = draw.New(SelectDomain, r.EventDigest).Categorical(d.Probability)
	}
	d.Pick = r.Candidates[pick].ID
	return d, nil
}

// movedBy explains the difference between the core's and the total's
// favourite: "core" when they agree, otherwise each augmentation whose
// removal alone would give the core's favourite back, or "augmentations"
// when only their joint effect does.
func movedBy(cs []Candidate, bc, bt int) []string {
	if bc == bt {
		return []string{"core"}
	}
	names := map[string]bool{}
	for _, c := range cs {
		for _, a := range c.Augmentations {
			names[a.Name] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []string
	for _, n := range sorted {
		best := 0
		score := func(c Candidate) float64 {
			t := c.Core.EFE()
			for _, a := range c.Augmentations {
				if a.Name != n {
					t += a.Value
				}
			}
			return t
		}
		for i := range cs {
			if score(cs[i]) < score(cs[best]) {
				best = i
			}
		}
		if best == bc {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []string{"augmentations"}
	}
	return out
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func numOf(x float64) fixed.Num {
	n, _ := fixed.MustFloat(x)
	return n
}

func num(x float64) string { return numOf(x).String() }
