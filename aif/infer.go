package aif

import (
	"math"

	"flrh.dev/flrh/aif/internal/fmath"
)

// Inference settings for the mean-field fixed-point iteration.
const (
	maxIterations = 32
	fpTolerance   = 1e-12
)

// Degeneracy reasons. A degenerate posterior is never propagated: the belief
// is reset to the prior and the reason is recorded beside it.
const (
	DegenerateImpossible = "OBSERVATION_IMPOSSIBLE" // no state with prior mass can emit the observation
	DegenerateNumeric    = "NUMERIC"                // the update produced NaN, Inf or a zero mass
)

// Posterior is the result of state inference for one observation.
type Posterior struct {
	// Q[f] is the marginal posterior over factor f's states.
	Q [][]float64
	// FreeEnergy is the variational free energy of Q for this observation
	// (complexity minus accuracy), one number per tick.
	FreeEnergy float64
	Complexity float64 // Σ_f KL[Q_f ‖ prior_f]
	Accuracy   float64 // E_Q[ln P(o | s)]
	Iterations int
	// Degenerate is empty for a sound posterior; otherwise Q is the prior
	// and this names why.
	Degenerate string
}

// CheckObservation verifies one outcome index per modality.
func (m *Model) CheckObservation(obs []int) error {
	if len(obs) != len(m.Modalities) {
		return errf(CodeObservation, "", "want one outcome per modality (%d), have %d", len(m.Modalities), len(obs))
	}
	for i, o := range obs {
		if o < 0 || o >= len(m.Modalities[i].Outcomes) {
			return errf(CodeObservation, ptr(i), "modality %s has no outcome %d", m.Modalities[i].Name, o)
		}
	}
	return nil
}

// jointProduct writes Π_f q_f(s_f) for every joint state into dst, built
// factor by factor (a Kronecker product in row-major order, factor 0
// slowest). The multiplication order per entry is f = 0, 1, ..., so the
// bits do not depend on how the product is laid out.
func (m *Model) jointProduct(dst []float64, q [][]float64) {
	if len(q) == 1 {
		copy(dst, q[0])
		return
	}
	n := 1
	dst[0] = 1
	for _, qf := range q {
		S := len(qf)
		// Expand in place from the back so entries are read before overwritten.
		for i := n - 1; i >= 0; i-- {
			base := dst[i]
			for s := S - 1; s >= 0; s-- {
				dst[i*S+s] = float64(base * qf[s])
			}
		}
		n *= S
	}
}

// Infer computes the posterior over hidden states given a prior (one
// distribution per factor) and an observation (one outcome per modality).
// With one factor the update is exact Bayes; with several it is the
// mean-field fixed point of the literature, iterated to 1e-12 or 32 rounds.
func (m *Model) Infer(prior [][]float64, obs []int) (Posterior, error) {
	if err := m.CheckObservation(obs); err != nil {
		return Posterior{}, err
	}
	if len(prior) != len(m.Factors) {
		return Posterior{}, errf(CodeShape, "/prior", "want %d factors, have %d", len(m.Factors), len(prior))
	}
	for f, p := range prior {
		if len(p) != len(m.Factors[f].States) {
			return Posterior{}, errf(CodeShape, ptr("prior", f), "want %d states, have %d", len(m.Factors[f].States), len(p))
		}
		for s, x := range p {
			if !finite(x) || x < 0 {
				return Posterior{}, errf(CodeNotFinite, ptr("prior", f, s), "%v", x)
			}
		}
	}
	J := m.joint
	// Joint log-likelihood of the observation, and whether any state with
	// prior mass can produce it at all.
	L := make([]float64, J)
	pj := make([]float64, J)
	m.jointProduct(pj, prior)
	possible := false
	for j := 0; j < J; j++ {
		l := 0.0
		ok := true
		for mi, o := range obs {
			l += m.lnA[mi][o*J+j]
			if m.acol[mi][j*len(m.Modalities[mi].Outcomes)+o] == 0 {
				ok = false
			}
		}
		L[j] = l
		if ok && pj[j] > 0 {
			possible = true
		}
	}
	lnPrior := make([][]float64, len(prior))
	for f, p := range prior {
		lnPrior[f] = logVec(p)
	}
	reset := func(reason string) Posterior {
		q := make([][]float64, len(prior))
		for f, p := range prior {
			q[f] = normalizedCopy(p)
		}
		return Posterior{Q: q, Degenerate: reason, FreeEnergy: math.NaN()}
	}
	if !possible {
		r := reset(DegenerateImpossible)
		r.FreeEnergy = 0
		return r, nil
	}

	q := make([][]float64, len(prior))
	for f, p := range prior {
		q[f] = normalizedCopy(p)
	}
	iters := 0
	if len(m.Factors) == 1 {
		v := make([]float64, J)
		for j := range v {
			v[j] = lnPrior[0][j] + L[j]
		}
		q[0] = fmath.Softmax(nil, v)
		iters = 1
	} else {
		for iters < maxIterations {
			iters++
			delta := 0.0
			for f := range m.Factors {
				S := len(m.Factors[f].States)
				el := make([]float64, S)
				for j := 0; j < J; j++ {
					w := 1.0
					for g := range m.Factors {
						if g != f {
							w = float64(w * q[g][(j/m.stride[g])%len(q[g])])
						}
					}
					el[(j/m.stride[f])%S] += float64(w * L[j])
				}
				for s := range el {
					el[s] += lnPrior[f][s]
				}
				nq := fmath.Softmax(nil, el)
				for s := range nq {
					delta = math.Max(delta, math.Abs(nq[s]-q[f][s]))
				}
				q[f] = nq
			}
			if delta < fpTolerance {
				break
			}
		}
	}
	for _, qf := range q {
		sum := 0.0
		for _, x := range qf {
			if !finite(x) {
				return reset(DegenerateNumeric), nil
			}
			sum += x
		}
		if !(sum > 0) {
			return reset(DegenerateNumeric), nil
		}
	}
	post := Posterior{Q: q, Iterations: iters}
	for f, qf := range q {
		for s, x := range qf {
			if x > 0 {
				post.Complexity += float64(x * (fmath.Log(x+logEps) - lnPrior[f][s]))
			}
		}
	}
	m.jointProduct(pj, q)
	post.Accuracy = fmath.Dot(pj, L)
	post.FreeEnergy = post.Complexity - post.Accuracy
	if !finite(post.FreeEnergy) {
		return reset(DegenerateNumeric), nil
	}
	return post, nil
}

func normalizedCopy(p []float64) []float64 {
	out := make([]float64, len(p))
	sum := 0.0
	for _, x := range p {
		sum += x
	}
	for i, x := range p {
		if sum > 0 {
			out[i] = x / sum
		} else {
			out[i] = 1 / float64(len(p))
		}
	}
	return out
}

// Predict propagates a factorized belief one step through the transition
// model under one action per factor: Q'(s'_f) = Σ_s B_f(s' | s, a_f) Q(s_f).
// It is the only implementation of the dynamics; the live loop (the prior
// for the next tick) and the forward model (policy evaluation) both use it.
func (m *Model) Predict(q [][]float64, actions []int) ([][]float64, error) {
	if err := m.CheckPolicy(q, [][]int{actions}); err != nil {
		return nil, err
	}
	return m.predict(q, actions), nil
}

func (m *Model) predict(q [][]float64, actions []int) [][]float64 {
	out := make([][]float64, len(q))
	for f, qf := range q {
		out[f] = m.predictFactor(make([]float64, len(qf)), qf, f, actions[f])
	}
	return out
}

func (m *Model) predictFactor(dst, qf []float64, f, a int) []float64 {
	S := len(qf)
	for i := range dst {
		dst[i] = 0
	}
	cols := m.trans[f][a*S : (a+1)*S]
	for prev, w := range qf {
		if w == 0 {
			continue
		}
		c := cols[prev]
		for k, n := range c.next {
			dst[n] += float64(c.p[k] * w)
		}
	}
	return dst
}

// Prior returns the model's initial prior D, one distribution per factor.
func (m *Model) Prior() [][]float64 {
	out := make([][]float64, len(m.Factors))
	for f := range m.Factors {
		out[f] = append([]float64(nil), m.Factors[f].D...)
	}
	return out
}
