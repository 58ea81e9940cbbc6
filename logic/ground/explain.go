package ground

import "slices"

// Explanation says why an atom has its state in a materialization: one
// minimal proof per side that holds (both for a BOTH conflict).
type Explanation struct {
	Atom     map[string]any
	FactKey  string
	State    string
	Positive *Proof // nil when the atom has no positive support
	Negative *Proof // nil when the atom has no negative support
}

// Proof is a minimal derivation of one literal: a base support (a named
// FactDelta the caller supplied), or a derived support with the rule that
// fired, a proof for every premise and the absence witnesses of its
// default-negated atoms.
type Proof struct {
	Polarity   string
	Atom       map[string]any
	SupportID  string
	Depth      int64          // 0 for a base support
	Provenance map[string]any // base supports: the caller's provenance
	RuleID     string         // derived supports
	Premises   []*Proof
	Absences   []Absence
}

// Absence records that an atom had no positive support when the stratum
// it was looked up in was complete.
type Absence struct {
	Atom                   map[string]any
	ReferencedStratum      int64
	CompletedStratumDigest string
	WitnessDigest          string
}

// Explain validates a materialization against its rule bundle exactly as
// Solve validates a prior (digests, provenance, equality with its clean
// recomputation) and explains one atom of it. Among the supports of a
// literal the proof picks one of least depth (base supports first, then by
// canonical identity), so the tree is minimal and deterministic.
func Explain(materialization, ruleBundle, atomValue any) (ex *Explanation, rej *Rejection) {
	var bd *string
	defer func() {
		if r := recover(); r != nil {
			ex, rej = nil, closedFailure(KindRejection, r, nil, bd)
		}
	}()
	k := newKeys()
	b, kerr := parseBundle(ruleBundle, k)
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, nil, nil)
	}
	bd = &b.digest
	var through int64
	if m, ok := materialization.(map[string]any); ok {
		through, _ = nonNegInt(m["through_logical_time"])
	}
	if materialization == nil {
		return nil, reject(CodeMalformedMaterialization, "/prior_materialization").rejection(KindRejection, nil, bd)
	}
	p, kerr := parsePrior(materialization, through, k, b)
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, nil, bd)
	}
	if kerr := checkCanonical(atomValue, "/atom"); kerr != nil {
		return nil, kerr.rejection(KindRejection, nil, bd)
	}
	a, kerr := parseAtom(atomValue, CodeMalformedMaterialization, "/atom")
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, nil, bd)
	}
	e := newExplainer(k, p)
	ex = &Explanation{Atom: cloneValue(a.val).(map[string]any), FactKey: k.factKey(a)}
	posKey := k.literalKey(literal{polarity: positive, atom: a})
	negKey := k.literalKey(literal{polarity: negative, atom: a})
	ex.Positive, ex.Negative = e.proof(posKey), e.proof(negKey)
	n := func(pr *Proof) int {
		if pr == nil {
			return 0
		}
		return 1
	}
	ex.State = TruthState(n(ex.Positive), n(ex.Negative))
	return ex, nil
}

type explainer struct {
	k        *keys
	base     map[string][]*baseSupport    // by literal key
	derived  map[string][]*derivedSupport // by literal key
	depth    map[string]int64             // least proof depth by literal key
	supDepth map[string]int64             // least proof depth by derived support id
}

func newExplainer(k *keys, p *prior) *explainer {
	e := &explainer{k: k, base: map[string][]*baseSupport{}, derived: map[string][]*derivedSupport{},
		depth: map[string]int64{}, supDepth: map[string]int64{}}
	for _, s := range p.base {
		key := k.literalKey(s.lit)
		e.base[key] = append(e.base[key], s)
		e.depth[key] = 0
	}
	for _, s := range p.derived {
		key := k.literalKey(s.lit)
		e.derived[key] = append(e.derived[key], s)
	}
	// Least depths by relaxation; every derived support of a validated
	// materialization has a finite proof, so this terminates with all of
	// them known.
	for changed := true; changed; {
		changed = false
		for _, s := range p.derived {
			d, ok := int64(1), true
			for _, pk := range s.premiseKeys {
				pd, known := e.depth[pk]
				if !known {
					ok = false
					break
				}
				d = max(d, pd+1)
			}
			if !ok {
				continue
			}
			if old, had := e.supDepth[s.id]; !had || d < old {
				e.supDepth[s.id] = d
				changed = true
			}
			key := k.literalKey(s.lit)
			if old, had := e.depth[key]; !had || d < old {
				e.depth[key] = d
				changed = true
			}
		}
	}
	return e
}

func (e *explainer) proof(key string) *Proof {
	if bs := e.base[key]; len(bs) > 0 {
		s := bs[0] // supports are in canonical order
		return &Proof{Polarity: s.lit.polarity, Atom: cloneValue(s.lit.atom.val).(map[string]any), SupportID: s.id,
			Provenance: cloneValue(s.provenance).(map[string]any)}
	}
	var ds []*derivedSupport
	for _, s := range e.derived[key] {
		if _, ok := e.supDepth[s.id]; ok { // only supports with a finite proof
			ds = append(ds, s)
		}
	}
	if len(ds) == 0 {
		return nil
	}
	slices.SortStableFunc(ds, func(x, y *derivedSupport) int {
		if c := int(e.supDepth[x.id] - e.supDepth[y.id]); c != 0 {
			return c
		}
		return compareBytes(canonicalString(x.id), canonicalString(y.id))
	})
	s := ds[0]
	pr := &Proof{Polarity: s.lit.polarity, Atom: cloneValue(s.lit.atom.val).(map[string]any), SupportID: s.id,
		Depth: e.supDepth[s.id], RuleID: s.ruleID}
	for _, pk := range s.premiseKeys {
		if sub := e.proof(pk); sub != nil {
			pr.Premises = append(pr.Premises, sub)
		}
	}
	for _, w := range s.witnesses {
		pr.Absences = append(pr.Absences, Absence{Atom: cloneValue(w.atom.val).(map[string]any),
			ReferencedStratum: w.referenced, CompletedStratumDigest: w.completedDigest, WitnessDigest: w.digest})
	}
	return pr
}
