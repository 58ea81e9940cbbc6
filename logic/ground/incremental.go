package ground

import (
	"slices"
	"strconv"

	"flrh.dev/flrh/cjson"
)

// Versions and limits of the flrh-l-persistent-incremental/1 contract.
const (
	PersistentContract         = "flrh-l-persistent-incremental/1"
	PersistentCheckpointSchema = "flrh-l-persistent-checkpoint/1"
	PersistentResultSchema     = "flrh-l-persistent-result/1"

	MaxActiveBaseSupports = 10000
	MaxCacheEntries       = 65536
	MaxBodyEvaluations    = 65536
	MaxCheckpointBytes    = 67108864
)

// Persistent rejection codes, in precedence order after an inherited
// flrh-l-kernel/1 rejection.
const (
	CodeMalformedCheckpoint         = "MALFORMED_CHECKPOINT"
	CodeUnsupportedPersistentSchema = "UNSUPPORTED_PERSISTENT_SCHEMA"
	CodeCheckpointDigestMismatch    = "CHECKPOINT_DIGEST_MISMATCH"
	CodeCheckpointBindingMismatch   = "CHECKPOINT_BINDING_MISMATCH"
	CodePersistentBoundsExceeded    = "PERSISTENT_BOUNDS_EXCEEDED"
	CodeEquivalenceViolation        = "EQUIVALENCE_VIOLATION"
)

var (
	checkpointKeys = []string{"kind", "schema_version", "contract_version", "profile_id",
		"m2_contract_version", "m2_profile_id", "canonicalization_version", "rule_bundle_digest",
		"through_logical_time", "materialization", "materialization_digest", "evaluation_cache",
		"checkpoint_digest"}
	cacheEntryKeys   = []string{"kind", "context", "context_digest", "outcome", "entry_digest"}
	cacheContextKeys = []string{"kind", "rule_id", "rule_digest", "rule_bundle_digest", "stratum",
		"trigger", "existing_support", "required_literals", "default_positive_presence"}
)

// cachedEvaluator answers rule-body evaluations from the previous accepted
// step's cache when the whole evaluation context (rule, bundle, stratum,
// trigger, required-literal presence and depth, default-negated presence and
// the completed lower-stratum digest) is identical, and records every
// evaluation as the next cache.
type cachedEvaluator struct {
	prior                  map[string]map[string]any // by context digest
	next                   []any
	reused                 []string
	hits, misses, executed int64
}

func (c *cachedEvaluator) context(st *evalState, r *rule, trigger string) map[string]any {
	req := make([]any, len(r.required))
	for i, l := range r.required {
		key := st.k.literalKey(l)
		var depth any
		if d, ok := st.depths[key]; ok {
			depth = d
		}
		req[i] = map[string]any{"literal_key": key, "present": st.present[key], "depth": depth}
	}
	defs := make([]any, len(r.defaults))
	for i, d := range r.defaults {
		key := st.k.literalKey(literal{polarity: positive, atom: d.atom})
		var completed any
		if cd, ok := st.completedDigests[d.referenced]; ok {
			completed = cd
		}
		defs[i] = map[string]any{
			"positive_literal_key":           key,
			"positive_present":               st.completedPresence[d.referenced][key],
			"referenced_stratum":             d.referenced,
			"completed_lower_stratum_digest": completed,
		}
	}
	return map[string]any{
		"kind":                      "M2ILCacheContext",
		"rule_id":                   r.id,
		"rule_digest":               r.digest,
		"rule_bundle_digest":        st.b.digest,
		"stratum":                   r.stratum,
		"trigger":                   trigger,
		"existing_support":          st.fired[r.id],
		"required_literals":         req,
		"default_positive_presence": defs,
	}
}

func outcomeWire(o outcome) map[string]any {
	if !o.satisfied {
		return map[string]any{"status": "unsatisfied", "depth": nil, "support": nil}
	}
	return map[string]any{"status": "satisfied", "depth": o.depth, "support": o.support.wire()}
}

func (c *cachedEvaluator) evaluate(st *evalState, r *rule, trigger string) outcome {
	ctx := c.context(st, r, trigger)
	cd := digestOf(ctx)
	var ow map[string]any
	var o outcome
	if cached, ok := c.prior[cd]; ok {
		ow = cached["outcome"].(map[string]any)
		o = outcomeFromWire(ow)
		c.hits++
		c.reused = append(c.reused, cached["entry_digest"].(string))
	} else {
		o = st.evaluateBody(r)
		ow = outcomeWire(o)
		c.misses++
		c.executed++
	}
	entry := map[string]any{
		"kind":           "M2ILEvaluationCacheEntry",
		"context":        ctx,
		"context_digest": cd,
		"outcome":        ow,
	}
	entry["entry_digest"] = digestOf(map[string]any{
		"kind":                       "M2ILCacheEntryPreimage",
		"contract_version":           PersistentContract,
		"entry_without_entry_digest": withoutKey(entry, "entry_digest"),
	})
	c.next = append(c.next, entry)
	return o
}

// outcomeFromWire restores a validated cached outcome.
func outcomeFromWire(w map[string]any) outcome {
	if w["status"] != "satisfied" {
		return outcome{}
	}
	depth, _ := asInt(w["depth"])
	return outcome{satisfied: true, depth: depth, support: derivedFromWire(w["support"].(map[string]any))}
}

// derivedFromWire restores a derived support from a wire that was already
// checked against its clean reconstruction.
func derivedFromWire(w map[string]any) *derivedSupport {
	lw := w["literal"].(map[string]any)
	lit := literal{polarity: lw["polarity"].(string), atom: atomOf(lw["atom"])}
	var premise []string
	for _, k := range w["premise_literal_keys"].([]any) {
		premise = append(premise, k.(string))
	}
	var ws []absenceWitness
	for _, raw := range w["default_absence_witnesses"].([]any) {
		x := raw.(map[string]any)
		ref, _ := asInt(x["referenced_stratum"])
		ws = append(ws, absenceWitness{
			factKey:         x["fact_key"].(string),
			atom:            atomOf(x["atom"]),
			referenced:      ref,
			completedDigest: x["completed_stratum_digest"].(string),
			digest:          x["witness_digest"].(string),
		})
	}
	return &derivedSupport{
		id:             w["derivation_id"].(string),
		contentDigest:  w["support_content_digest"].(string),
		lit:            lit,
		ruleID:         w["rule_id"].(string),
		ruleDigest:     w["rule_digest"].(string),
		premiseKeys:    premise,
		witnesses:      ws,
		ruleSetVersion: w["rule_set_version"].(string),
		dataflow:       w["dataflow_version"].(string),
	}
}

func atomOf(v any) atom {
	c := cloneValue(v)
	return atom{key: string(mustCanonical(c)), val: c}
}

func persistentReject(code, path string, lt int64, bundleDigest any) *Rejection {
	t := lt
	var bd *string
	if s, ok := bundleDigest.(string); ok {
		bd = &s
	}
	return &Rejection{Kind: KindPersistentRejection, Code: code, Path: path, LogicalTime: &t, RuleBundleDigest: bd, Context: map[string]any{}}
}

// validateCheckpoint checks a prior checkpoint's shape, versions, digest,
// bindings and every cache entry, and returns its materialization and cache.
func validateCheckpoint(cp any, ruleBundle any, lt int64, k *keys, lim persistentLimits) (map[string]any, []any, *Rejection) {
	var bd any
	if m, ok := ruleBundle.(map[string]any); ok {
		bd = m["rule_bundle_digest"]
	}
	rej := func(code, path string) (map[string]any, []any, *Rejection) {
		return nil, nil, persistentReject(code, path, lt, bd)
	}
	c, ok := exactObject(cp, checkpointKeys...)
	if !ok {
		return rej(CodeMalformedCheckpoint, "/prior_checkpoint")
	}
	for _, f := range []struct{ field, want string }{
		{"schema_version", PersistentCheckpointSchema},
		{"contract_version", PersistentContract},
		{"profile_id", PersistentContract},
		{"m2_contract_version", ContractVersion},
		{"m2_profile_id", ProfileID},
		{"canonicalization_version", CanonicalizationVersion},
	} {
		if c[f.field] != f.want {
			return rej(CodeUnsupportedPersistentSchema, "/prior_checkpoint/"+f.field)
		}
	}
	pre := map[string]any{
		"kind":                                 "M2ILCheckpointPreimage",
		"contract_version":                     PersistentContract,
		"checkpoint_without_checkpoint_digest": withoutKey(c, "checkpoint_digest"),
	}
	raw, cerr := canonical(pre)
	if cerr != nil {
		return rej(CodeMalformedCheckpoint, "/prior_checkpoint")
	}
	if c["checkpoint_digest"] != digestOfBytes(raw) {
		return rej(CodeCheckpointDigestMismatch, "/prior_checkpoint/checkpoint_digest")
	}
	mat, ok := c["materialization"].(map[string]any)
	if !ok || c["materialization_digest"] != mat["materialization_digest"] {
		return rej(CodeCheckpointBindingMismatch, "/prior_checkpoint/materialization_digest")
	}
	if c["rule_bundle_digest"] != bd {
		return rej(CodeCheckpointBindingMismatch, "/prior_checkpoint/rule_bundle_digest")
	}
	if !sameInt(c["through_logical_time"], mat["through_logical_time"]) {
		return rej(CodeCheckpointBindingMismatch, "/prior_checkpoint/through_logical_time")
	}
	cache, ok := c["evaluation_cache"].([]any)
	if !ok {
		return rej(CodeMalformedCheckpoint, "/prior_checkpoint/evaluation_cache")
	}
	for i := 1; i < len(cache); i++ {
		if canonicalOrder(cache[i-1], cache[i]) > 0 {
			return rej(CodeCheckpointBindingMismatch, "/prior_checkpoint/evaluation_cache")
		}
	}
	b, kerr := parseBundle(ruleBundle, k)
	if kerr != nil {
		// Solve accepted this bundle a moment ago; a failure here is internal.
		panic(invariantPanic{"bundle_revalidation"})
	}
	seen := map[string]bool{}
	for i, rawEntry := range cache {
		root := "/prior_checkpoint/evaluation_cache/" + strconv.Itoa(i)
		e, ok := exactObject(rawEntry, cacheEntryKeys...)
		if !ok {
			return rej(CodeMalformedCheckpoint, root)
		}
		if e["context_digest"] != digestOf(e["context"]) {
			return rej(CodeCheckpointBindingMismatch, root+"/context_digest")
		}
		cd := e["context_digest"].(string)
		if seen[cd] {
			return rej(CodeMalformedCheckpoint, root+"/context_digest")
		}
		seen[cd] = true
		expected := digestOf(map[string]any{
			"kind":                       "M2ILCacheEntryPreimage",
			"contract_version":           PersistentContract,
			"entry_without_entry_digest": withoutKey(e, "entry_digest"),
		})
		if e["entry_digest"] != expected {
			return rej(CodeCheckpointBindingMismatch, root+"/entry_digest")
		}
		if p := cacheWireError(e, root, b, k); p != "" {
			return rej(CodeMalformedCheckpoint, p)
		}
	}
	baseCount := 0
	if bs, ok := mat["base_supports"].([]any); ok {
		baseCount = len(bs)
	}
	if len(cache) > lim.cacheEntries || baseCount > lim.activeBase || len(mustCanonical(c)) > lim.checkpointBytes {
		return rej(CodePersistentBoundsExceeded, "/prior_checkpoint")
	}
	return mat, cache, nil
}

func digestOfBytes(b []byte) string { return cjson.Digest(b) }

func sameInt(a, b any) bool {
	x, ok1 := asInt(a)
	y, ok2 := asInt(b)
	if ok1 && ok2 {
		return x == y
	}
	return a == nil && b == nil
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

// cacheWireError returns the pointer of the first malformed part of a cache
// entry, or "". It evaluates no rule: a satisfied outcome is checked against
// the support its own context implies.
func cacheWireError(e map[string]any, root string, b *bundle, k *keys) string {
	if e["kind"] != "M2ILEvaluationCacheEntry" {
		return root + "/kind"
	}
	ctx, ok := exactObject(e["context"], cacheContextKeys...)
	if !ok {
		return root + "/context"
	}
	if ctx["kind"] != "M2ILCacheContext" {
		return root + "/context/kind"
	}
	var r *rule
	for _, x := range b.rules {
		if ctx["rule_id"] == x.id {
			r = x
		}
	}
	if r == nil {
		return root + "/context/rule_id"
	}
	if ctx["rule_digest"] != r.digest {
		return root + "/context/rule_digest"
	}
	if ctx["rule_bundle_digest"] != b.digest {
		return root + "/context/rule_bundle_digest"
	}
	if s, ok := asInt(ctx["stratum"]); !ok || s != r.stratum {
		return root + "/context/stratum"
	}
	if !isBool(ctx["existing_support"]) {
		return root + "/context/existing_support"
	}
	req, ok := ctx["required_literals"].([]any)
	if !ok || len(req) != len(r.required) {
		return root + "/context/required_literals"
	}
	expectedKeys := make([]string, len(r.required))
	for i, l := range r.required {
		expectedKeys[i] = k.literalKey(l)
	}
	var deepest int64
	allPresent := true
	for i, raw := range req {
		p := root + "/context/required_literals/" + strconv.Itoa(i)
		item, ok := exactObject(raw, "literal_key", "present", "depth")
		if !ok {
			return p
		}
		if item["literal_key"] != expectedKeys[i] {
			return p + "/literal_key"
		}
		present, ok := item["present"].(bool)
		if !ok {
			return p + "/present"
		}
		if present {
			d, ok := nonNegInt(item["depth"])
			if !ok {
				return p + "/depth"
			}
			deepest = max(deepest, d)
		} else if item["depth"] != nil {
			return p + "/depth"
		}
		allPresent = allPresent && present
	}
	trigger, ok := ctx["trigger"].(string)
	if !ok || (len(expectedKeys) == 0 && trigger != defaultOnlyTrigger) ||
		(len(expectedKeys) > 0 && !slices.Contains(expectedKeys, trigger)) {
		return root + "/context/trigger"
	}
	defs, ok := ctx["default_positive_presence"].([]any)
	if !ok || len(defs) != len(r.defaults) {
		return root + "/context/default_positive_presence"
	}
	var witnesses []absenceWitness
	anyPositive := false
	for i, raw := range defs {
		p := root + "/context/default_positive_presence/" + strconv.Itoa(i)
		d := r.defaults[i]
		item, ok := exactObject(raw, "positive_literal_key", "positive_present", "referenced_stratum", "completed_lower_stratum_digest")
		if !ok {
			return p
		}
		if item["positive_literal_key"] != k.literalKey(literal{polarity: positive, atom: d.atom}) {
			return p + "/positive_literal_key"
		}
		pp, ok := item["positive_present"].(bool)
		if !ok {
			return p + "/positive_present"
		}
		anyPositive = anyPositive || pp
		if ref, ok := asInt(item["referenced_stratum"]); !ok || ref != d.referenced {
			return p + "/referenced_stratum"
		}
		if !validDigest(item["completed_lower_stratum_digest"]) {
			return p + "/completed_lower_stratum_digest"
		}
		witnesses = append(witnesses, k.absenceWitness(d.atom, d.referenced, item["completed_lower_stratum_digest"].(string)))
	}
	o, ok := e["outcome"].(map[string]any)
	if !ok {
		return root + "/outcome"
	}
	if _, ok := exactObject(o, "status", "depth", "support"); !ok {
		for _, f := range []string{"status", "depth", "support"} {
			if _, has := o[f]; !has {
				return root + "/outcome/" + f
			}
		}
		return root + "/outcome"
	}
	switch o["status"] {
	case "unsatisfied":
		if o["depth"] != nil {
			return root + "/outcome/depth"
		}
		if o["support"] != nil {
			return root + "/outcome/support"
		}
		return ""
	case "satisfied":
	default:
		return root + "/outcome/status"
	}
	depth, ok := nonNegInt(o["depth"])
	if !ok || depth < 1 {
		return root + "/outcome/depth"
	}
	if !allPresent || anyPositive {
		return root + "/outcome/status"
	}
	if _, ok := exactObject(o["support"], derivedSupportKeys...); !ok {
		return root + "/outcome/support"
	}
	want := k.derivedSupportFor(r, witnesses, b)
	got, cerr := canonical(o["support"])
	if cerr != nil || compareBytes(got, want.key()) != 0 {
		return root + "/outcome/support"
	}
	if depth != 1+deepest {
		return root + "/outcome/depth"
	}
	return ""
}

// restorePrior rebuilds a prior from a checkpoint materialization the public
// kernel has just validated, without deriving it again.
func restorePrior(v any, b *bundle) (*prior, *kernelError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil
	}
	p := &prior{digest: m["materialization_digest"].(string)}
	if t, ok := asInt(m["through_logical_time"]); ok {
		p.through = &t
	}
	for i, raw := range diagSorted(m["base_supports"].([]any)) {
		s, kerr := parseBaseSupport(raw, i, b)
		if kerr != nil {
			return nil, kerr
		}
		p.base = append(p.base, s)
	}
	sortByKey(p.base, (*baseSupport).key)
	for _, raw := range m["derived_supports"].([]any) {
		p.derived = append(p.derived, derivedFromWire(raw.(map[string]any)))
	}
	sortByKey(p.derived, (*derivedSupport).key)
	return p, nil
}

// StepIncremental is step_incremental_l of flrh-l-persistent-incremental/1:
// it advances an explicit checkpoint (nil for none) by one batch. The
// candidate fixpoint is built from the prior checkpoint's evaluation cache,
// then compared byte for byte with the public Solve, which stays the
// oracle. It returns an LPersistentLStep wire, or an inherited LRejection, or
// an LPersistentLRejection; never partial state, never a modified argument.
func StepIncremental(priorCheckpoint, ruleBundle, inputs any, logicalTime int64) (map[string]any, *Rejection) {
	return stepIncremental(priorCheckpoint, ruleBundle, inputs, logicalTime, contractLimits)
}

// persistentLimits are the checkpoint bounds; tests shrink them to probe the
// exact N / N+1 boundaries without building 65536-entry caches.
type persistentLimits struct {
	activeBase, cacheEntries, bodyEvaluations, checkpointBytes int
}

var contractLimits = persistentLimits{MaxActiveBaseSupports, MaxCacheEntries, MaxBodyEvaluations, MaxCheckpointBytes}

func stepIncremental(priorCheckpoint, ruleBundle, inputs any, logicalTime int64, lim persistentLimits) (step map[string]any, rej *Rejection) {
	lt := logicalTime
	var bd *string
	defer func() {
		if r := recover(); r != nil {
			step = nil
			rej = closedFailure(KindPersistentRejection, r, &lt, bd)
		}
	}()
	var priorMat any
	if m, ok := priorCheckpoint.(map[string]any); ok {
		priorMat = m["materialization"]
	}
	if _, r := Solve(priorMat, ruleBundle, inputs, logicalTime); r != nil {
		return nil, r
	}
	var priorCache []any
	k := newKeys()
	if priorCheckpoint != nil {
		mat, cache, r := validateCheckpoint(priorCheckpoint, ruleBundle, logicalTime, k, lim)
		if r != nil {
			return nil, r
		}
		priorMat, priorCache = mat, cache
	}
	candidate, cache, ev, kerr := candidateFixpoint(k, priorMat, ruleBundle, inputs, logicalTime, priorCache)
	oracle, orej := Solve(priorMat, ruleBundle, inputs, logicalTime)
	if orej != nil {
		panic(invariantPanic{"oracle_rejected_after_acceptance"})
	}
	oracleDigest := oracle["rule_bundle_digest"]
	if kerr != nil || compareBytes(mustCanonical(candidate), mustCanonical(oracle)) != 0 {
		return nil, persistentReject(CodeEquivalenceViolation, "/fixpoint_result", logicalTime, oracleDigest)
	}
	bdig := candidate["rule_bundle_digest"].(string)
	bd = &bdig
	mat := candidate["next_materialization"].(map[string]any)
	if len(mat["base_supports"].([]any)) > lim.activeBase {
		return nil, persistentReject(CodePersistentBoundsExceeded, "/next_checkpoint/materialization/base_supports", logicalTime, bdig)
	}
	if len(cache) > lim.cacheEntries || ev.executed > int64(lim.bodyEvaluations) {
		return nil, persistentReject(CodePersistentBoundsExceeded, "/next_checkpoint/evaluation_cache", logicalTime, bdig)
	}
	checkpoint := map[string]any{
		"kind":                     "LPersistentLCheckpoint",
		"schema_version":           PersistentCheckpointSchema,
		"contract_version":         PersistentContract,
		"profile_id":               PersistentContract,
		"m2_contract_version":      ContractVersion,
		"m2_profile_id":            ProfileID,
		"canonicalization_version": CanonicalizationVersion,
		"rule_bundle_digest":       bdig,
		"through_logical_time":     logicalTime,
		"materialization":          mat,
		"materialization_digest":   mat["materialization_digest"],
		"evaluation_cache":         cache,
	}
	checkpoint["checkpoint_digest"] = digestOf(map[string]any{
		"kind":                                 "M2ILCheckpointPreimage",
		"contract_version":                     PersistentContract,
		"checkpoint_without_checkpoint_digest": withoutKey(checkpoint, "checkpoint_digest"),
	})
	if len(mustCanonical(checkpoint)) > lim.checkpointBytes {
		return nil, persistentReject(CodePersistentBoundsExceeded, "/next_checkpoint", logicalTime, bdig)
	}
	var priorDigest any
	if m, ok := priorCheckpoint.(map[string]any); ok {
		priorDigest = m["checkpoint_digest"]
	}
	reused := slices.Clone(ev.reused)
	sortStrings(reused)
	receipt := map[string]any{
		"kind":                                 "M2ILReuseReceipt",
		"prior_checkpoint_digest":              priorDigest,
		"next_checkpoint_digest":               checkpoint["checkpoint_digest"],
		"oracle_fixpoint_digest":               oracle["fixpoint_digest"],
		"candidate_fixpoint_digest":            candidate["fixpoint_digest"],
		"public_m2_solve_calls":                int64(2),
		"candidate_cache_lookups":              ev.hits + ev.misses,
		"candidate_cache_hits":                 ev.hits,
		"candidate_cache_misses":               ev.misses,
		"reused_candidate_body_evaluations":    ev.hits,
		"executed_candidate_body_evaluations":  ev.executed,
		"accounted_candidate_body_evaluations": ev.hits + ev.executed,
		"reused_entry_digests":                 stringsToAny(reused),
	}
	receipt["receipt_digest"] = digestOf(map[string]any{
		"kind":                           "M2ILReuseReceiptPreimage",
		"contract_version":               PersistentContract,
		"receipt_without_receipt_digest": withoutKey(receipt, "receipt_digest"),
	})
	out := map[string]any{
		"kind":             "LPersistentLStep",
		"schema_version":   PersistentResultSchema,
		"contract_version": PersistentContract,
		"fixpoint_result":  candidate,
		"next_checkpoint":  checkpoint,
		"reuse_receipt":    receipt,
	}
	out["step_digest"] = digestOf(map[string]any{
		"kind":                     "M2ILStepPreimage",
		"contract_version":         PersistentContract,
		"step_without_step_digest": withoutKey(out, "step_digest"),
	})
	return cloneValue(out).(map[string]any), nil
}

// candidateFixpoint builds the accepted result from the validated prior and
// its cache, without re-deriving the prior.
func candidateFixpoint(k *keys, priorMat, ruleBundle, inputs any, logicalTime int64, priorCache []any) (map[string]any, []any, *cachedEvaluator, *kernelError) {
	b, kerr := parseBundle(ruleBundle, k)
	if kerr != nil {
		return nil, nil, nil, kerr
	}
	p, kerr := restorePrior(priorMat, b)
	if kerr != nil {
		return nil, nil, nil, kerr
	}
	raw := inputs.([]any)
	ordered := sortedBy(raw, canonicalKey)
	parsed := make([]*parsedInput, len(ordered))
	for i, item := range ordered {
		in, kerr := parseInput(item, i, logicalTime, b)
		if kerr != nil {
			return nil, nil, nil, kerr
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
		return nil, nil, nil, kerr
	}
	ev := &cachedEvaluator{prior: map[string]map[string]any{}}
	for _, e := range priorCache {
		m := e.(map[string]any)
		ev.prior[m["context_digest"].(string)] = m
	}
	d, kerr := derive(k, b, next, ev)
	if kerr != nil {
		return nil, nil, nil, kerr
	}
	inv := &invocation{k: k, b: b, prior: p, nextBase: next, inputDigests: digests}
	res, kerr := inv.fixpoint(d, logicalTime)
	if kerr != nil {
		return nil, nil, nil, kerr
	}
	cache := slices.Clone(ev.next)
	sortByKey(cache, func(v any) []byte { return mustCanonical(v) })
	return res, orEmpty(cache), ev, nil
}
