package aif

// Dirichlet learning of the likelihood and transition models.
//
// The counts pA and pB are the sufficient statistics; A and B are their
// normalized means. An update adds the learning rate times the outer product
// of the observed outcome (one-hot) and the state posterior, only where the
// current model allows the transition or emission at all (entries that are
// structurally zero stay zero), as the literature's reference code does.

// LearnA adds lr·(o ⊗ Q(s)) to every modality's pA and renormalizes A. A
// modality without pA is left unchanged. It returns the updated model;
// the receiver is not modified.
func (m *Model) LearnA(obs []int, q [][]float64) (*Model, error) {
	if err := m.CheckObservation(obs); err != nil {
		return nil, err
	}
	out := m.clone()
	pj := make([]float64, m.joint)
	m.jointProduct(pj, q)
	J := m.joint
	for mi := range out.Modalities {
		mo := &out.Modalities[mi]
		if mo.PA == nil {
			continue
		}
		o := obs[mi]
		for j := 0; j < J; j++ {
			if m.Modalities[mi].A[o*J+j] > 0 {
				mo.PA[o*J+j] += float64(m.LearningRate * pj[j])
			}
		}
		mo.A = make([]float64, len(mo.PA))
		normalizeColumnsA(mo.A, mo.PA, len(mo.Outcomes), J)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// LearnB adds lr·(Q(s_t) ⊗ Q(s_{t−1})) for the action taken to every
// factor's pB and renormalizes B.
func (m *Model) LearnB(qPrev, qNow [][]float64, actions []int) (*Model, error) {
	if len(actions) != len(m.Factors) {
		return nil, errf(CodePolicy, "", "want one action per factor")
	}
	out := m.clone()
	for fi := range out.Factors {
		f := &out.Factors[fi]
		if f.PB == nil {
			continue
		}
		S, U := len(f.States), len(f.Actions)
		a := actions[fi]
		if a < 0 || a >= U {
			return nil, errf(CodePolicy, ptr(fi), "factor %s has no action %d", f.Name, a)
		}
		for next := 0; next < S; next++ {
			for prev := 0; prev < S; prev++ {
				i := (next*S+prev)*U + a
				if m.Factors[fi].B[i] > 0 {
					f.PB[i] += float64(m.LearningRate * float64(qNow[fi][next]*qPrev[fi][prev]))
				}
			}
		}
		f.B = make([]float64, len(f.PB))
		normalizeColumnsB(f.B, f.PB, S, U)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// clone copies the exported fields deeply; derived caches are rebuilt by
// Validate.
func (m *Model) clone() *Model {
	c := &Model{
		Gamma:        m.Gamma,
		Discount:     m.Discount,
		LearningRate: m.LearningRate,
		Policies:     m.Policies, // immutable after validation
	}
	if m.E != nil {
		c.E = append([]float64(nil), m.E...)
	}
	for _, f := range m.Factors {
		f.B = append([]float64(nil), f.B...)
		f.D = append([]float64(nil), f.D...)
		if f.PB != nil {
			f.PB = append([]float64(nil), f.PB...)
		}
		c.Factors = append(c.Factors, f)
	}
	for _, mo := range m.Modalities {
		mo.A = append([]float64(nil), mo.A...)
		mo.C = append([]float64(nil), mo.C...)
		if mo.PA != nil {
			mo.PA = append([]float64(nil), mo.PA...)
		}
		c.Modalities = append(c.Modalities, mo)
	}
	return c
}
