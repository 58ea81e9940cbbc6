package ground

import "slices"

// derivation is the complete projection of a ledger of base supports through
// a bundle: derived supports, fact states, conflicts, stratum digests and the
// evaluation counters.
type derivation struct {
	derived       []*derivedSupport
	factStates    []any // wires
	conflicts     []any
	factStatesRaw []any // the same, as rawCanonical bytes for preimages
	conflictsRaw  []any
	stratumWires  []any
	evaluations   int64
	firings       int64
	pops          int64
	maxDepth      int64
}

// outcome is the result of evaluating one rule body against the current
// worklist state: unsatisfied, or satisfied at a depth with a support.
type outcome struct {
	satisfied bool
	depth     int64
	support   *derivedSupport
}

// evalState is the worklist state a rule body is evaluated against.
type evalState struct {
	k                 *keys
	b                 *bundle
	present           map[string]bool  // literal keys with support so far
	depths            map[string]int64 // shortest known depth per literal key
	completedPresence map[int64]map[string]bool
	completedDigests  map[int64]string
	fired             map[string]bool // rule ids that already gave a support
}

// evaluateBody is the pure rule-body semantics: every required literal
// present, and every default-negated atom without positive support in its
// completed lower stratum.
func (st *evalState) evaluateBody(r *rule) outcome {
	for _, l := range r.required {
		if !st.present[st.k.literalKey(l)] {
			return outcome{}
		}
	}
	var witnesses []absenceWitness
	for _, d := range r.defaults {
		completed, ok := st.completedPresence[d.referenced]
		digest, ok2 := st.completedDigests[d.referenced]
		if !ok || !ok2 {
			panic(invariantPanic{"referenced_stratum_must_be_completed"})
		}
		if completed[st.k.literalKey(literal{polarity: positive, atom: d.atom})] {
			return outcome{}
		}
		witnesses = append(witnesses, st.k.absenceWitness(d.atom, d.referenced, digest))
	}
	depth := int64(1)
	var deepest int64
	for _, l := range r.required {
		deepest = max(deepest, st.depths[st.k.literalKey(l)])
	}
	depth += deepest
	return outcome{satisfied: true, depth: depth, support: st.k.derivedSupportFor(r, witnesses, st.b)}
}

// bodyEvaluator evaluates a rule body for the worklist. The full evaluator
// calls evaluateBody; the incremental one answers from its cache first.
type bodyEvaluator interface {
	evaluate(st *evalState, r *rule, trigger string) outcome
}

type directEvaluator struct{}

func (directEvaluator) evaluate(st *evalState, r *rule, _ string) outcome { return st.evaluateBody(r) }

const defaultOnlyTrigger = "default-only"

// derive computes the bounded least fixpoint stratum by stratum with a
// deterministic worklist of literal keys (popped in canonical order), the
// way the contract's counters are defined.
func derive(k *keys, b *bundle, base []*baseSupport, ev bodyEvaluator) (*derivation, *kernelError) {
	baseIDs := make(map[string]bool, len(base))
	for _, s := range base {
		if baseIDs[s.id] {
			return nil, reject(CodeInvariantViolation, "/next_materialization/base_supports", "invariant", "unique_base_support_identity")
		}
		baseIDs[s.id] = true
	}
	st := &evalState{
		k:                 k,
		b:                 b,
		present:           map[string]bool{},
		depths:            map[string]int64{},
		completedPresence: map[int64]map[string]bool{},
		completedDigests:  map[int64]string{},
		fired:             map[string]bool{},
	}
	for _, s := range base {
		key := k.literalKey(s.lit)
		st.present[key] = true
		st.depths[key] = 0
	}
	var strata []int64
	for _, r := range b.rules {
		strata = append(strata, r.stratum)
		for _, d := range r.defaults {
			strata = append(strata, d.referenced)
		}
	}
	slices.Sort(strata)
	strata = slices.Compact(strata)

	derivedByRule := map[string]*derivedSupport{}
	derivedDepth := map[string]int64{}
	var derivedOrder []*derivedSupport // insertion order; sorted when read
	out := &derivation{}

	for _, stratum := range strata {
		var current []*rule
		for _, r := range b.rules {
			if r.stratum == stratum {
				current = append(current, r)
			}
		}
		requiredIndex := map[string][]*rule{}
		var defaultOnly []*rule
		for _, r := range current {
			if len(r.required) == 0 {
				defaultOnly = append(defaultOnly, r)
				continue
			}
			for _, l := range r.required {
				key := k.literalKey(l)
				requiredIndex[key] = append(requiredIndex[key], r)
			}
		}
		// Rules are already in canonical order; the index keeps it.
		queue := make([]string, 0, len(st.present))
		for key := range st.present {
			queue = append(queue, key)
		}
		slices.Sort(queue)
		queued := make(map[string]bool, len(queue))
		for _, key := range queue {
			queued[key] = true
		}
		enqueue := func(key string) {
			if queued[key] {
				return
			}
			i, _ := slices.BinarySearch(queue, key)
			queue = slices.Insert(queue, i, key)
			queued[key] = true
		}
		var failure *kernelError
		evaluate := func(r *rule, trigger string) {
			out.evaluations++
			o := ev.evaluate(st, r, trigger)
			if !o.satisfied {
				return
			}
			headKey := k.literalKey(r.head)
			if _, ok := derivedByRule[r.id]; !ok {
				if baseIDs[o.support.id] {
					failure = reject(CodeDerivedSupportTarget, "/fact_delta_inputs", "derivation_id", o.support.id)
					return
				}
				derivedByRule[r.id] = o.support
				st.fired[r.id] = true
				derivedDepth[r.id] = o.depth
				derivedOrder = append(derivedOrder, o.support)
				out.firings++
				if out.firings > b.maxFirings {
					failure = reject(CodeRuleBudgetExhausted, "/rule_bundle/limits/max_rule_firings",
						"limit", b.maxFirings, "observed", out.firings)
					return
				}
				old, had := st.depths[headKey]
				st.present[headKey] = true
				if !had || o.depth < old {
					st.depths[headKey] = o.depth
					enqueue(headKey)
				}
				return
			}
			if o.depth < derivedDepth[r.id] {
				derivedDepth[r.id] = o.depth
				if old, had := st.depths[headKey]; !had || o.depth < old {
					st.depths[headKey] = o.depth
					enqueue(headKey)
				}
			}
		}
		for _, r := range defaultOnly {
			if evaluate(r, defaultOnlyTrigger); failure != nil {
				return nil, failure
			}
		}
		for len(queue) > 0 {
			key := queue[0]
			queue = queue[1:]
			delete(queued, key)
			out.pops++
			for _, r := range requiredIndex[key] {
				if evaluate(r, key); failure != nil {
					return nil, failure
				}
			}
		}
		sofar := sortedDerived(derivedOrder)
		digest, kerr := stratumDigest(k, b, stratum, base, sofar)
		if kerr != nil {
			return nil, kerr
		}
		st.completedDigests[stratum] = digest
		snapshot := make(map[string]bool, len(st.present))
		for key := range st.present {
			snapshot[key] = true
		}
		st.completedPresence[stratum] = snapshot
		out.stratumWires = append(out.stratumWires, map[string]any{"kind": "LStratumDigest", "stratum": stratum, "digest": digest})
	}
	out.derived = sortedDerived(derivedOrder)
	for _, s := range out.derived {
		if baseIDs[s.id] {
			return nil, reject(CodeInvariantViolation, "/next_materialization/derived_supports", "invariant", "globally_unique_support_identity")
		}
	}
	for _, r := range b.rules {
		if d, ok := derivedDepth[r.id]; ok {
			out.maxDepth = max(out.maxDepth, d)
		}
	}
	if out.maxDepth > b.maxDepth {
		return nil, reject(CodeDerivationDepthExceeded, "/rule_bundle/limits/max_derivation_depth",
			"limit", b.maxDepth, "observed", out.maxDepth)
	}
	p, kerr := projectFacts(k, b, base, out.derived)
	if kerr != nil {
		return nil, kerr
	}
	out.factStates, out.conflicts, out.factStatesRaw, out.conflictsRaw = p.states, p.conflicts, p.statesRaw, p.conflictsRaw
	sortByKey(out.stratumWires, func(v any) []byte { return mustCanonical(v) })
	return out, nil
}

func sortedDerived(ds []*derivedSupport) []*derivedSupport {
	out := slices.Clone(ds)
	sortByKey(out, (*derivedSupport).key)
	return out
}

// projectFacts gives every query atom and every supported atom its state,
// and every BOTH state its conflict object.
func projectFacts(k *keys, b *bundle, base []*baseSupport, derived []*derivedSupport) (*projection, *kernelError) {
	type sides struct {
		atom     atom
		pos, neg []string
	}
	byAtom := map[string]*sides{}
	var order []string
	touch := func(a atom) *sides {
		s, ok := byAtom[a.key]
		if !ok {
			s = &sides{atom: a}
			byAtom[a.key] = s
			order = append(order, a.key)
		}
		return s
	}
	for _, a := range b.queries {
		touch(a)
	}
	add := func(l literal, id string) {
		s := touch(l.atom)
		if l.polarity == positive {
			s.pos = append(s.pos, id)
		} else {
			s.neg = append(s.neg, id)
		}
	}
	for _, s := range base {
		add(s.lit, s.id)
	}
	for _, s := range derived {
		add(s.lit, s.id)
	}
	slices.Sort(order)
	var states, conflicts []any
	for _, key := range order {
		s := byAtom[key]
		sortStrings(s.pos)
		sortStrings(s.neg)
		if hasDuplicate(s.pos) || hasDuplicate(s.neg) {
			return nil, reject(CodeInvariantViolation, "/next_materialization", "invariant", "unique_support_identity_per_fact_polarity")
		}
		state := TruthState(len(s.pos), len(s.neg))
		fk := k.factKey(s.atom)
		states = append(states, map[string]any{
			"kind":                 "LFactState",
			"fact_key":             fk,
			"atom":                 s.atom.val,
			"state":                state,
			"positive_support_ids": stringsToAny(s.pos),
			"negative_support_ids": stringsToAny(s.neg),
		})
		if state == Both {
			h := hexOf(map[string]any{
				"kind":                         "M2ConflictPreimage",
				"contract_version":             ContractVersion,
				"fact_key":                     fk,
				"atom":                         s.atom.val,
				"ordered_positive_support_ids": stringsToAny(s.pos),
				"ordered_negative_support_ids": stringsToAny(s.neg),
			})
			conflicts = append(conflicts, map[string]any{
				"kind":                 "LConflict",
				"conflict_id":          "conflict:" + h,
				"fact_key":             fk,
				"atom":                 s.atom.val,
				"positive_support_ids": stringsToAny(s.pos),
				"negative_support_ids": stringsToAny(s.neg),
			})
		}
	}
	p := &projection{}
	p.states, p.statesRaw = sortedWithBytes(states)
	p.conflicts, p.conflictsRaw = sortedWithBytes(conflicts)
	return p, nil
}

// projection is the fact states and conflicts of a ledger, as wires and as
// their canonical bytes, both in canonical order.
type projection struct {
	states, statesRaw, conflicts, conflictsRaw []any
}

// sortedWithBytes sorts wires by their canonical bytes and returns them with
// those bytes alongside (as rawCanonical), so hashing need not encode them
// again.
func sortedWithBytes(wires []any) ([]any, []any) {
	type keyed struct {
		raw  []byte
		wire any
	}
	ks := make([]keyed, len(wires))
	for i, w := range wires {
		ks[i] = keyed{mustCanonical(w), w}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareBytes(a.raw, b.raw) })
	out, raw := make([]any, len(ks)), make([]any, len(ks))
	for i, k := range ks {
		out[i], raw[i] = k.wire, rawCanonical(k.raw)
	}
	return out, raw
}

func orEmpty(xs []any) []any {
	if xs == nil {
		return []any{}
	}
	return xs
}

func hasDuplicate(ss []string) bool {
	for i := 1; i < len(ss); i++ {
		if ss[i] == ss[i-1] {
			return true
		}
	}
	return false
}

func stratumDigest(k *keys, b *bundle, stratum int64, base []*baseSupport, derived []*derivedSupport) (string, *kernelError) {
	p, kerr := projectFacts(k, b, base, derived)
	if kerr != nil {
		return "", kerr
	}
	bw := make([]any, len(base))
	for i, s := range base {
		bw[i] = rawCanonical(s.key())
	}
	dw := make([]any, len(derived))
	for i, s := range derived {
		dw[i] = rawCanonical(s.key())
	}
	return digestOf(map[string]any{
		"kind":                     "M2StratumPreimage",
		"contract_version":         ContractVersion,
		"profile_id":               ProfileID,
		"rule_bundle_digest":       b.digest,
		"stratum":                  stratum,
		"ordered_base_supports":    bw,
		"ordered_derived_supports": dw,
		"ordered_fact_states":      p.statesRaw,
	}), nil
}
