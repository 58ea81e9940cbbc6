package aif

import (
	"flrh.dev/flrh/aif/internal/draw"
	"flrh.dev/flrh/aif/internal/fmath"
)

// StepTerms are the expected-free-energy terms of one step of a policy,
// summed over modalities and undiscounted.
type StepTerms struct {
	Risk      float64 // Σ_m KL[Q(o_m | π) ‖ C_m]
	Ambiguity float64 // Σ_m E_{Q(s | π)} H[P(o_m | s)]
	Utility   float64 // Σ_m E_{Q(o_m | π)} ln C_m
	InfoGain  float64 // Σ_m (H[Q(o_m | π)] − ambiguity_m)
}

// PolicyScore is the expected free energy of one policy (a cascade of
// actions) over its whole horizon.
//
// The canonical core is G = Risk + Ambiguity, each the δ-discounted sum over
// steps. Utility and InfoGain are the same quantity seen the other way round:
// G = −(Utility + InfoGain) holds exactly in real arithmetic and to rounding
// in floating point. Nothing else is called expected free energy.
type PolicyScore struct {
	Policy    int
	Risk      float64
	Ambiguity float64
	G         float64
	Utility   float64
	InfoGain  float64
	Steps     []StepTerms
}

// node is one prefix of the policy tree: the belief after the prefix and the
// terms of its last step. Policies that share a prefix share its work.
type node struct {
	q        [][]float64
	terms    StepTerms
	children map[int]int
}

// EvaluatePolicies scores every policy of the model from the current
// posterior q (one marginal per factor).
func (m *Model) EvaluatePolicies(q [][]float64) []PolicyScore {
	return m.ScorePolicies(q, m.Policies)
}

// ScorePolicies scores arbitrary policies (each [t][f] actions, validated by
// the caller against the model's action counts) from the belief q. Shared
// prefixes are evaluated once.
func (m *Model) ScorePolicies(q [][]float64, policies [][][]int) []PolicyScore {
	radix := make([]int, len(m.Factors))
	for f := range m.Factors {
		radix[f] = len(m.Factors[f].Actions)
	}
	nodes := []node{{q: q, children: map[int]int{}}}
	pj := make([]float64, m.joint)
	support := make([]int, 0, m.joint)
	out := make([]PolicyScore, len(policies))
	for p, pol := range policies {
		cur := 0
		score := PolicyScore{Policy: p, Steps: make([]StepTerms, len(pol))}
		w := 1.0
		for t, acts := range pol {
			key := 0
			for f, a := range acts {
				key = key*radix[f] + a
			}
			next, ok := nodes[cur].children[key]
			if !ok {
				nq := m.Predict(nodes[cur].q, acts)
				terms := m.stepTerms(nq, pj, support)
				nodes = append(nodes, node{q: nq, terms: terms, children: map[int]int{}})
				next = len(nodes) - 1
				nodes[cur].children[key] = next
			}
			cur = next
			st := nodes[cur].terms
			score.Steps[t] = st
			score.Risk += float64(w * st.Risk)
			score.Ambiguity += float64(w * st.Ambiguity)
			score.Utility += float64(w * st.Utility)
			score.InfoGain += float64(w * st.InfoGain)
			w = float64(w * m.Discount)
		}
		score.G = score.Risk + score.Ambiguity
		out[p] = score
	}
	return out
}

// stepTerms computes the EFE terms of one predicted factorized belief.
func (m *Model) stepTerms(q [][]float64, pj []float64, support []int) StepTerms {
	m.jointProduct(pj, q)
	support = support[:0]
	for j, x := range pj {
		if x > 0 {
			support = append(support, j)
		}
	}
	var st StepTerms
	for mi := range m.Modalities {
		O := len(m.Modalities[mi].Outcomes)
		acol, ent, lnC := m.acol[mi], m.entropy[mi], m.lnC[mi]
		qo := make([]float64, O)
		amb := 0.0
		for _, j := range support {
			w := pj[j]
			col := acol[j*O : (j+1)*O]
			for o, a := range col {
				qo[o] += float64(w * a)
			}
			amb += float64(w * ent[j])
		}
		negH, util := 0.0, 0.0
		for o, x := range qo {
			if x > 0 {
				negH += float64(x * fmath.Log(x))
				util += float64(x * lnC[o])
			}
		}
		st.Risk += negH - util
		st.Ambiguity += amb
		st.Utility += util
		st.InfoGain += -negH - amb
	}
	return st
}

// PolicyPosterior returns q(π) = softmax(−γ·G(π) + ln E(π)).
func (m *Model) PolicyPosterior(scores []PolicyScore) []float64 {
	v := make([]float64, len(scores))
	for i, s := range scores {
		v[i] = -float64(m.Gamma*s.G) + m.lnE[s.Policy]
	}
	return fmath.Softmax(nil, v)
}

// ActionMarginals returns, per factor, the posterior probability of each of
// its actions at the first step: the summed probability of the policies
// that begin with it.
func (m *Model) ActionMarginals(qpi []float64) [][]float64 {
	out := make([][]float64, len(m.Factors))
	for f := range m.Factors {
		out[f] = make([]float64, len(m.Factors[f].Actions))
	}
	for p, pol := range m.Policies {
		for f, a := range pol[0] {
			out[f][a] += qpi[p]
		}
	}
	return out
}

// SelectMode chooses how an action is drawn from the action marginals.
type SelectMode string

// Selection modes.
const (
	// SelectArgmax takes, per factor, the most probable action (lowest index
	// on an exact tie).
	SelectArgmax SelectMode = "argmax"
	// SelectSample draws each factor's action from its marginal with a
	// SplitMix64 stream seeded from the triggering event's digest.
	SelectSample SelectMode = "sample"
)

// SelectDomain separates selection draws from any other use of a digest.
const SelectDomain = "flrh-aif-select/1"

// SelectAction picks one action per factor. eventDigest seeds sampling and
// is ignored by argmax.
func SelectAction(marginals [][]float64, mode SelectMode, eventDigest string) []int {
	out := make([]int, len(marginals))
	var src *draw.Source
	if mode == SelectSample {
		src = draw.New(SelectDomain, eventDigest)
	}
	for f, p := range marginals {
		if src != nil {
			if i := src.Categorical(p); i >= 0 {
				out[f] = i
				continue
			}
		}
		best := 0
		for a, x := range p {
			if x > p[best] {
				best = a
			}
		}
		out[f] = best
	}
	return out
}
