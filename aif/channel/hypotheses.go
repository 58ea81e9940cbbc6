package channel

import (
	"fmt"

	"flrh.dev/flrh/aif/fixed"
)

// Hypotheses is the belief state of R1: a compact map of operational
// hypotheses rather than a conversation history, so that predict → observe
// → update can be implemented and tested.
type Hypotheses struct {
	Goal     string
	Subgoals []string
	Blockers []string
	// PatternFit is how well the current pattern explains recent ticks, in
	// [0, 1]; it is the caller's estimate and is carried, not inferred here.
	PatternFit float64
	// Belief is the per-channel prior for the next observation.
	Belief Belief
	// ExpectedNext is the observation the belief predicts (its means): the
	// thing the next tick's prediction error is measured against.
	ExpectedNext []float64
}

// Observe runs one live tick of the channel loop: update the belief with the
// observation, then move it through the shared kernel under the action
// taken, which gives the prior and the expected observation for the next
// tick. The forward model (ScoreCascade) calls the same Predict.
func (c *Config) Observe(h Hypotheses, k Kernel, action string, o []float64) (Hypotheses, Tick, error) {
	if h.Goal == "" {
		return h, Tick{}, &Error{CodeConfig, "/goal", "a belief state names its goal"}
	}
	if !finite(h.PatternFit) || h.PatternFit < 0 || h.PatternFit > 1 {
		return h, Tick{}, &Error{CodeOutOfRange, "/pattern_fit", fmt.Sprintf("%v outside [0, 1]", h.PatternFit)}
	}
	tick, err := c.Update(h.Belief, o)
	if err != nil {
		return h, Tick{}, err
	}
	next, err := c.Predict(k, tick.Posterior, action)
	if err != nil {
		return h, Tick{}, err
	}
	out := Hypotheses{
		Goal:         h.Goal,
		Subgoals:     append([]string(nil), h.Subgoals...),
		Blockers:     append([]string(nil), h.Blockers...),
		PatternFit:   h.PatternFit,
		Belief:       next,
		ExpectedNext: append([]float64(nil), next.Mu...),
	}
	return out, tick, nil
}

// HypothesesRecord is the persisted belief state (fixed point at 1e9).
type HypothesesRecord struct {
	Kind         string      `json:"kind"`
	Version      int64       `json:"version"`
	Scale        int64       `json:"scale"`
	Goal         string      `json:"goal"`
	Subgoals     []string    `json:"subgoals"`
	Blockers     []string    `json:"blockers"`
	PatternFit   fixed.Num   `json:"pattern_fit"`
	Channels     []string    `json:"channels"`
	ExpectedNext []fixed.Num `json:"expected_next_observation"`
	Uncertainty  []fixed.Num `json:"uncertainty"`
}

// RecordHypotheses returns the canonical form of a belief state.
func (c *Config) RecordHypotheses(h Hypotheses) HypothesesRecord {
	names := make([]string, len(c.Channels))
	for i, s := range c.Channels {
		names[i] = s.Name
	}
	pf, _ := fixed.MustFloat(h.PatternFit)
	return HypothesesRecord{
		Kind: "flrh.aif.belief-state", Version: 1, Scale: fixed.Scale,
		Goal: h.Goal, Subgoals: append([]string{}, h.Subgoals...), Blockers: append([]string{}, h.Blockers...),
		PatternFit: pf, Channels: names, ExpectedNext: nums(h.ExpectedNext), Uncertainty: nums(h.Belief.V),
	}
}
