package aif

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"flrh.dev/flrh/aif/internal/fmath"
)

// Limits bound the size of a model so that a hostile file cannot exhaust
// memory. They are generous for the models the controller is meant for.
const (
	MaxJointStates = 1 << 16 // product of all factor sizes
	MaxOutcomes    = 1 << 12 // outcomes of one modality
	MaxPolicies    = 1 << 16
	MaxHorizon     = 16
	MaxTensor      = 1 << 24 // entries of one A or B tensor
	// MaxWork bounds policies × horizon × joint states: the number of belief
	// entries one scoring pass may have to hold.
	MaxWork = 1 << 26
)

// normTolerance is how far a distribution may sum from 1 before it is
// refused; within it the distribution is renormalized exactly.
const normTolerance = 1e-6

// logEps is added before taking a logarithm of a probability, as the
// literature's reference code does, so that ln 0 is a large finite penalty
// rather than -Inf.
const logEps = 1e-16

// Factor is one hidden-state factor with its transition model.
type Factor struct {
	Name    string
	States  []string
	Actions []string // control states; a factor with one action is uncontrolled
	// B holds P(next | prev, action) as B[(next*S + prev)*U + action], the
	// [next][prev][action] layout of the literature.
	B []float64
	// D is the prior over the initial state.
	D []float64
	// PB optionally holds Dirichlet counts over B, same layout; when present,
	// [Model.LearnB] updates it and B is its normalized mean.
	PB []float64
}

// Modality is one observation channel with its likelihood and preferences.
type Modality struct {
	Name     string
	Outcomes []string
	// A holds P(outcome | joint state) as A[o*J + j], where j is the joint
	// state index in row-major order over the factors (factor 0 slowest):
	// the [outcome][s0][s1]... layout of the literature, flattened.
	A []float64
	// C holds log-preferences over outcomes (any real numbers); they are
	// normalized to a log-distribution with log-softmax before use.
	C []float64
	// PA optionally holds Dirichlet counts over A, same layout.
	PA []float64
}

// Model is a discrete POMDP generative model in the standard A, B, C, D, E
// form. Build one with [Decode] or by filling the fields and calling
// [Model.Validate]; a Model is read-only after validation.
type Model struct {
	Factors    []Factor
	Modalities []Modality
	// Policies[p][t][f] is the action of factor f at step t of policy p.
	Policies [][][]int
	// E is the habit: a prior over policies (nil means uniform).
	E []float64
	// Gamma is the policy precision γ in q(π) = softmax(-γG + ln E).
	Gamma float64
	// Discount is the temporal discount δ ∈ (0, 1]: step t of a policy
	// (counting from 0) contributes δ^t of its risk and ambiguity.
	Discount float64
	// LearningRate scales Dirichlet updates (pymdp's lr); 0 disables learning.
	LearningRate float64

	// Derived by Validate.
	joint   int
	stride  []int         // joint index stride per factor
	acol    [][]float64   // acol[m][j*O + o] = A[m][o*J + j], columns contiguous
	lnA     [][]float64   // ln(A + eps), [o*J + j]
	entropy [][]float64   // entropy[m][j] = H[P(o_m | j)]
	lnC     [][]float64   // log-softmax of C
	trans   [][]sparseCol // trans[f][a*S + prev] = nonzero next states
	lnE     []float64
	lnD     [][]float64
}

type sparseCol struct {
	next []int32
	p    []float64
}

// JointStates returns the number of joint hidden states.
func (m *Model) JointStates() int { return m.joint }

func ptr(parts ...any) string {
	s := ""
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			s += "/" + v
		case int:
			s += "/" + strconv.Itoa(v)
		}
	}
	return s
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkNames(names []string, at string) error {
	if len(names) == 0 {
		return errf(CodeShape, at, "must not be empty")
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		if n == "" || seen[n] {
			return errf(CodeName, at+"/"+strconv.Itoa(i), "name %q is empty or repeated", n)
		}
		seen[n] = true
	}
	return nil
}

// checkDist verifies a probability vector and renormalizes it in place.
func checkDist(v []float64, at string) error {
	sum := 0.0
	for i, x := range v {
		if !finite(x) {
			return errf(CodeNotFinite, ptr(at, i), "%v", x)
		}
		if x < 0 {
			return errf(CodeNegative, ptr(at, i), "%v", x)
		}
		sum += x
	}
	if math.Abs(sum-1) > normTolerance {
		return errf(CodeNotNormalized, at, "sums to %.9g", sum)
	}
	for i := range v {
		v[i] /= sum
	}
	return nil
}

// Validate checks every array for shape, finiteness, sign and normalization,
// naming the exact location of the first problem, and derives the cached
// quantities inference needs. Columns that sum to 1 within 1e-6 are
// renormalized exactly. Validate must be called before any other method.
func (m *Model) Validate() error {
	if len(m.Factors) == 0 {
		return errf(CodeMissing, "/factors", "at least one hidden-state factor is required")
	}
	if len(m.Modalities) == 0 {
		return errf(CodeMissing, "/modalities", "at least one modality is required")
	}
	var fn []string
	for _, f := range m.Factors {
		fn = append(fn, f.Name)
	}
	if err := checkNames(fn, "/factors"); err != nil {
		return err
	}
	m.joint = 1
	m.stride = make([]int, len(m.Factors))
	for i := len(m.Factors) - 1; i >= 0; i-- {
		m.stride[i] = m.joint
		m.joint *= max(1, len(m.Factors[i].States))
		if m.joint > MaxJointStates {
			return errf(CodeLimit, ptr("factors", i), "more than %d joint states", MaxJointStates)
		}
	}
	m.trans = make([][]sparseCol, len(m.Factors))
	m.lnD = make([][]float64, len(m.Factors))
	for fi := range m.Factors {
		f := &m.Factors[fi]
		at := ptr("factors", fi)
		if err := checkNames(f.States, at+"/states"); err != nil {
			return err
		}
		if len(f.Actions) == 0 {
			f.Actions = []string{"stay"}
		}
		if err := checkNames(f.Actions, at+"/actions"); err != nil {
			return err
		}
		S, U := len(f.States), len(f.Actions)
		if S*S*U > MaxTensor {
			return errf(CodeLimit, at+"/B", "tensor larger than %d entries", MaxTensor)
		}
		if f.PB != nil {
			if err := checkCounts(f.PB, S*S*U, at+"/pB", func(i int) string {
				return ptr("factors", fi, "pB", i/U/S, (i/U)%S, i%U)
			}); err != nil {
				return err
			}
			if f.B == nil {
				f.B = make([]float64, len(f.PB))
				normalizeColumnsB(f.B, f.PB, S, U)
			}
		}
		if len(f.B) != S*S*U {
			return errf(CodeShape, at+"/B", "want %d×%d×%d entries, have %d", S, S, U, len(f.B))
		}
		for prev := 0; prev < S; prev++ {
			for a := 0; a < U; a++ {
				sum := 0.0
				for next := 0; next < S; next++ {
					x := f.B[(next*S+prev)*U+a]
					if !finite(x) {
						return errf(CodeNotFinite, ptr("factors", fi, "B", next, prev, a), "%v", x)
					}
					if x < 0 {
						return errf(CodeNegative, ptr("factors", fi, "B", next, prev, a), "%v", x)
					}
					sum += x
				}
				if math.Abs(sum-1) > normTolerance {
					return errf(CodeNotNormalized, fmt.Sprintf("%s/B/*/%d/%d", at, prev, a),
						"column P(next | %s, %s) sums to %.9g", f.States[prev], f.Actions[a], sum)
				}
				for next := 0; next < S; next++ {
					f.B[(next*S+prev)*U+a] /= sum
				}
			}
		}
		cols := make([]sparseCol, U*S)
		for a := 0; a < U; a++ {
			for prev := 0; prev < S; prev++ {
				var c sparseCol
				for next := 0; next < S; next++ {
					if p := f.B[(next*S+prev)*U+a]; p > 0 {
						c.next = append(c.next, int32(next))
						c.p = append(c.p, p)
					}
				}
				cols[a*S+prev] = c
			}
		}
		m.trans[fi] = cols
		if len(f.D) != S {
			return errf(CodeShape, at+"/D", "want %d entries, have %d", S, len(f.D))
		}
		if err := checkDist(f.D, at+"/D"); err != nil {
			return err
		}
		m.lnD[fi] = logVec(f.D)
	}

	var mn []string
	for _, mo := range m.Modalities {
		mn = append(mn, mo.Name)
	}
	if err := checkNames(mn, "/modalities"); err != nil {
		return err
	}
	J := m.joint
	m.acol = make([][]float64, len(m.Modalities))
	m.lnA = make([][]float64, len(m.Modalities))
	m.entropy = make([][]float64, len(m.Modalities))
	m.lnC = make([][]float64, len(m.Modalities))
	for mi := range m.Modalities {
		mo := &m.Modalities[mi]
		at := ptr("modalities", mi)
		if err := checkNames(mo.Outcomes, at+"/outcomes"); err != nil {
			return err
		}
		O := len(mo.Outcomes)
		if O > MaxOutcomes || O*J > MaxTensor {
			return errf(CodeLimit, at+"/A", "tensor larger than the stated limits")
		}
		if mo.PA != nil {
			if err := checkCounts(mo.PA, O*J, at+"/pA", func(i int) string {
				return strings.Replace(m.aPointer(mi, i/J, i%J), "/A/", "/pA/", 1)
			}); err != nil {
				return err
			}
			if mo.A == nil {
				mo.A = make([]float64, len(mo.PA))
				normalizeColumnsA(mo.A, mo.PA, O, J)
			}
		}
		if len(mo.A) != O*J {
			return errf(CodeShape, at+"/A", "want %d outcomes × %d joint states = %d entries, have %d", O, J, O*J, len(mo.A))
		}
		for j := 0; j < J; j++ {
			sum := 0.0
			for o := 0; o < O; o++ {
				x := mo.A[o*J+j]
				if !finite(x) {
					return errf(CodeNotFinite, m.aPointer(mi, o, j), "%v", x)
				}
				if x < 0 {
					return errf(CodeNegative, m.aPointer(mi, o, j), "%v", x)
				}
				sum += x
			}
			if math.Abs(sum-1) > normTolerance {
				return errf(CodeNotNormalized, m.aColumnPointer(mi, j), "column sums to %.9g", sum)
			}
			for o := 0; o < O; o++ {
				mo.A[o*J+j] /= sum
			}
		}
		acol := make([]float64, O*J)
		lnA := make([]float64, O*J)
		ent := make([]float64, J)
		for j := 0; j < J; j++ {
			h := 0.0
			for o := 0; o < O; o++ {
				p := mo.A[o*J+j]
				acol[j*O+o] = p
				l := fmath.Log(p + logEps)
				lnA[o*J+j] = l
				h -= float64(p * l)
			}
			ent[j] = h
		}
		m.acol[mi], m.lnA[mi], m.entropy[mi] = acol, lnA, ent
		if len(mo.C) != O {
			return errf(CodeShape, at+"/C", "want %d entries, have %d", O, len(mo.C))
		}
		for o, c := range mo.C {
			if !finite(c) {
				return errf(CodeNotFinite, ptr("modalities", mi, "C", o), "%v", c)
			}
		}
		lse := fmath.LogSumExp(mo.C)
		lnC := make([]float64, O)
		for o, c := range mo.C {
			lnC[o] = c - lse
		}
		m.lnC[mi] = lnC
	}

	if len(m.Policies) == 0 {
		return errf(CodeMissing, "/policies", "at least one policy is required")
	}
	if len(m.Policies) > MaxPolicies {
		return errf(CodeLimit, "/policies", "more than %d policies", MaxPolicies)
	}
	T := len(m.Policies[0])
	for p, pol := range m.Policies {
		if len(pol) != T || T == 0 || T > MaxHorizon {
			return errf(CodePolicy, ptr("policies", p), "every policy needs the same number of steps (1..%d); want %d, have %d", MaxHorizon, T, len(pol))
		}
		for t, step := range pol {
			if len(step) != len(m.Factors) {
				return errf(CodePolicy, ptr("policies", p, t), "want one action per factor (%d), have %d", len(m.Factors), len(step))
			}
			for f, a := range step {
				if a < 0 || a >= len(m.Factors[f].Actions) {
					return errf(CodePolicy, ptr("policies", p, t, f), "factor %s has no action %d", m.Factors[f].Name, a)
				}
			}
		}
	}
	if work := int64(len(m.Policies)) * int64(T) * int64(m.joint); work > MaxWork {
		return errf(CodeLimit, "/policies", "%d policies × horizon %d × %d joint states exceeds %d", len(m.Policies), T, m.joint, MaxWork)
	}
	if m.E == nil {
		m.lnE = make([]float64, len(m.Policies))
		u := fmath.Log(1 / float64(len(m.Policies)))
		for i := range m.lnE {
			m.lnE[i] = u
		}
	} else {
		if len(m.E) != len(m.Policies) {
			return errf(CodeShape, "/E", "want one entry per policy (%d), have %d", len(m.Policies), len(m.E))
		}
		if err := checkDist(m.E, "/E"); err != nil {
			return err
		}
		m.lnE = logVec(m.E)
	}
	if !finite(m.Gamma) || m.Gamma <= 0 || m.Gamma > 1e6 {
		return errf(CodeRange, "/gamma", "policy precision must be in (0, 1e6], have %v", m.Gamma)
	}
	if m.Discount == 0 {
		m.Discount = 1
	}
	if !finite(m.Discount) || m.Discount <= 0 || m.Discount > 1 {
		return errf(CodeRange, "/discount", "temporal discount must be in (0, 1], have %v", m.Discount)
	}
	if !finite(m.LearningRate) || m.LearningRate < 0 || m.LearningRate > 1e6 {
		return errf(CodeRange, "/learning_rate", "must be in [0, 1e6], have %v", m.LearningRate)
	}
	return nil
}

// aPointer names A[o][s0][s1]... for joint index j.
func (m *Model) aPointer(mi, o, j int) string {
	s := ptr("modalities", mi, "A", o)
	for f := range m.Factors {
		s += "/" + strconv.Itoa((j/m.stride[f])%len(m.Factors[f].States))
	}
	return s
}

func (m *Model) aColumnPointer(mi, j int) string {
	s := ptr("modalities", mi, "A") + "/*"
	for f := range m.Factors {
		s += "/" + strconv.Itoa((j/m.stride[f])%len(m.Factors[f].States))
	}
	return s
}

func checkCounts(v []float64, n int, at string, where func(int) string) error {
	if len(v) != n {
		return errf(CodeShape, at, "want %d entries, have %d", n, len(v))
	}
	for i, x := range v {
		if !finite(x) {
			return errf(CodeNotFinite, where(i), "%v", x)
		}
		if x < 0 {
			return errf(CodeNegative, where(i), "Dirichlet count %v below zero", x)
		}
	}
	return nil
}

func logVec(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = fmath.Log(x + logEps)
	}
	return out
}

// normalizeColumnsA writes the column-normalized counts (the Dirichlet mean)
// into dst; an all-zero column becomes uniform.
func normalizeColumnsA(dst, counts []float64, O, J int) {
	for j := 0; j < J; j++ {
		sum := 0.0
		for o := 0; o < O; o++ {
			sum += counts[o*J+j]
		}
		for o := 0; o < O; o++ {
			if sum > 0 {
				dst[o*J+j] = counts[o*J+j] / sum
			} else {
				dst[o*J+j] = 1 / float64(O)
			}
		}
	}
}

func normalizeColumnsB(dst, counts []float64, S, U int) {
	for prev := 0; prev < S; prev++ {
		for a := 0; a < U; a++ {
			sum := 0.0
			for next := 0; next < S; next++ {
				sum += counts[(next*S+prev)*U+a]
			}
			for next := 0; next < S; next++ {
				i := (next*S+prev)*U + a
				if sum > 0 {
					dst[i] = counts[i] / sum
				} else {
					dst[i] = 1 / float64(S)
				}
			}
		}
	}
}

// EnumeratePolicies returns every sequence of length horizon of joint
// actions, in lexicographic order with factor 0 most significant: the
// standard policy space of the literature's single-agent examples.
func EnumeratePolicies(factors []Factor, horizon int) [][][]int {
	var tuples [][]int
	var rec func(f int, cur []int)
	rec = func(f int, cur []int) {
		if f == len(factors) {
			tuples = append(tuples, append([]int(nil), cur...))
			return
		}
		n := max(1, len(factors[f].Actions))
		for a := 0; a < n; a++ {
			rec(f+1, append(cur, a))
		}
	}
	rec(0, nil)
	var out [][][]int
	var seq func(t int, cur [][]int)
	seq = func(t int, cur [][]int) {
		if t == horizon {
			out = append(out, append([][]int(nil), cur...))
			return
		}
		for _, tu := range tuples {
			seq(t+1, append(cur, tu))
		}
	}
	seq(0, nil)
	return out
}
