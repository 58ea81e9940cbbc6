package channel

import (
	"math"
	"strings"

	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/cjson"
)

// Input is one tick's input: a raw observation per channel and the time
// pressure in [0, 1] the caller reports.
type Input struct {
	Observe      map[string]float64
	TimePressure float64
}

// Record kinds of the channel run loop.
const (
	StepKind    = "flrh.aif.channel-step"
	RunKind     = "flrh.aif.channel-run"
	TickEvent   = "flrh.aif.channel-event"
	regressWin  = 5   // ticks looked back for free-energy regressions
	surpriseSDs = 3.0 // a miss beyond this many standard deviations is a contradiction
)

// DiagnosticsRecord is what the temperature dial read, in fixed point.
type DiagnosticsRecord struct {
	RecentRegressions int64     `json:"recent_regressions"`
	BeliefUncertainty fixed.Num `json:"belief_uncertainty"`
	ContradictionRate fixed.Num `json:"contradiction_rate"`
	TimePressure      fixed.Num `json:"time_pressure"`
}

// StepRecord is one tick of the channel loop.
type StepRecord struct {
	Kind        string            `json:"kind"`
	Version     int64             `json:"version"`
	Tick        int64             `json:"tick"`
	EventDigest string            `json:"event_digest"`
	Update      TickRecord        `json:"update"`
	Diagnostics DiagnosticsRecord `json:"diagnostics"`
	Scorecard   choice.Scorecard  `json:"scorecard"`
	Action      string            `json:"action"`
	Belief      HypothesesRecord  `json:"next_belief"`
}

// RunRecord is a whole channel run.
type RunRecord struct {
	Kind        string       `json:"kind"`
	Version     int64        `json:"version"`
	ModelDigest string       `json:"model_digest"`
	Steps       []StepRecord `json:"steps"`
}

// Run drives the channel loop over the inputs: update the belief with each
// observation (free energy per tick), read the diagnostics, set the
// temperature, score every cascade with the shared kernel, select (or
// abstain, which takes the do-nothing action), and predict the next prior
// with the same kernel. It is pure; sampled choices are seeded from a digest
// of the model, the tick and the observation.
func Run(doc *Document, modelDigest string, inputs []Input) (RunRecord, error) {
	c := doc.Config
	rec := RunRecord{Kind: RunKind, Version: 1, ModelDigest: modelDigest, Steps: []StepRecord{}}
	h := doc.Start
	var history []float64
	for t, in := range inputs {
		o, err := c.Normalize(in.Observe)
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.Pointer = "/" + itoa(t) + "/observe" + e.Pointer
			}
			return rec, err
		}
		if math.IsNaN(in.TimePressure) || in.TimePressure < 0 || in.TimePressure > 1 {
			return rec, &Error{CodeOutOfRange, "/" + itoa(t) + "/time_pressure", "must be in [0, 1]"}
		}
		tick, err := c.Update(h.Belief, o)
		if err != nil {
			return rec, err
		}
		diag := c.diagnostics(tick, history, in.TimePressure)
		history = append(history, tick.FreeEnergy)
		tau := 0.0
		if doc.Dial != (choice.Dial{}) {
			if tau, err = doc.Dial.Temperature(diag); err != nil {
				return rec, err
			}
		}
		var cands []choice.Candidate
		for _, cas := range doc.Cascades {
			cand, err := c.cascadeCandidate(doc, tick.Posterior, cas)
			if err != nil {
				return rec, err
			}
			cands = append(cands, cand)
		}
		nothing, err := c.cascadeCandidate(doc, tick.Posterior, doc.Nothing)
		if err != nil {
			return rec, err
		}
		nothing.ID = "do-nothing"
		digest, err := cjson.DigestOf(map[string]any{"kind": TickEvent, "model_digest": modelDigest, "tick": int64(t + 1), "observation": nums(o)})
		if err != nil {
			return rec, err
		}
		req := choice.Request{Candidates: cands, Nothing: nothing, Margin: doc.Margin, Temperature: tau, EventDigest: digest}
		d, err := choice.Select(req)
		if err != nil {
			return rec, err
		}
		action := doc.Nothing[0]
		if d.Pick != "" {
			action = strings.SplitN(d.Pick, " > ", 2)[0]
		}
		next, err := c.Predict(doc.Kernel, tick.Posterior, action)
		if err != nil {
			return rec, err
		}
		h = Hypotheses{Goal: h.Goal, Subgoals: h.Subgoals, Blockers: h.Blockers, PatternFit: h.PatternFit, Belief: next, ExpectedNext: append([]float64(nil), next.Mu...)}
		rec.Steps = append(rec.Steps, StepRecord{
			Kind: StepKind, Version: 1, Tick: int64(t + 1), EventDigest: digest,
			Update: c.Record(tick),
			Diagnostics: DiagnosticsRecord{int64(diag.RecentRegressions), num(diag.BeliefUncertainty),
				num(diag.ContradictionRate), num(diag.TimePressure)},
			Scorecard: choice.Record(req, d, nil),
			Action:    action,
			Belief:    c.RecordHypotheses(h),
		})
	}
	return rec, nil
}

func (c *Config) cascadeCandidate(doc *Document, b Belief, cas []string) (choice.Candidate, error) {
	_, steps, err := c.ScoreCascade(doc.Kernel, b, cas, doc.Discount)
	if err != nil {
		return choice.Candidate{}, err
	}
	cs := make([]choice.Core, len(steps))
	for i, s := range steps {
		cs[i] = choice.Core{Risk: s.Risk, Ambiguity: s.Ambiguity}
	}
	return choice.Cascade(strings.Join(cas, " > "), cs, doc.Discount)
}

// diagnostics derives the dial's inputs from the tick: regressions are the
// ticks among the last few whose free energy rose over the one before;
// belief uncertainty is the mean uncertainty relative to that of a uniform
// belief on [0, 1] (1/12), capped at 1; the contradiction rate is the share
// of channels whose miss exceeds three standard deviations.
func (c *Config) diagnostics(t Tick, history []float64, pressure float64) choice.Diagnostics {
	var d choice.Diagnostics
	all := append(append([]float64(nil), history...), t.FreeEnergy)
	for i := max(1, len(all)-regressWin); i < len(all); i++ {
		if all[i] > all[i-1] {
			d.RecentRegressions++
		}
	}
	meanV, contra := 0.0, 0
	for i, v := range t.Posterior.V {
		meanV += v
		if math.Abs(t.Errors[i]) > surpriseSDs*math.Sqrt(t.Prior.V[i]) {
			contra++
		}
	}
	meanV /= float64(len(t.Posterior.V))
	d.BeliefUncertainty = math.Min(1, meanV*12)
	d.ContradictionRate = float64(contra) / float64(len(t.Errors))
	d.TimePressure = pressure
	return d
}

func num(x float64) fixed.Num {
	n, _ := fixed.MustFloat(x)
	return n
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
