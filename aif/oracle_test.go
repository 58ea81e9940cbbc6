package aif

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// An independent, deliberately naive oracle: joint-state Bayes and EFE
// written directly from the definitions with the standard library's math.
// It shares no code with the package under test.

func oracleJointPosterior(m *Model, prior [][]float64, obs []int) []float64 {
	J := m.JointStates()
	post := make([]float64, J)
	sum := 0.0
	for j := 0; j < J; j++ {
		p := 1.0
		rem := j
		idx := make([]int, len(m.Factors))
		for f := len(m.Factors) - 1; f >= 0; f-- {
			S := len(m.Factors[f].States)
			idx[f] = rem % S
			rem /= S
		}
		for f := range m.Factors {
			p *= prior[f][idx[f]]
		}
		for mi, o := range obs {
			p *= m.Modalities[mi].A[o*J+j]
		}
		post[j] = p
		sum += p
	}
	for j := range post {
		post[j] /= sum
	}
	return post
}

func oracleMarginal(m *Model, joint []float64, f int) []float64 {
	S := len(m.Factors[f].States)
	stride := 1
	for g := f + 1; g < len(m.Factors); g++ {
		stride *= len(m.Factors[g].States)
	}
	out := make([]float64, S)
	for j, p := range joint {
		out[(j/stride)%S] += p
	}
	return out
}

func oracleG(m *Model, q [][]float64, policy [][]int) (risk, amb float64) {
	J := m.JointStates()
	w := 1.0
	for _, acts := range policy {
		next := make([][]float64, len(q))
		for f := range q {
			S := len(q[f])
			U := len(m.Factors[f].Actions)
			next[f] = make([]float64, S)
			for s2 := 0; s2 < S; s2++ {
				for s1 := 0; s1 < S; s1++ {
					next[f][s2] += m.Factors[f].B[(s2*S+s1)*U+acts[f]] * q[f][s1]
				}
			}
		}
		q = next
		joint := make([]float64, J)
		for j := range joint {
			p := 1.0
			rem := j
			for f := len(q) - 1; f >= 0; f-- {
				S := len(q[f])
				p *= q[f][rem%S]
				rem /= S
			}
			joint[j] = p
		}
		for _, mo := range m.Modalities {
			O := len(mo.Outcomes)
			lse := 0.0
			for _, c := range mo.C {
				lse += math.Exp(c)
			}
			lse = math.Log(lse)
			for o := 0; o < O; o++ {
				qo := 0.0
				for j := 0; j < J; j++ {
					qo += mo.A[o*J+j] * joint[j]
				}
				if qo > 0 {
					risk += w * qo * (math.Log(qo) - (mo.C[o] - lse))
				}
			}
			for j := 0; j < J; j++ {
				h := 0.0
				for o := 0; o < O; o++ {
					if a := mo.A[o*J+j]; a > 0 {
						h -= a * math.Log(a)
					}
				}
				amb += w * joint[j] * h
			}
		}
		w *= m.Discount
	}
	return risk, amb
}

// randomModel draws a valid model with 1–2 factors. When separable is true
// each modality depends on one factor only, so the likelihood factorizes
// and the mean-field posterior is exact.
func randomModel(t *rapid.T, separable bool) *Model {
	nf := rapid.IntRange(1, 2).Draw(t, "factors")
	var fs []Factor
	for f := 0; f < nf; f++ {
		S := rapid.IntRange(1, 4).Draw(t, "S")
		U := rapid.IntRange(1, 3).Draw(t, "U")
		B := make([]float64, S*S*U)
		for prev := 0; prev < S; prev++ {
			for a := 0; a < U; a++ {
				col := randDist(t, S)
				for next := 0; next < S; next++ {
					B[(next*S+prev)*U+a] = col[next]
				}
			}
		}
		fs = append(fs, Factor{Name: "f" + itoa(f), States: names("s", S), Actions: names("a", U), B: B, D: randDist(t, S)})
	}
	J := 1
	for _, f := range fs {
		J *= len(f.States)
	}
	nm := rapid.IntRange(1, 3).Draw(t, "modalities")
	var ms []Modality
	for mi := 0; mi < nm; mi++ {
		O := rapid.IntRange(1, 4).Draw(t, "O")
		A := make([]float64, O*J)
		dep := rapid.IntRange(0, nf-1).Draw(t, "dep")
		cols := map[int][]float64{}
		for j := 0; j < J; j++ {
			key := j
			if separable {
				stride := 1
				for g := dep + 1; g < nf; g++ {
					stride *= len(fs[g].States)
				}
				key = (j / stride) % len(fs[dep].States)
			}
			col, ok := cols[key]
			if !ok {
				col = randDist(t, O)
				cols[key] = col
			}
			for o := 0; o < O; o++ {
				A[o*J+j] = col[o]
			}
		}
		C := make([]float64, O)
		for o := range C {
			C[o] = float64(rapid.IntRange(-3, 3).Draw(t, "C"))
		}
		ms = append(ms, Modality{Name: "m" + itoa(mi), Outcomes: names("o", O), A: A, C: C})
	}
	m := &Model{Factors: fs, Modalities: ms, Gamma: 2, Discount: 0.8}
	m.Policies = EnumeratePolicies(fs, rapid.IntRange(1, 2).Draw(t, "T"))
	if err := m.Validate(); err != nil {
		t.Fatalf("random model refused: %v", err)
	}
	return m
}

func randDist(t *rapid.T, n int) []float64 {
	w := make([]float64, n)
	s := 0.0
	for i := range w {
		w[i] = float64(rapid.IntRange(1, 9).Draw(t, "w"))
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

func TestInferenceAgainstJointBayes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := randomModel(t, true)
		obs := make([]int, len(m.Modalities))
		for i := range obs {
			obs[i] = rapid.IntRange(0, len(m.Modalities[i].Outcomes)-1).Draw(t, "o")
		}
		post, err := m.Infer(m.Prior(), obs)
		if err != nil {
			t.Fatal(err)
		}
		joint := oracleJointPosterior(m, m.Prior(), obs)
		for f := range m.Factors {
			want := oracleMarginal(m, joint, f)
			for s := range want {
				if math.Abs(post.Q[f][s]-want[s]) > 1e-9 {
					t.Fatalf("factor %d: mean field %v, exact %v", f, post.Q[f], want)
				}
			}
		}
	})
}

func TestEFEAgainstOracle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := randomModel(t, false)
		q := make([][]float64, len(m.Factors))
		for f := range q {
			q[f] = randDist(t, len(m.Factors[f].States))
		}
		scores := m.EvaluatePolicies(q)
		for p, pol := range m.Policies {
			r, a := oracleG(m, q, pol)
			if math.Abs(scores[p].Risk-r) > 1e-9 || math.Abs(scores[p].Ambiguity-a) > 1e-9 {
				t.Fatalf("policy %v: risk %v ambiguity %v, oracle %v %v", pol, scores[p].Risk, scores[p].Ambiguity, r, a)
			}
		}
	})
}
