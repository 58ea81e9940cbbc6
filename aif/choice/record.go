package choice

import "flrh.dev/flrh/aif/fixed"

// ScorecardKind is the kind of a persisted scorecard.
const ScorecardKind = "flrh.aif.scorecard"

// TermRecord is a named augmentation in fixed point.
type TermRecord struct {
	Name  string    `json:"name"`
	Value fixed.Num `json:"value"`
}

// CoreRecord is the EFE core in fixed point.
type CoreRecord struct {
	Risk      fixed.Num `json:"risk"`
	Ambiguity fixed.Num `json:"ambiguity"`
	EFE       fixed.Num `json:"efe"`
}

// CandidateRecord is one scorecard row. The core and the augmentations are
// separate members; total is their sum and is never called EFE.
type CandidateRecord struct {
	ID            string       `json:"id"`
	Core          CoreRecord   `json:"core"`
	Augmentations []TermRecord `json:"augmentations"`
	Total         fixed.Num    `json:"total"`
	Steps         []CoreRecord `json:"steps,omitempty"`
	Discount      fixed.Num    `json:"temporal_discount,omitempty"`
	Probability   fixed.Num    `json:"probability"`
}

// Scorecard is the persisted record of one selection.
type Scorecard struct {
	Kind        string            `json:"kind"`
	Version     int64             `json:"version"`
	Scale       int64             `json:"scale"`
	EventDigest string            `json:"event_digest"`
	Temperature fixed.Num         `json:"temperature"`
	Margin      fixed.Num         `json:"abstain_margin"`
	Nothing     CandidateRecord   `json:"do_nothing"`
	Candidates  []CandidateRecord `json:"candidates"`
	Set         *Set              `json:"candidate_set,omitempty"`
	Pick        string            `json:"pick"`
	Abstain     string            `json:"abstain"`
	ArgminCore  string            `json:"argmin_core"`
	ArgminTotal string            `json:"argmin_total"`
	MovedBy     []string          `json:"moved_by"`
}

func coreRecord(c Core) CoreRecord {
	return CoreRecord{Risk: numOf(c.Risk), Ambiguity: numOf(c.Ambiguity), EFE: numOf(c.EFE())}
}

func candidateRecord(c Candidate, p float64) CandidateRecord {
	r := CandidateRecord{ID: c.ID, Core: coreRecord(c.Core), Total: numOf(c.Total()), Probability: numOf(p), Augmentations: []TermRecord{}}
	for _, a := range c.Augmentations {
		r.Augmentations = append(r.Augmentations, TermRecord{a.Name, numOf(a.Value)})
	}
	for _, s := range c.Steps {
		r.Steps = append(r.Steps, coreRecord(s))
	}
	if c.Steps != nil {
		r.Discount = numOf(c.Discount)
	}
	return r
}

// Record builds the canonical scorecard of a request and its decision.
func Record(r Request, d Decision, set *Set) Scorecard {
	sc := Scorecard{
		Kind: ScorecardKind, Version: 1, Scale: fixed.Scale,
		EventDigest: r.EventDigest, Temperature: numOf(r.Temperature), Margin: numOf(r.Margin),
		Nothing: candidateRecord(r.Nothing, 0), Candidates: []CandidateRecord{}, Set: set,
		Pick: d.Pick, Abstain: d.Abstain, ArgminCore: d.ArgminCore, ArgminTotal: d.ArgminTotal,
		MovedBy: append([]string{}, d.MovedBy...),
	}
	for i, c := range r.Candidates {
		p := 0.0
		if i < len(d.Probability) {
			p = d.Probability[i]
		}
		sc.Candidates = append(sc.Candidates, candidateRecord(c, p))
	}
	return sc
}
