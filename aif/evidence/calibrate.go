package evidence

import (
	"fmt"
	"math"
)

// Agreement measures how many predictions landed within tolerance of their
// referent. The referent is what separates the layers: the model's own later
// scores for Layer 1, externally witnessed outcomes for Layer 2.
func agreement(pred, ref []float64, tol float64) (int64, error) {
	if len(pred) != len(ref) {
		return 0, fmt.Errorf("evidence: %d predictions against %d referents", len(pred), len(ref))
	}
	if math.IsNaN(tol) || tol < 0 {
		return 0, fmt.Errorf("evidence: tolerance must be ≥ 0")
	}
	var n int64
	for i, p := range pred {
		if math.IsNaN(p) || math.IsNaN(ref[i]) || math.IsInf(p, 0) || math.IsInf(ref[i], 0) {
			return 0, fmt.Errorf("evidence: non-finite value at %d", i)
		}
		if math.Abs(p-ref[i]) <= tol {
			n++
		}
	}
	return n, nil
}

// SelfConsistency builds Layer 1: predictions against the model's own later
// scores. It passes when at least minFraction of them agree within tol. A
// pass establishes internal consistency only; Check never lets it clear
// value.
func SelfConsistency(pred, laterOwnScores []float64, tol, minFraction float64) (*Layer1, error) {
	n, err := agreement(pred, laterOwnScores, tol)
	if err != nil {
		return nil, err
	}
	l := &Layer1{Predictions: int64(len(pred)), Agreements: n}
	l.Passed = len(pred) > 0 && float64(n) >= minFraction*float64(len(pred))
	return l, nil
}

// Witnessed is one externally witnessed outcome: the evidence record that
// carries it and the value it witnessed.
type Witnessed struct {
	Record Record
	Value  float64
}

// ExternalCalibration builds Layer 2: predictions against witnessed
// outcomes. Only outcomes whose records count (tagged at birth, every tag
// clear, not produced by their subject) are compared; a prediction whose
// outcome does not count is left unmatched, and unmatched predictions count
// against the pass. It passes when at least minFraction of all predictions
// agree within tol with a counting outcome.
func ExternalCalibration(witness string, pred []float64, outcomes []Witnessed, tol, minFraction float64) (*Layer2, error) {
	if len(pred) != len(outcomes) {
		return nil, fmt.Errorf("evidence: %d predictions against %d outcomes", len(pred), len(outcomes))
	}
	var p, r []float64
	l := &Layer2{Witness: witness, Evidence: []Record{}}
	for i, o := range outcomes {
		l.Evidence = append(l.Evidence, o.Record)
		if ok, _ := Counts(o.Record); ok {
			p = append(p, pred[i])
			r = append(r, o.Value)
		}
	}
	n, err := agreement(p, r, tol)
	if err != nil {
		return nil, err
	}
	l.Passed = len(pred) > 0 && float64(n) >= minFraction*float64(len(pred))
	return l, nil
}
