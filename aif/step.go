package aif

import (
	"flrh.dev/flrh/aif/fixed"
)

// StepResult is everything one tick of the discrete controller computes.
type StepResult struct {
	Posterior Posterior
	Scores    []PolicyScore // one per model policy, in policy order
	QPi       []float64     // policy posterior
	Marginals [][]float64   // first-step action marginals per factor
	Action    []int         // chosen action per factor
	NextPrior [][]float64   // Predict(Posterior.Q, Action): the next tick's prior
}

// Step runs one perception–action cycle: infer the hidden states from the
// observation under the prior, score every policy, form the policy
// posterior, choose an action, and predict the next prior with the same
// transition kernel the forward model used. It is pure: the prior goes in,
// the next prior comes out.
func (m *Model) Step(prior [][]float64, obs []int, mode SelectMode, eventDigest string) (StepResult, error) {
	post, err := m.Infer(prior, obs)
	if err != nil {
		return StepResult{}, err
	}
	scores := m.EvaluatePolicies(post.Q)
	qpi := m.PolicyPosterior(scores)
	marg := m.ActionMarginals(qpi)
	act := SelectAction(marg, mode, eventDigest)
	return StepResult{
		Posterior: post,
		Scores:    scores,
		QPi:       qpi,
		Marginals: marg,
		Action:    act,
		NextPrior: m.predict(post.Q, act),
	}, nil
}

// Record kinds and version. Every real quantity in a record is a fixed.Num
// (an int64 count of 1e-9), so records are canonical JSON.
const (
	StepRecordKind = "flrh.aif.step"
	RecordVersion  = 1
)

// StepRecord is the persisted form of a StepResult.
type StepRecord struct {
	Kind        string         `json:"kind"`
	Version     int64          `json:"version"`
	Scale       int64          `json:"scale"`
	Tick        int64          `json:"tick"`
	EventDigest string         `json:"event_digest"`
	Observation []string       `json:"observation"`
	Belief      [][]fixed.Num  `json:"belief"`
	FreeEnergy  fixed.Num      `json:"free_energy"`
	Complexity  fixed.Num      `json:"complexity"`
	Accuracy    fixed.Num      `json:"accuracy"`
	Degenerate  string         `json:"degenerate,omitempty"`
	Policies    []PolicyRecord `json:"policies"`
	Selection   SelectMode     `json:"selection"`
	Action      []string       `json:"action"`
	// Saturated is true when some value did not fit the fixed-point range
	// and was clamped; such a record is flagged, never silently wrong.
	Saturated bool `json:"saturated,omitempty"`
}

// PolicyRecord is one policy's scorecard row: the EFE core (risk,
// ambiguity, their sum), the two named views, and its posterior mass.
type PolicyRecord struct {
	Actions     [][]string `json:"actions"`
	Risk        fixed.Num  `json:"risk"`
	Ambiguity   fixed.Num  `json:"ambiguity"`
	EFE         fixed.Num  `json:"efe"`
	Utility     fixed.Num  `json:"utility_view"`
	InfoGain    fixed.Num  `json:"info_gain_view"`
	Probability fixed.Num  `json:"probability"`
}

type numConv struct{ saturated bool }

func (c *numConv) num(x float64) fixed.Num {
	n, sat := fixed.MustFloat(x)
	c.saturated = c.saturated || sat
	return n
}

func (c *numConv) vec(v []float64) []fixed.Num {
	out := make([]fixed.Num, len(v))
	for i, x := range v {
		out[i] = c.num(x)
	}
	return out
}

// PolicyActions names the actions of policy p, step by step.
func (m *Model) PolicyActions(p int) [][]string {
	pol := m.Policies[p]
	out := make([][]string, len(pol))
	for t, step := range pol {
		for f, a := range step {
			out[t] = append(out[t], m.Factors[f].Actions[a])
		}
	}
	return out
}

// Record converts a step result to its canonical, fixed-point form.
func (m *Model) Record(tick int, obs []int, eventDigest string, mode SelectMode, r StepResult) StepRecord {
	var c numConv
	rec := StepRecord{
		Kind:        StepRecordKind,
		Version:     RecordVersion,
		Scale:       fixed.Scale,
		Tick:        int64(tick),
		EventDigest: eventDigest,
		Degenerate:  r.Posterior.Degenerate,
		Selection:   mode,
	}
	for i, o := range obs {
		rec.Observation = append(rec.Observation, m.Modalities[i].Outcomes[o])
	}
	for _, q := range r.Posterior.Q {
		rec.Belief = append(rec.Belief, c.vec(q))
	}
	if r.Posterior.Degenerate == "" {
		rec.FreeEnergy = c.num(r.Posterior.FreeEnergy)
		rec.Complexity = c.num(r.Posterior.Complexity)
		rec.Accuracy = c.num(r.Posterior.Accuracy)
	}
	for i, s := range r.Scores {
		rec.Policies = append(rec.Policies, PolicyRecord{
			Actions:     m.PolicyActions(s.Policy),
			Risk:        c.num(s.Risk),
			Ambiguity:   c.num(s.Ambiguity),
			EFE:         c.num(s.G),
			Utility:     c.num(s.Utility),
			InfoGain:    c.num(s.InfoGain),
			Probability: c.num(r.QPi[i]),
		})
	}
	for f, a := range r.Action {
		rec.Action = append(rec.Action, m.Factors[f].Actions[a])
	}
	rec.Saturated = c.saturated
	return rec
}
