package aif

import (
	"flrh.dev/flrh/aif/internal/draw"
	"flrh.dev/flrh/cjson"
)

// Domains for digests and draws made while running a model.
const (
	TickKind      = "flrh.aif.tick"
	ProcessDomain = "flrh-aif-process/1"
	RunKind       = "flrh.aif.run"
)

// RunRecord is the persisted trace of stepping a model: one StepRecord per
// tick, bound to the digest of the model document.
type RunRecord struct {
	Kind        string       `json:"kind"`
	Version     int64        `json:"version"`
	ModelDigest string       `json:"model_digest"`
	Steps       []StepRecord `json:"steps"`
}

// tickDigest is the digest of the event a tick answers: the model, the tick
// number and the observation. It seeds sampled selection, so replaying the
// same observations reproduces every choice.
func tickDigest(modelDigest string, tick int, obs []string) (string, error) {
	return cjson.DigestOf(map[string]any{
		"kind": TickKind, "version": int64(1), "model_digest": modelDigest,
		"tick": int64(tick), "observation": obs,
	})
}

// Run steps a model for a number of ticks. Observations come from obs (one
// outcome index per modality per tick) when it is non-nil; otherwise from
// the document's simulated process, whose draws are seeded from the model
// digest and the tick. With a learning rate, pA counts are learned after
// each inference and pB counts from each pair of successive posteriors. Run is pure: the same inputs give the same record.
func Run(doc *Document, modelDigest string, obs [][]int, steps int) (RunRecord, error) {
	m := doc.Model
	rec := RunRecord{Kind: RunKind, Version: RecordVersion, ModelDigest: modelDigest}
	if obs != nil {
		steps = len(obs)
	} else if doc.Process == nil {
		return rec, errf(CodeMissing, "/process", "no observations given and the model declares no process to simulate")
	}
	var truth []int
	if doc.Process != nil {
		truth = append([]int(nil), doc.Process.Initial...)
	}
	prior := m.Prior()
	var prevQ [][]float64 // last posterior and action, for learning pB
	var prevAction []int
	for t := 1; t <= steps; t++ {
		var o []int
		if obs != nil {
			o = obs[t-1]
			if err := m.CheckObservation(o); err != nil {
				err.(*Error).Pointer = ptr(t-1) + err.(*Error).Pointer
				return rec, err
			}
		} else {
			pd, err := cjson.DigestOf(map[string]any{"kind": ProcessDomain, "model_digest": modelDigest, "tick": int64(t)})
			if err != nil {
				return rec, err
			}
			o = m.emit(truth, draw.New(ProcessDomain, pd))
		}
		names := make([]string, len(o))
		for i, x := range o {
			names[i] = m.Modalities[i].Outcomes[x]
		}
		digest, err := tickDigest(modelDigest, t, names)
		if err != nil {
			return rec, err
		}
		r, err := m.Step(prior, o, doc.Selection, digest)
		if err != nil {
			return rec, err
		}
		rec.Steps = append(rec.Steps, m.Record(t, o, digest, doc.Selection, r))
		if m.LearningRate > 0 && r.Posterior.Degenerate == "" {
			nm, err := m.LearnA(o, r.Posterior.Q)
			if err != nil {
				return rec, err
			}
			if prevQ != nil {
				if nm, err = nm.LearnB(prevQ, r.Posterior.Q, prevAction); err != nil {
					return rec, err
				}
			}
			m = nm
		}
		prevQ, prevAction = r.Posterior.Q, r.Action
		if r.Posterior.Degenerate != "" {
			prevQ = nil // never learn a transition from a reset belief
		}
		prior = m.predict(r.Posterior.Q, r.Action)
		if truth != nil {
			truth = m.advance(truth, r.Action, draw.New(ProcessDomain+"/move", digest))
		}
	}
	return rec, nil
}

// emit draws one outcome per modality from A at the true joint state.
func (m *Model) emit(truth []int, src *draw.Source) []int {
	j := 0
	for f, s := range truth {
		j += s * m.stride[f]
	}
	out := make([]int, len(m.Modalities))
	for mi := range m.Modalities {
		O := len(m.Modalities[mi].Outcomes)
		out[mi] = src.Categorical(m.acol[mi][j*O : (j+1)*O])
	}
	return out
}

// advance draws the next true state of each factor from B.
func (m *Model) advance(truth, actions []int, src *draw.Source) []int {
	out := make([]int, len(truth))
	for f, s := range truth {
		S := len(m.Factors[f].States)
		c := m.trans[f][actions[f]*S+s]
		i := src.Categorical(c.p)
		out[f] = int(c.next[i])
	}
	return out
}

// ObservationIndices converts observation names (one per modality per
// tick) to indices, with the location of the first unknown name.
func (m *Model) ObservationIndices(names [][]string) ([][]int, error) {
	out := make([][]int, len(names))
	for t, row := range names {
		if len(row) != len(m.Modalities) {
			return nil, errf(CodeObservation, ptr(t), "want one outcome per modality (%d), have %d", len(m.Modalities), len(row))
		}
		out[t] = make([]int, len(row))
		for i, n := range row {
			idx := indexOf(m.Modalities[i].Outcomes, n)
			if idx < 0 {
				return nil, errf(CodeObservation, ptr(t, i), "modality %s has no outcome %q", m.Modalities[i].Name, n)
			}
			out[t][i] = idx
		}
	}
	return out, nil
}
