// Package reduce implements Bayesian model reduction over accumulated
// Dirichlet and Beta counts: structure learning that re-reads the evidence
// already gathered under a simpler model and accepts the simplification
// only when the evidence favours it past a stated threshold.
//
// For a Dirichlet parameter with prior counts p and posterior counts q, a
// reduced prior r (for example one that all but removes a connection) has
// the closed-form change in free energy
//
//	ΔF = ln B(q) + ln B(r) − ln B(p) − ln B(q + r − p)
//
// where ln B(a) = Σ ln Γ(a_i) − ln Γ(Σ a_i), and reduced posterior
// q + r − p. A negative ΔF means the reduced model explains the same counts
// with more evidence. A proposal is accepted only when ΔF < −threshold; the
// default threshold is 3 nats (odds of about 20:1). No new data is used, so
// the same counts always give the same decision: the frozen parent (with its
// digest), every proposal, its ΔF, the decision and the reduced posterior
// are recorded and replay exactly.
//
// The posterior spread of the counts is exposed as [ModelUncertaintyBonus],
// an exploration heuristic named for what it is: it is not expected
// information gain and never enters the risk-plus-ambiguity core.
package reduce

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/aif/internal/fmath"
	"flrh.dev/flrh/cjson"
)

// DefaultThreshold is the evidence a reduction must gain, in nats (e³ ≈ 20).
const DefaultThreshold = 3.0

// Parameter is one Dirichlet (or, with two entries, Beta) parameter of the
// parent model: its prior counts and the posterior counts accumulated.
type Parameter struct {
	Name      string
	Prior     []float64
	Posterior []float64
}

// Proposal is one candidate reduction: a reduced prior for some parameters.
// Parameters it does not name keep their prior (and contribute ΔF = 0).
type Proposal struct {
	ID      string
	Reduced map[string][]float64
}

// Outcome is the evaluation of one proposal.
type Outcome struct {
	ID               string
	DeltaF           float64
	Accepted         bool
	ReducedPosterior map[string][]float64
}

// Error is a typed rejection with the location of the offending value.
type Error struct {
	Code    string
	Pointer string
	Detail  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("reduce: %s at %s: %s", e.Code, e.Pointer, e.Detail)
}

// Rejection codes.
const (
	CodeShape     = "BMR_SHAPE_MISMATCH"
	CodeCount     = "BMR_BAD_COUNT" // not finite, or not strictly positive
	CodeUnknown   = "BMR_UNKNOWN_PARAMETER"
	CodeReduction = "BMR_INVALID_REDUCTION" // q + r − p has an entry ≤ 0
	CodeThreshold = "BMR_BAD_THRESHOLD"
	CodeSyntax    = "BMR_SYNTAX"
	CodeName      = "BMR_BAD_NAME"
)

// LogBeta returns ln B(a) = Σ ln Γ(a_i) − ln Γ(Σ a_i), bit-identical on
// every architecture.
func LogBeta(a []float64) float64 {
	s, sum := 0.0, 0.0
	for _, x := range a {
		s += fmath.Lgamma(x)
		sum += x
	}
	return s - fmath.Lgamma(sum)
}

func positive(v []float64, at string) error {
	if len(v) < 2 {
		return &Error{CodeShape, at, "a Dirichlet parameter needs at least two entries"}
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return &Error{CodeCount, fmt.Sprintf("%s/%d", at, i), fmt.Sprintf("count %v must be finite and > 0", x)}
		}
	}
	return nil
}

// DeltaF returns the free-energy change of reducing prior p to r given
// posterior q, and the reduced posterior q + r − p.
func DeltaF(q, p, r []float64) (float64, []float64, error) {
	if len(q) != len(p) || len(r) != len(p) {
		return 0, nil, &Error{CodeShape, "", "q, p and r need the same length"}
	}
	for _, v := range []struct {
		v  []float64
		at string
	}{{q, "/q"}, {p, "/p"}, {r, "/r"}} {
		if err := positive(v.v, v.at); err != nil {
			return 0, nil, err
		}
	}
	s := make([]float64, len(q))
	for i := range q {
		s[i] = (q[i] - p[i]) + r[i] // exact when q − p is (counts added to a prior)
		if !(s[i] > 0) {
			return 0, nil, &Error{CodeReduction, fmt.Sprintf("/%d", i), fmt.Sprintf("reduced posterior entry %v is not positive", s[i])}
		}
	}
	return LogBeta(q) + LogBeta(r) - LogBeta(p) - LogBeta(s), s, nil
}

// Evaluate scores every proposal against the frozen parent. Proposals are
// independent alternatives, each judged against the parent alone.
func Evaluate(parent []Parameter, proposals []Proposal, threshold float64) ([]Outcome, error) {
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) || threshold < 0 {
		return nil, &Error{CodeThreshold, "/threshold", "must be finite and ≥ 0"}
	}
	index := map[string]int{}
	for i, p := range parent {
		at := fmt.Sprintf("/parameters/%d", i)
		if p.Name == "" {
			return nil, &Error{CodeName, at + "/name", "empty name"}
		}
		if _, dup := index[p.Name]; dup {
			return nil, &Error{CodeName, at + "/name", "duplicate name " + p.Name}
		}
		index[p.Name] = i
		if len(p.Prior) != len(p.Posterior) {
			return nil, &Error{CodeShape, at, "prior and posterior differ in length"}
		}
		if err := positive(p.Prior, at+"/prior"); err != nil {
			return nil, err
		}
		if err := positive(p.Posterior, at+"/posterior"); err != nil {
			return nil, err
		}
	}
	out := make([]Outcome, len(proposals))
	for k, prop := range proposals {
		at := fmt.Sprintf("/proposals/%d", k)
		o := Outcome{ID: prop.ID, ReducedPosterior: map[string][]float64{}}
		// Sum over parameters in parent order, so the float sum is fixed.
		for _, p := range parent {
			r, ok := prop.Reduced[p.Name]
			if !ok {
				continue
			}
			d, s, err := DeltaF(p.Posterior, p.Prior, r)
			if err != nil {
				// The parent was checked above, so only the reduced prior
				// (pointer "/r/i") or the reduced posterior ("/i") can fail.
				e := err.(*Error)
				e.Pointer = at + "/reduced_prior/" + cjson.EscapePointer(p.Name) + strings.TrimPrefix(e.Pointer, "/r")
				return nil, e
			}
			o.DeltaF += d
			o.ReducedPosterior[p.Name] = s
		}
		for _, name := range sortedKeys(prop.Reduced) {
			if _, ok := index[name]; !ok {
				return nil, &Error{CodeUnknown, at + "/reduced_prior/" + cjson.EscapePointer(name), "no such parameter in the parent"}
			}
		}
		o.Accepted = o.DeltaF < -threshold
		out[k] = o
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ModelUncertaintyBonus is the largest posterior standard deviation of any
// component of a Dirichlet with counts a: sd_i = sqrt(a_i(a₀−a_i) / (a₀²(a₀+1))).
// It is an honest exploration heuristic over structural uncertainty and is
// reported only as a named augmentation beside the EFE core.
func ModelUncertaintyBonus(a []float64) float64 {
	a0 := 0.0
	for _, x := range a {
		a0 += x
	}
	if !(a0 > 0) {
		return 0
	}
	best := 0.0
	den := float64(float64(a0*a0) * (a0 + 1))
	for _, x := range a {
		v := float64(x*(a0-x)) / den
		if sd := math.Sqrt(v); sd > best {
			best = sd
		}
	}
	return best
}

// Record kinds.
const (
	ReportKind = "flrh.aif.reduction"
	ParentKind = "flrh.aif.reduction-parent"
)

// ParamRecord is a parameter in fixed point.
type ParamRecord struct {
	Name      string      `json:"name"`
	Prior     []fixed.Num `json:"prior"`
	Posterior []fixed.Num `json:"posterior"`
}

// ParentRecord is the frozen parent model, digested so the report binds it.
type ParentRecord struct {
	Kind       string        `json:"kind"`
	Version    int64         `json:"version"`
	Scale      int64         `json:"scale"`
	Parameters []ParamRecord `json:"parameters"`
}

// ProposalRecord is one evaluated proposal.
type ProposalRecord struct {
	ID               string                 `json:"id"`
	ReducedPrior     map[string][]fixed.Num `json:"reduced_prior"`
	DeltaF           fixed.Num              `json:"delta_f"`
	Decision         string                 `json:"decision"` // "accepted" or "rejected"
	ReducedPosterior map[string][]fixed.Num `json:"reduced_posterior"`
}

// Report is the persisted reduction: parent, digest, threshold, proposals.
type Report struct {
	Kind         string           `json:"kind"`
	Version      int64            `json:"version"`
	Scale        int64            `json:"scale"`
	Parent       ParentRecord     `json:"parent"`
	ParentDigest string           `json:"parent_digest"`
	Threshold    fixed.Num        `json:"threshold"`
	Proposals    []ProposalRecord `json:"proposals"`
}

func nums(v []float64) []fixed.Num {
	out := make([]fixed.Num, len(v))
	for i, x := range v {
		out[i], _ = fixed.MustFloat(x)
	}
	return out
}

// BuildReport evaluates the proposals and returns the canonical report.
func BuildReport(parent []Parameter, proposals []Proposal, threshold float64) (Report, []Outcome, error) {
	outs, err := Evaluate(parent, proposals, threshold)
	if err != nil {
		return Report{}, nil, err
	}
	pr := ParentRecord{Kind: ParentKind, Version: 1, Scale: fixed.Scale}
	for _, p := range parent {
		pr.Parameters = append(pr.Parameters, ParamRecord{p.Name, nums(p.Prior), nums(p.Posterior)})
	}
	d, err := cjson.DigestOf(pr)
	if err != nil {
		return Report{}, nil, err
	}
	th, _ := fixed.MustFloat(threshold)
	rep := Report{Kind: ReportKind, Version: 1, Scale: fixed.Scale, Parent: pr, ParentDigest: d, Threshold: th}
	for k, o := range outs {
		rec := ProposalRecord{ID: o.ID, ReducedPrior: map[string][]fixed.Num{}, ReducedPosterior: map[string][]fixed.Num{}, Decision: "rejected"}
		for _, name := range sortedKeys(proposals[k].Reduced) {
			rec.ReducedPrior[name] = nums(proposals[k].Reduced[name])
		}
		for _, name := range sortedKeys(o.ReducedPosterior) {
			rec.ReducedPosterior[name] = nums(o.ReducedPosterior[name])
		}
		rec.DeltaF, _ = fixed.MustFloat(o.DeltaF)
		if o.Accepted {
			rec.Decision = "accepted"
		}
		rep.Proposals = append(rep.Proposals, rec)
	}
	return rep, outs, nil
}
