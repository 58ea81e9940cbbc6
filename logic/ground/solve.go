package ground

import (
	"strconv"
)

// prior is a validated prior materialization.
type prior struct {
	through *int64
	digest  string
	base    []*baseSupport
	derived []*derivedSupport
}

func parseBaseSupport(v any, index int, b *bundle) (*baseSupport, *kernelError) {
	path := "/prior_materialization/base_supports/" + strconv.Itoa(index)
	m, ok := exactObject(v, baseSupportKeys...)
	if !ok {
		return nil, reject(CodeMalformedMaterialization, path)
	}
	if m["kind"] != "LBaseSupport" {
		return nil, reject(CodeMalformedMaterialization, path+"/kind")
	}
	if !validID(m["derivation_id"]) {
		return nil, reject(CodeMalformedMaterialization, path+"/derivation_id")
	}
	id := m["derivation_id"].(string)
	lit, kerr := parseLiteral(m["literal"], CodeMalformedMaterialization, path+"/literal")
	if kerr != nil {
		return nil, kerr
	}
	prov, ok := m["provenance_delta"].(map[string]any)
	if !ok || len(prov) == 0 {
		return nil, reject(CodeMalformedMaterialization, path+"/provenance_delta")
	}
	if m["rule_set_version"] != b.ruleSetVersion {
		return nil, reject(CodeRuleSetVersionMismatch, path+"/rule_set_version", "expected", b.ruleSetVersion, "actual", m["rule_set_version"])
	}
	if m["dataflow_version"] != b.dataflowVersion {
		return nil, reject(CodeDataflowVersionMismatch, path+"/dataflow_version", "expected", b.dataflowVersion, "actual", m["dataflow_version"])
	}
	provCopy := cloneValue(prov)
	expected := baseSupportContentDigest(lit, provCopy, b.ruleSetVersion, b.dataflowVersion)
	supplied := m["support_content_digest"]
	if !validDigest(supplied) || supplied != expected {
		return nil, reject(CodeProvenanceIntegrityViolation, path+"/support_content_digest",
			"derivation_id", id, "expected", expected, "actual", supplied)
	}
	return &baseSupport{
		id:             id,
		contentDigest:  expected,
		lit:            lit,
		provenance:     provCopy,
		ruleSetVersion: b.ruleSetVersion,
		dataflow:       b.dataflowVersion,
	}, nil
}

// nestedSets names, per materialization collection, the set-like arrays
// inside each of its elements.
var nestedSets = map[string][]string{
	"derived_supports": {"premise_literal_keys", "default_absence_witnesses"},
	"fact_states":      {"positive_support_ids", "negative_support_ids"},
	"conflicts":        {"positive_support_ids", "negative_support_ids"},
}

var materializationSets = []string{"base_supports", "derived_supports", "fact_states", "conflicts", "stratum_digests"}

// orderedMaterializationView is a shallow copy of a raw materialization with
// its set-like collections (and the sets nested in their elements) sorted by
// the given order.
func orderedMaterializationView(v any, order func(any) []byte) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	for _, field := range materializationSets {
		coll, ok := out[field].([]any)
		if !ok {
			continue
		}
		items := make([]any, len(coll))
		for i, raw := range coll {
			rm, ok := raw.(map[string]any)
			if !ok {
				items[i] = raw
				continue
			}
			c := make(map[string]any, len(rm))
			for k, x := range rm {
				c[k] = x
			}
			for _, nf := range nestedSets[field] {
				if nested, ok := c[nf].([]any); ok {
					c[nf] = sortedBy(nested, order)
				}
			}
			items[i] = c
		}
		out[field] = sortedBy(items, order)
	}
	return out
}

// sortedBy returns a copy of xs sorted by the given key encoding.
func sortedBy(xs []any, key func(any) []byte) []any {
	out := make([]any, len(xs))
	copy(out, xs)
	sortByKey(out, key)
	return out
}

// canonicalKey is the sort key of canonical values: their canonical bytes.
func canonicalKey(v any) []byte { return mustCanonical(v) }

// canonicalOrder orders canonical values by their canonical bytes.
func canonicalOrder(a, b any) int {
	return compareBytes(mustCanonical(a), mustCanonical(b))
}

func parsePrior(v any, logicalTime int64, k *keys, b *bundle) (*prior, *kernelError) {
	if v == nil {
		return nil, nil
	}
	// A valid prior's result does not depend on the order its elements are
	// checked in; only the choice of the first defect does. So try the
	// canonical order first and, only if something is wrong, check again in
	// diagnostic order to report the defect the contract names.
	if _, err := canonical(v); err == nil {
		canon := orderedMaterializationView(v, canonicalKey)
		if p, kerr := parsePriorView(canon, canon, logicalTime, k, b); kerr == nil {
			return p, nil
		}
	}
	view := orderedMaterializationView(v, diagKey)
	if kerr := checkCanonical(view, "/prior_materialization"); kerr != nil {
		return nil, kerr
	}
	return parsePriorView(view, orderedMaterializationView(v, canonicalKey), logicalTime, k, b)
}

// parsePriorView validates a prior whose collections are in the order
// defects are looked for (view) and in canonical order (canon, which the
// digest binds). Both views hold only canonical values.
func parsePriorView(view, canonView any, logicalTime int64, k *keys, b *bundle) (*prior, *kernelError) {
	const path = "/prior_materialization"
	m, ok := exactObject(view, materializationKeys...)
	if !ok {
		return nil, reject(CodeMalformedMaterialization, path)
	}
	switch {
	case m["kind"] != "LMaterialization":
		return nil, reject(CodeMalformedMaterialization, path+"/kind")
	case m["schema_version"] != MaterializationSchema:
		return nil, reject(CodeUnsupportedMaterialization, path+"/schema_version")
	case m["contract_version"] != ContractVersion:
		return nil, reject(CodeUnsupportedContractVersion, path+"/contract_version")
	case m["profile_id"] != ProfileID:
		return nil, reject(CodeUnsupportedProfile, path+"/profile_id")
	case m["canonicalization_version"] != CanonicalizationVersion:
		return nil, reject(CodeUnsupportedCanonicalization, path+"/canonicalization_version")
	case m["rule_bundle_digest"] != b.digest:
		return nil, reject(CodeRuleBundleMismatch, path+"/rule_bundle_digest", "expected", b.digest, "actual", m["rule_bundle_digest"])
	case m["rule_set_version"] != b.ruleSetVersion:
		return nil, reject(CodeRuleSetVersionMismatch, path+"/rule_set_version", "expected", b.ruleSetVersion, "actual", m["rule_set_version"])
	case m["dataflow_version"] != b.dataflowVersion:
		return nil, reject(CodeDataflowVersionMismatch, path+"/dataflow_version", "expected", b.dataflowVersion, "actual", m["dataflow_version"])
	}
	p := &prior{}
	if raw := m["through_logical_time"]; raw != nil {
		t, ok := nonNegInt(raw)
		if !ok {
			return nil, reject(CodeMalformedMaterialization, path+"/through_logical_time")
		}
		if t > logicalTime {
			return nil, reject(CodeLogicalTimeRegression, path+"/through_logical_time", "expected", logicalTime, "actual", t)
		}
		p.through = &t
	}
	rawBase, ok := m["base_supports"].([]any)
	if !ok {
		return nil, reject(CodeMalformedMaterialization, path+"/base_supports")
	}
	for i, raw := range rawBase {
		s, kerr := parseBaseSupport(raw, i, b)
		if kerr != nil {
			return nil, kerr
		}
		p.base = append(p.base, s)
	}
	sortByKey(p.base, (*baseSupport).key)
	seen := map[string]bool{}
	for _, s := range p.base {
		if seen[s.id] {
			return nil, reject(CodeProvenanceIntegrityViolation, path+"/base_supports", "invariant", "unique_base_support_identity")
		}
		seen[s.id] = true
	}
	// The digest binds the canonical (byte-sorted) form of the collections;
	// a caller's element order is not part of the materialization.
	canon := canonView.(map[string]any)
	withoutBytes := mustCanonical(withoutKey(canon, "materialization_digest"))
	expected := materializationDigest(withoutBytes)
	supplied := m["materialization_digest"]
	if !validDigest(supplied) || supplied != expected {
		return nil, reject(CodeProvenanceIntegrityViolation, path+"/materialization_digest", "expected", expected, "actual", supplied)
	}
	d, kerr := derive(k, b, p.base, directEvaluator{})
	if kerr != nil {
		return nil, kerr
	}
	// The digests agree, so the prior equals its clean recomputation
	// exactly when the rest of the bytes do.
	if _, _, clean := materializationWireAndBytes(b, p.through, p.base, d); compareBytes(withoutBytes, clean) != 0 {
		return nil, reject(CodeProvenanceIntegrityViolation, path, "invariant", "materialization_equals_clean_projection")
	}
	p.digest = expected
	p.derived = d.derived
	return p, nil
}

func materializationWire(b *bundle, through *int64, base []*baseSupport, d *derivation) map[string]any {
	m, _, _ := materializationWireAndBytes(b, through, base, d)
	return m
}

// materializationWireAndBytes builds the materialization wire, its full
// canonical bytes, and the canonical bytes of the materialization without
// its digest (the digest's preimage content). The bytes come from a twin
// that reuses the cached canonical bytes of every support, fact state and
// conflict instead of encoding their wires again.
func materializationWireAndBytes(b *bundle, through *int64, base []*baseSupport, d *derivation) (m map[string]any, full, without []byte) {
	bw, braw := make([]any, len(base)), make([]any, len(base))
	for i, s := range base {
		bw[i], braw[i] = s.wire(), rawCanonical(s.key())
	}
	dw, draw := make([]any, len(d.derived)), make([]any, len(d.derived))
	for i, s := range d.derived {
		dw[i], draw[i] = s.wire(), rawCanonical(s.key())
	}
	var t any
	if through != nil {
		t = *through
	}
	twin := map[string]any{
		"kind":                     "LMaterialization",
		"schema_version":           MaterializationSchema,
		"contract_version":         ContractVersion,
		"profile_id":               ProfileID,
		"rule_bundle_digest":       b.digest,
		"rule_set_version":         b.ruleSetVersion,
		"dataflow_version":         b.dataflowVersion,
		"canonicalization_version": CanonicalizationVersion,
		"through_logical_time":     t,
		"base_supports":            braw,
		"derived_supports":         draw,
		"fact_states":              d.factStatesRaw,
		"conflicts":                d.conflictsRaw,
		"stratum_digests":          orEmpty(d.stratumWires),
	}
	without = mustCanonical(twin)
	digest := materializationDigest(without)
	twin["materialization_digest"] = digest
	full = mustCanonical(twin)
	m = make(map[string]any, len(twin))
	for k, v := range twin {
		m[k] = v
	}
	m["base_supports"], m["derived_supports"], m["fact_states"], m["conflicts"] = bw, dw, d.factStates, d.conflicts
	return m, full, without
}

// materializationDigest is the digest of a materialization given the
// canonical bytes of its members other than the digest itself.
func materializationDigest(without []byte) string {
	return digestOf(map[string]any{
		"kind":             "M2MaterializationPreimage",
		"contract_version": ContractVersion,
		"materialization_without_materialization_digest": rawCanonical(without),
	})
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func causationID(logicalTime int64, bundleDigest string, priorDigest *string, inputDigests []string) string {
	var pd any
	if priorDigest != nil {
		pd = *priorDigest
	}
	return "logic:" + hexOf(map[string]any{
		"kind":                         "M2InvocationPreimage",
		"contract_version":             ContractVersion,
		"logical_time":                 logicalTime,
		"rule_bundle_digest":           bundleDigest,
		"prior_materialization_digest": pd,
		"ordered_input_delta_digests":  stringsToAny(inputDigests),
	})
}

func derivedDeltaWire(s *derivedSupport, diff, logicalTime int64, causation string) map[string]any {
	wd := make([]string, len(s.witnesses))
	for i, w := range s.witnesses {
		wd[i] = w.digest
	}
	sortStrings(wd)
	return map[string]any{
		"kind":           "LFactDeltaInput",
		"schema_version": InputSchemaVersion,
		"polarity":       s.lit.polarity,
		"delta": map[string]any{
			"kind":          "FactDelta",
			"tuple":         s.lit.atom.val,
			"logical_time":  logicalTime,
			"diff":          diff,
			"derivation_id": s.id,
			"causation_id":  causation,
			"provenance_delta": map[string]any{
				"kind":                            "LDerivedProvenanceDelta",
				"rule_id":                         s.ruleID,
				"rule_digest":                     s.ruleDigest,
				"premise_literal_keys":            stringsToAny(s.premiseKeys),
				"default_absence_witness_digests": stringsToAny(wd),
				"support_content_digest":          s.contentDigest,
			},
			"rule_set_version": s.ruleSetVersion,
			"dataflow_version": s.dataflow,
		},
	}
}

// derivedDeltas is the net change of derived supports between two
// materializations: -1 for each support that disappeared, +1 for each new
// one. Supports are content-addressed, so a kept identity has kept content.
func derivedDeltas(old, next []*derivedSupport, logicalTime int64, causation string) ([]any, *kernelError) {
	oldByID := make(map[string]*derivedSupport, len(old))
	for _, s := range old {
		oldByID[s.id] = s
	}
	newByID := make(map[string]*derivedSupport, len(next))
	for _, s := range next {
		newByID[s.id] = s
	}
	var out []any
	for _, s := range old {
		n, ok := newByID[s.id]
		if !ok {
			out = append(out, derivedDeltaWire(s, -1, logicalTime, causation))
			continue
		}
		if compareBytes(s.key(), n.key()) != 0 {
			return nil, reject(CodeInvariantViolation, "/next_materialization/derived_supports",
				"derivation_id", s.id, "invariant", "stable_derived_identity_content")
		}
	}
	for _, s := range next {
		if _, ok := oldByID[s.id]; !ok {
			out = append(out, derivedDeltaWire(s, 1, logicalTime, causation))
		}
	}
	sortByKey(out, func(v any) []byte { return mustCanonical(v) })
	return orEmpty(out), nil
}

// invocation is one parsed and applied solve call, shared by the full and
// the incremental paths.
type invocation struct {
	k            *keys
	b            *bundle
	prior        *prior
	nextBase     []*baseSupport
	inputDigests []string
}

// prepare validates every argument in the contract's precedence and applies
// the batch to the prior ledger.
func prepare(priorMat, ruleBundle, inputs any, logicalTime int64, lt **int64, bd **string) (*invocation, *kernelError) {
	if logicalTime < 0 {
		return nil, reject(CodeLogicalTimeMismatch, "/logical_time", "invariant", "nonnegative_int64_logical_time")
	}
	t := logicalTime
	*lt = &t
	k := newKeys()
	b, kerr := parseBundle(ruleBundle, k)
	if kerr != nil {
		return nil, kerr
	}
	*bd = &b.digest
	raw, ok := inputs.([]any)
	if !ok {
		return nil, reject(CodeMalformedFactDeltaInput, "/fact_delta_inputs")
	}
	if len(raw) > MaxFactDeltaInputs {
		return nil, reject(CodeMalformedFactDeltaInput, "/fact_delta_inputs",
			"limit", int64(MaxFactDeltaInputs), "observed", int64(len(raw)))
	}
	p, kerr := parsePrior(priorMat, logicalTime, k, b)
	if kerr != nil {
		return nil, kerr
	}
	// Only when some input is outside the canonical domain does the order
	// matter (which one is reported); then look in diagnostic order.
	for _, item := range raw {
		if _, err := canonical(item); err != nil {
			for i, item := range diagSorted(raw) {
				if kerr := checkCanonical(item, "/fact_delta_inputs/"+strconv.Itoa(i)); kerr != nil {
					return nil, kerr
				}
			}
		}
	}
	ordered := sortedBy(raw, canonicalKey)
	parsed := make([]*parsedInput, len(ordered))
	for i, item := range ordered {
		in, kerr := parseInput(item, i, logicalTime, b)
		if kerr != nil {
			return nil, kerr
		}
		parsed[i] = in
	}
	var priorBase []*baseSupport
	var priorDerived []*derivedSupport
	if p != nil {
		priorBase, priorDerived = p.base, p.derived
	}
	next, digests, kerr := applyInputs(parsed, priorBase, priorDerived)
	if kerr != nil {
		return nil, kerr
	}
	return &invocation{k: k, b: b, prior: p, nextBase: next, inputDigests: digests}, nil
}

// fixpoint assembles the LFixpointResult wire of an evaluated invocation.
func (inv *invocation) fixpoint(d *derivation, logicalTime int64) (map[string]any, *kernelError) {
	t := logicalTime
	next, nextBytes, _ := materializationWireAndBytes(inv.b, &t, inv.nextBase, d)
	var priorDigest *string
	var priorDerived []*derivedSupport
	var pd any
	if inv.prior != nil {
		priorDigest = &inv.prior.digest
		priorDerived = inv.prior.derived
		pd = inv.prior.digest
	}
	cause := causationID(logicalTime, inv.b.digest, priorDigest, inv.inputDigests)
	deltas, kerr := derivedDeltas(priorDerived, d.derived, logicalTime, cause)
	if kerr != nil {
		return nil, kerr
	}
	res := map[string]any{
		"kind":                         "LFixpointResult",
		"schema_version":               ResultSchemaVersion,
		"contract_version":             ContractVersion,
		"logical_time":                 logicalTime,
		"rule_bundle_digest":           inv.b.digest,
		"prior_materialization_digest": pd,
		"input_delta_digests":          stringsToAny(inv.inputDigests),
		"next_materialization":         rawCanonical(nextBytes), // hashed as is
		"derived_fact_deltas":          deltas,
		"stats": map[string]any{
			"evaluation_mode":       "full_recompute",
			"rule_evaluation_count": d.evaluations,
			"rule_firing_count":     d.firings,
			"worklist_pop_count":    d.pops,
			"max_derivation_depth":  d.maxDepth,
		},
	}
	res["fixpoint_digest"] = digestOf(map[string]any{
		"kind":             "M2FixpointPreimage",
		"contract_version": ContractVersion,
		"fixpoint_result_without_fixpoint_digest": withoutKey(res, "fixpoint_digest"),
	})
	res["next_materialization"] = next
	return res, nil
}

// Solve is solve_l of flrh-l-kernel/1 for the flrh-l-ground-stratified/1
// profile. Its arguments are decoded JSON values (map[string]any, []any,
// string, int64, bool, nil): prior is an LMaterialization or nil, ruleBundle
// an LRuleBundle, inputs a list of LFactDeltaInput. It returns a fresh
// LFixpointResult wire, or a rejection and no partial state. It never
// modifies its arguments and never panics.
func Solve(prior, ruleBundle, inputs any, logicalTime int64) (result map[string]any, rej *Rejection) {
	var lt *int64
	var bd *string
	defer func() {
		if r := recover(); r != nil {
			result = nil
			rej = closedFailure(KindRejection, r, lt, bd)
		}
	}()
	inv, kerr := prepare(prior, ruleBundle, inputs, logicalTime, &lt, &bd)
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, lt, bd)
	}
	d, kerr := derive(inv.k, inv.b, inv.nextBase, directEvaluator{})
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, lt, bd)
	}
	res, kerr := inv.fixpoint(d, logicalTime)
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, lt, bd)
	}
	return cloneValue(res).(map[string]any), nil
}

func closedFailure(kind string, r any, lt *int64, bd *string) *Rejection {
	inv := "closed_kernel_failure"
	if p, ok := r.(invariantPanic); ok {
		inv = p.invariant
	}
	return (&kernelError{code: CodeInvariantViolation, path: "", context: map[string]any{"invariant": inv}}).rejection(kind, lt, bd)
}
