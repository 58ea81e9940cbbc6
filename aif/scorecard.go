package aif

import (
	"math"
	"strings"

	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/internal/fmath"
)

// PolicyID names a policy by its actions: factors joined by "+", steps by
// " > ", e.g. "to-cue+stay" or "restart > observe".
func (m *Model) PolicyID(p int) string {
	var steps []string
	for _, st := range m.PolicyActions(p) {
		steps = append(steps, strings.Join(st, "+"))
	}
	return strings.Join(steps, " > ")
}

// Candidates turns policy scores into scorecard candidates: the core is the
// policy's risk and ambiguity (already discounted over its horizon), the
// per-step cores are kept, and the given augmentations (by policy index;
// may be nil) are attached under their own names.
func (m *Model) Candidates(scores []PolicyScore, aug map[int][]choice.Term) []choice.Candidate {
	out := make([]choice.Candidate, len(scores))
	for i, s := range scores {
		c := choice.Candidate{
			ID:            m.PolicyID(s.Policy),
			Core:          choice.Core{Risk: s.Risk, Ambiguity: s.Ambiguity},
			Augmentations: append([]choice.Term(nil), aug[s.Policy]...),
		}
		if len(s.Steps) > 1 {
			c.Discount = m.Discount
			for _, st := range s.Steps {
				c.Steps = append(c.Steps, choice.Core{Risk: st.Risk, Ambiguity: st.Ambiguity})
			}
		}
		out[i] = c
	}
	return out
}

// UncertaintyBonus is the model-uncertainty bonus of a policy: the
// δ-discounted expectation, over the states the policy is predicted to
// visit, of the largest posterior standard deviation of any learned
// likelihood column (pA), times weight and negated so that it lowers the
// total score. It measures spread in the model's parameters, not expected
// information gain, and is therefore only ever an augmentation named
// [choice.ModelUncertaintyBonus]; it is zero for a model without pA.
func (m *Model) UncertaintyBonus(q [][]float64, policy [][]int, weight float64) (choice.Term, error) {
	if err := m.CheckPolicy(q, policy); err != nil {
		return choice.Term{}, err
	}
	sd := make([]float64, m.joint)
	any := false
	J := m.joint
	for _, mo := range m.Modalities {
		if mo.PA == nil {
			continue
		}
		any = true
		O := len(mo.Outcomes)
		for j := 0; j < J; j++ {
			a0 := 0.0
			for o := 0; o < O; o++ {
				a0 += mo.PA[o*J+j]
			}
			if !(a0 > 0) {
				continue
			}
			den := float64(float64(a0*a0) * (a0 + 1))
			for o := 0; o < O; o++ {
				a := mo.PA[o*J+j]
				if s := math.Sqrt(float64(a*(a0-a)) / den); s > sd[j] {
					sd[j] = s
				}
			}
		}
	}
	term := choice.Term{Name: choice.ModelUncertaintyBonus}
	if !any {
		return term, nil
	}
	pj := make([]float64, J)
	w := 1.0
	total := 0.0
	for _, acts := range policy {
		q = m.predict(q, acts)
		m.jointProduct(pj, q)
		total += float64(w * fmath.Dot(pj, sd))
		w = float64(w * m.Discount)
	}
	term.Value = -float64(weight * total)
	return term, nil
}

// ParameterInfoGain is the expected information gain about the likelihood
// parameters (pA) along a policy — the "novelty" term of the active
// inference literature: at each step, with predicted states Q(s) and
// outcomes Q(o), the gain is Σ_o Q(o) Σ_s W(o, s) Q(s), where
// W(o, s) = ½ (1/a(o, s) − 1/Σ_o' a(o', s)) ≥ 0 for counts a > 0. It is a real
// expectation over the outcomes a policy would produce, and it earns its
// name; it is still reported as a named augmentation (value −weight × gain,
// δ-discounted), never folded into the risk-plus-ambiguity core. It is zero
// for a model without pA.
func (m *Model) ParameterInfoGain(q [][]float64, policy [][]int, weight float64) (choice.Term, error) {
	if err := m.CheckPolicy(q, policy); err != nil {
		return choice.Term{}, err
	}
	term := choice.Term{Name: choice.ParameterInfoGain}
	J := m.joint
	type novelty struct {
		mi int
		w  []float64 // [o*J + j]
	}
	var ws []novelty
	for mi, mo := range m.Modalities {
		if mo.PA == nil {
			continue
		}
		O := len(mo.Outcomes)
		w := make([]float64, O*J)
		for j := 0; j < J; j++ {
			a0 := 0.0
			for o := 0; o < O; o++ {
				a0 += mo.PA[o*J+j]
			}
			for o := 0; o < O; o++ {
				if a := mo.PA[o*J+j]; a > 0 {
					w[o*J+j] = float64(0.5 * (1/a - 1/a0))
				}
			}
		}
		ws = append(ws, novelty{mi, w})
	}
	if len(ws) == 0 {
		return term, nil
	}
	pj := make([]float64, J)
	disc := 1.0
	total := 0.0
	for _, acts := range policy {
		q = m.predict(q, acts)
		m.jointProduct(pj, q)
		gain := 0.0
		for _, nv := range ws {
			O := len(m.Modalities[nv.mi].Outcomes)
			acol := m.acol[nv.mi]
			for o := 0; o < O; o++ {
				qo, ws := 0.0, 0.0
				for j, p := range pj {
					if p == 0 {
						continue
					}
					qo += float64(acol[j*O+o] * p)
					ws += float64(nv.w[o*J+j] * p)
				}
				gain += float64(qo * ws)
			}
		}
		total += float64(disc * gain)
		disc = float64(disc * m.Discount)
	}
	term.Value = -float64(weight * total)
	return term, nil
}
