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
	q     [][]float64
	terms StepTerms
	kids  []int32     // child node per joint action, when the action space is small
	more  map[int]int // otherwise
}

// denseChildren is the largest joint action space whose children are kept
// in a slice rather than a map.
const denseChildren = 256

// EvaluatePolicies scores every policy of the model from the current
// posterior q (one marginal per factor).
func (m *Model) EvaluatePolicies(q [][]float64) []PolicyScore {
	return m.scorePolicies(q, m.Policies)
}

// CheckPolicy verifies that a policy names one existing action per factor
// at every step, and that q is one distribution per factor of the right
// size.
func (m *Model) CheckPolicy(q [][]float64, pol [][]int) error {
	if len(q) != len(m.Factors) {
		return errf(CodeShape, "/belief", "want %d factors, have %d", len(m.Factors), len(q))
	}
	for f, qf := range q {
		if len(qf) != len(m.Factors[f].States) {
			return errf(CodeShape, ptr("belief", f), "want %d states, have %d", len(m.Factors[f].States), len(qf))
		}
	}
	if len(pol) == 0 || len(pol) > MaxHorizon {
		return errf(CodePolicy, "", "a policy has 1..%d steps", MaxHorizon)
	}
	for t, step := range pol {
		if len(step) != len(m.Factors) {
			return errf(CodePolicy, ptr(t), "want one action per factor (%d), have %d", len(m.Factors), len(step))
		}
		for f, a := range step {
			if a < 0 || a >= len(m.Factors[f].Actions) {
				return errf(CodePolicy, ptr(t, f), "factor %s has no action %d", m.Factors[f].Name, a)
			}
		}
	}
	return nil
}

// ScorePolicies scores arbitrary policies (each [t][f] actions) from the
// belief q, after checking them. Shared prefixes are evaluated once.
func (m *Model) ScorePolicies(q [][]float64, policies [][][]int) ([]PolicyScore, error) {
	if len(policies) > MaxPolicies {
		return nil, errf(CodeLimit, "", "more than %d policies", MaxPolicies)
	}
	for p, pol := range policies {
		if err := m.CheckPolicy(q, pol); err != nil {
			err.(*Error).Pointer = ptr(p) + err.(*Error).Pointer
			return nil, err
		}
	}
	return m.scorePolicies(q, policies), nil
}

func (m *Model) scorePolicies(q [][]float64, policies [][][]int) []PolicyScore {
	radix := make([]int, len(m.Factors))
	for f := range m.Factors {
		radix[f] = len(m.Factors[f].Actions)
	}
	tuples := 1
	for _, r := range radix {
		tuples *= r
	}
	newNode := func(q [][]float64, terms StepTerms) node {
		if tuples <= denseChildren {
			return node{q: q, terms: terms, kids: make([]int32, tuples)}
		}
		return node{q: q, terms: terms, more: map[int]int{}}
	}
	nodes := []node{newNode(q, StepTerms{})}
	sc := m.newScratch()
	out := make([]PolicyScore, len(policies))
	nsteps := 0
	for _, pol := range policies {
		nsteps += len(pol)
	}
	stepBuf := make([]StepTerms, nsteps)
	for p, pol := range policies {
		cur := 0
		score := PolicyScore{Policy: p, Steps: stepBuf[:len(pol):len(pol)]}
		stepBuf = stepBuf[len(pol):]
		w := 1.0
		for t, acts := range pol {
			key := 0
			for f, a := range acts {
				key = key*radix[f] + a
			}
			var next int
			var ok bool
			if nodes[cur].kids != nil {
				next = int(nodes[cur].kids[key])
				ok = next != 0 // node 0 is the root, never a child
			} else {
				next, ok = nodes[cur].more[key]
			}
			if !ok {
				nq := sc.predict(m, nodes[cur].q, acts)
				nodes = append(nodes, newNode(nq, m.stepTerms(nq, sc)))
				next = len(nodes) - 1
				if nodes[cur].kids != nil {
					nodes[cur].kids[key] = int32(next)
				} else {
					nodes[cur].more[key] = next
				}
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

// scratch holds buffers reused across the steps of one scoring call.
type scratch struct {
	pj      []float64
	support []int
	qo      [][]float64
	arena   []float64 // backing store for predicted beliefs
	chunk   int       // arena refill size
}

// predict is Predict with the result carved from the arena, so scoring a
// thousand cascades does not make a thousand small allocations.
func (sc *scratch) predict(m *Model, q [][]float64, actions []int) [][]float64 {
	out := make([][]float64, len(q))
	for f, qf := range q {
		if len(sc.arena) < len(qf) {
			sc.arena = make([]float64, max(len(qf), sc.chunk))
		}
		dst := sc.arena[:len(qf):len(qf)]
		sc.arena = sc.arena[len(qf):]
		out[f] = m.predictFactor(dst, qf, f, actions[f])
	}
	return out
}

func (m *Model) newScratch() *scratch {
	sc := &scratch{pj: make([]float64, m.joint), support: make([]int, 0, m.joint)}
	for _, f := range m.Factors {
		sc.chunk += 32 * len(f.States) // room for 32 predicted beliefs per refill
	}
	sc.chunk = min(sc.chunk, 1<<14)
	for _, mo := range m.Modalities {
		sc.qo = append(sc.qo, make([]float64, len(mo.Outcomes)))
	}
	return sc
}

// stepTerms computes the EFE terms of one predicted factorized belief.
func (m *Model) stepTerms(q [][]float64, sc *scratch) StepTerms {
	pj := sc.pj
	m.jointProduct(pj, q)
	support := sc.support[:0]
	for j, x := range pj {
		if x > 0 {
			support = append(support, j)
		}
	}
	var st StepTerms
	for mi := range m.Modalities {
		O := len(m.Modalities[mi].Outcomes)
		acol, ent, lnC := m.acol[mi], m.entropy[mi], m.lnC[mi]
		qo := sc.qo[mi]
		for o := range qo {
			qo[o] = 0
		}
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

// PolicyPosterior returns q(π) = softmax(−γ·G(π) + ln E(π)). The habit E
// belongs to the model's own policies; scores of any other policy list
// (from ScorePolicies) are combined under a uniform habit.
func (m *Model) PolicyPosterior(scores []PolicyScore) []float64 {
	own := len(scores) == len(m.Policies)
	v := make([]float64, len(scores))
	for i, s := range scores {
		v[i] = -float64(m.Gamma * s.G)
		if own && s.Policy >= 0 && s.Policy < len(m.lnE) {
			v[i] += m.lnE[s.Policy]
		}
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
		if p >= len(qpi) {
			break // a shorter posterior gives the missing policies no mass
		}
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
