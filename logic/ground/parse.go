package ground

import (
	"regexp"
	"slices"
	"strconv"
	"sync"
)

var (
	idPattern      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`) })
	versionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:+/-]*$`) })
	digestPattern  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
)

func validID(v any) bool {
	s, ok := v.(string)
	return ok && len(s) >= 1 && len(s) <= 128 && idPattern().MatchString(s)
}

func validVersion(v any) bool {
	s, ok := v.(string)
	return ok && len(s) >= 1 && len(s) <= 128 && versionPattern().MatchString(s)
}

func validDigest(v any) bool {
	s, ok := v.(string)
	return ok && digestPattern().MatchString(s)
}

// asInt reports v as a signed 64-bit integer (booleans are not integers).
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

func nonNegInt(v any) (int64, bool) {
	n, ok := asInt(v)
	return n, ok && n >= 0
}

// exactObject returns v as an object when it has exactly the given members.
func exactObject(v any, keys ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != len(keys) {
		return nil, false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, false
		}
	}
	return m, true
}

var (
	bundleKeys = []string{"kind", "schema_version", "contract_version", "profile_id",
		"rule_set_version", "dataflow_version", "canonicalization_version", "limits",
		"query_atoms", "rules", "rule_bundle_digest"}
	ruleKeys = []string{"kind", "rule_id", "stratum", "head", "required_body",
		"default_not_positive_body", "rule_digest"}
	literalKeys   = []string{"kind", "polarity", "atom"}
	defaultKeys   = []string{"kind", "atom", "referenced_stratum"}
	inputKeys     = []string{"kind", "schema_version", "polarity", "delta"}
	factDeltaKeys = []string{"kind", "tuple", "logical_time", "diff", "derivation_id",
		"causation_id", "provenance_delta", "rule_set_version", "dataflow_version"}
	materializationKeys = []string{"kind", "schema_version", "contract_version", "profile_id",
		"rule_bundle_digest", "rule_set_version", "dataflow_version", "canonicalization_version",
		"through_logical_time", "base_supports", "derived_supports", "fact_states", "conflicts",
		"stratum_digests", "materialization_digest"}
	baseSupportKeys = []string{"kind", "derivation_id", "support_content_digest", "literal",
		"provenance_delta", "rule_set_version", "dataflow_version"}
	derivedSupportKeys = []string{"kind", "derivation_id", "support_content_digest", "literal",
		"rule_id", "rule_digest", "premise_literal_keys", "default_absence_witnesses",
		"rule_set_version", "dataflow_version"}
)

// checkCanonical rejects a value outside the canonical domain, naming the
// first offending member under path.
func checkCanonical(v any, path string) *kernelError {
	if _, err := canonical(v); err != nil {
		suffix := err.path
		if suffix == "/" {
			suffix = ""
		}
		return reject(CodeCanonicalizationViolation, path+suffix, "invariant", err.code)
	}
	return nil
}

// parseAtom accepts a non-empty object already known to be canonical.
func parseAtom(v any, code, path string) (atom, *kernelError) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return atom{}, reject(code, path)
	}
	b, err := canonical(m)
	if err != nil {
		return atom{}, reject(CodeCanonicalizationViolation, path, "invariant", err.code)
	}
	return atom{key: string(b), val: cloneValue(m)}, nil
}

func parseLiteral(v any, code, path string) (literal, *kernelError) {
	m, ok := exactObject(v, literalKeys...)
	if !ok {
		return literal{}, reject(code, path)
	}
	if m["kind"] != "LLiteral" {
		return literal{}, reject(code, path+"/kind")
	}
	pol, _ := m["polarity"].(string)
	if pol != positive && pol != negative {
		return literal{}, reject(code, path+"/polarity")
	}
	a, err := parseAtom(m["atom"], code, path+"/atom")
	if err != nil {
		return literal{}, err
	}
	return literal{polarity: pol, atom: a}, nil
}

func parseDefault(v any, path string) (defaultNP, *kernelError) {
	m, ok := exactObject(v, defaultKeys...)
	if !ok {
		return defaultNP{}, reject(CodeMalformedRuleBundle, path)
	}
	if m["kind"] != "LDefaultNotPositive" {
		return defaultNP{}, reject(CodeMalformedRuleBundle, path+"/kind")
	}
	ref, ok := nonNegInt(m["referenced_stratum"])
	if !ok {
		return defaultNP{}, reject(CodeMalformedRuleBundle, path+"/referenced_stratum")
	}
	a, err := parseAtom(m["atom"], CodeMalformedRuleBundle, path+"/atom")
	if err != nil {
		return defaultNP{}, err
	}
	return defaultNP{atom: a, referenced: ref}, nil
}

func rulePreimage(id string, stratum int64, head literal, req []literal, defs []defaultNP) map[string]any {
	r := make([]any, len(req))
	for i, l := range req {
		r[i] = l.wire()
	}
	d := make([]any, len(defs))
	for i, x := range defs {
		d[i] = x.wire()
	}
	return map[string]any{
		"kind":                              "M2RulePreimage",
		"contract_version":                  ContractVersion,
		"profile_id":                        ProfileID,
		"rule_id":                           id,
		"stratum":                           stratum,
		"head":                              head.wire(),
		"ordered_required_body":             r,
		"ordered_default_not_positive_body": d,
	}
}

func uniqueBytes(items [][]byte) bool {
	seen := make(map[string]bool, len(items))
	for _, b := range items {
		if seen[string(b)] {
			return false
		}
		seen[string(b)] = true
	}
	return true
}

func parseRule(v any, index int, seal bool) (*rule, *kernelError) {
	path := "/rule_bundle/rules/" + strconv.Itoa(index)
	m, ok := exactObject(v, ruleKeys...)
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, path)
	}
	if m["kind"] != "LRule" {
		return nil, reject(CodeMalformedRuleBundle, path+"/kind")
	}
	if !validID(m["rule_id"]) {
		return nil, reject(CodeMalformedRuleBundle, path+"/rule_id")
	}
	id := m["rule_id"].(string)
	stratum, ok := nonNegInt(m["stratum"])
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, path+"/stratum")
	}
	head, kerr := parseLiteral(m["head"], CodeMalformedRuleBundle, path+"/head")
	if kerr != nil {
		return nil, kerr
	}
	rawReq, ok := m["required_body"].([]any)
	if !ok || len(rawReq) > maxBodyItems {
		return nil, reject(CodeMalformedRuleBundle, path+"/required_body")
	}
	rawDef, ok := m["default_not_positive_body"].([]any)
	if !ok || len(rawDef) > maxBodyItems {
		return nil, reject(CodeMalformedRuleBundle, path+"/default_not_positive_body")
	}
	if len(rawReq) == 0 && len(rawDef) == 0 {
		return nil, reject(CodeMalformedRuleBundle, path,
			"invariant", "rule_requires_evidence_or_completed_absence_root")
	}
	var req []literal
	for i, raw := range diagSorted(rawReq) {
		l, kerr := parseLiteral(raw, CodeMalformedRuleBundle, path+"/required_body/"+strconv.Itoa(i))
		if kerr != nil {
			return nil, kerr
		}
		req = append(req, l)
	}
	var defs []defaultNP
	for i, raw := range diagSorted(rawDef) {
		d, kerr := parseDefault(raw, path+"/default_not_positive_body/"+strconv.Itoa(i))
		if kerr != nil {
			return nil, kerr
		}
		defs = append(defs, d)
	}
	sortByKey(req, func(l literal) []byte { return mustCanonical(l.wire()) })
	sortByKey(defs, func(d defaultNP) []byte { return mustCanonical(d.wire()) })
	reqBytes := make([][]byte, len(req))
	for i, l := range req {
		reqBytes[i] = mustCanonical(l.wire())
	}
	if !uniqueBytes(reqBytes) {
		return nil, reject(CodeMalformedRuleBundle, path+"/required_body",
			"invariant", "unique_required_body_literals")
	}
	defBytes := make([][]byte, len(defs))
	for i, d := range defs {
		defBytes[i] = mustCanonical(d.wire())
	}
	if !uniqueBytes(defBytes) {
		return nil, reject(CodeMalformedRuleBundle, path+"/default_not_positive_body",
			"invariant", "unique_default_not_positive_body")
	}
	expected := digestOf(rulePreimage(id, stratum, head, req, defs))
	supplied := m["rule_digest"]
	if !seal && (!validDigest(supplied) || supplied != expected) {
		return nil, reject(CodeProvenanceIntegrityViolation, path+"/rule_digest",
			"expected", expected, "actual", supplied, "rule_id", id)
	}
	r := &rule{id: id, stratum: stratum, head: head, required: req, defaults: defs, digest: expected}
	r.bytes = mustCanonical(r.wire())
	return r, nil
}

// orderedBundleView is a shallow copy of a raw bundle whose set-like
// collections are in diagnostic order, so the first reported defect does
// not depend on how the caller ordered them.
func orderedBundleView(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = x
	}
	if qs, ok := out["query_atoms"].([]any); ok {
		out["query_atoms"] = diagSorted(qs)
	}
	if rs, ok := out["rules"].([]any); ok {
		norm := make([]any, len(rs))
		for i, raw := range rs {
			rm, ok := raw.(map[string]any)
			if !ok {
				norm[i] = raw
				continue
			}
			c := make(map[string]any, len(rm))
			for k, x := range rm {
				c[k] = x
			}
			for _, f := range []string{"required_body", "default_not_positive_body"} {
				if body, ok := c[f].([]any); ok {
					c[f] = diagSorted(body)
				}
			}
			norm[i] = c
		}
		out["rules"] = diagSorted(norm)
	}
	return out
}

func bundlePreimage(b *bundle) map[string]any {
	qs := make([]any, len(b.queries))
	for i, a := range b.queries {
		qs[i] = a.val
	}
	rs := make([]any, len(b.rules))
	for i, r := range b.rules {
		rs[i] = r.wire()
	}
	return map[string]any{
		"kind":                     "M2RuleBundlePreimage",
		"contract_version":         ContractVersion,
		"profile_id":               ProfileID,
		"rule_set_version":         b.ruleSetVersion,
		"dataflow_version":         b.dataflowVersion,
		"canonicalization_version": CanonicalizationVersion,
		"limits": map[string]any{
			"max_rule_firings":     b.maxFirings,
			"max_derivation_depth": b.maxDepth,
		},
		"ordered_query_atoms": qs,
		"ordered_rules":       rs,
	}
}

func parseBundle(v any, k *keys) (*bundle, *kernelError) { return parseBundleMode(v, k, false) }

// parseBundleMode parses a bundle; when seal is set the supplied rule and
// bundle digests are not checked (they are being computed).
func parseBundleMode(v any, k *keys, seal bool) (*bundle, *kernelError) {
	v = orderedBundleView(v)
	if kerr := checkCanonical(v, "/rule_bundle"); kerr != nil {
		return nil, kerr
	}
	m, ok := exactObject(v, bundleKeys...)
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle")
	}
	switch {
	case m["kind"] != "LRuleBundle":
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/kind")
	case m["schema_version"] != RuleSchemaVersion:
		return nil, reject(CodeUnsupportedRuleSchema, "/rule_bundle/schema_version")
	case m["contract_version"] != ContractVersion:
		return nil, reject(CodeUnsupportedContractVersion, "/rule_bundle/contract_version")
	case m["profile_id"] != ProfileID:
		return nil, reject(CodeUnsupportedProfile, "/rule_bundle/profile_id")
	case m["canonicalization_version"] != CanonicalizationVersion:
		return nil, reject(CodeUnsupportedCanonicalization, "/rule_bundle/canonicalization_version")
	case !validVersion(m["rule_set_version"]):
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/rule_set_version")
	case !validVersion(m["dataflow_version"]):
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/dataflow_version")
	}
	limits, ok := exactObject(m["limits"], "max_rule_firings", "max_derivation_depth")
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/limits")
	}
	firings, ok := asInt(limits["max_rule_firings"])
	if !ok || firings < 1 || firings > MaxRuleFiringsCeiling {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/limits/max_rule_firings")
	}
	depth, ok := asInt(limits["max_derivation_depth"])
	if !ok || depth < 1 || depth > MaxDerivationDepthCeiling {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/limits/max_derivation_depth")
	}
	rawQ, ok := m["query_atoms"].([]any)
	if !ok || len(rawQ) > maxQueryAtoms {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/query_atoms")
	}
	rawR, ok := m["rules"].([]any)
	if !ok || len(rawR) > maxRules {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/rules")
	}
	b := &bundle{
		ruleSetVersion:  m["rule_set_version"].(string),
		dataflowVersion: m["dataflow_version"].(string),
		maxFirings:      firings,
		maxDepth:        depth,
	}
	for i, raw := range rawQ {
		a, kerr := parseAtom(raw, CodeMalformedRuleBundle, "/rule_bundle/query_atoms/"+strconv.Itoa(i))
		if kerr != nil {
			return nil, kerr
		}
		b.queries = append(b.queries, a)
	}
	slices.SortStableFunc(b.queries, func(x, y atom) int { return compareBytes([]byte(x.key), []byte(y.key)) })
	for i := 1; i < len(b.queries); i++ {
		if b.queries[i].key == b.queries[i-1].key {
			return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/query_atoms", "invariant", "unique_query_atoms")
		}
	}
	for i, raw := range rawR {
		r, kerr := parseRule(raw, i, seal)
		if kerr != nil {
			return nil, kerr
		}
		b.rules = append(b.rules, r)
	}
	slices.SortStableFunc(b.rules, func(x, y *rule) int { return compareBytes(x.bytes, y.bytes) })
	ids := map[string]bool{}
	for _, r := range b.rules {
		if ids[r.id] {
			return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/rules", "rule_id", r.id, "invariant", "unique_rule_id")
		}
		ids[r.id] = true
	}
	digests := map[string]bool{}
	for _, r := range b.rules {
		if digests[r.digest] {
			return nil, reject(CodeMalformedRuleBundle, "/rule_bundle/rules", "invariant", "unique_rule_digest")
		}
		digests[r.digest] = true
	}
	expected := digestOf(bundlePreimage(b))
	supplied := m["rule_bundle_digest"]
	if !seal && (!validDigest(supplied) || supplied != expected) {
		return nil, reject(CodeRuleBundleMismatch, "/rule_bundle/rule_bundle_digest", "expected", expected, "actual", supplied)
	}
	b.digest = expected
	if kerr := validateStratification(b, k); kerr != nil {
		kerr.trustedDigest = &b.digest
		return nil, kerr
	}
	return b, nil
}

// validateStratification checks that every literal has one producing
// stratum, that required literals come from the same or a lower stratum, and
// that default negation looks strictly down at a stratum holding every
// producer of the negated atom.
func validateStratification(b *bundle, k *keys) *kernelError {
	producers := map[string][]int64{}
	for _, r := range b.rules {
		key := k.literalKey(r.head)
		if !slices.Contains(producers[key], r.stratum) {
			producers[key] = append(producers[key], r.stratum)
		}
	}
	keys := make([]string, 0, len(producers))
	for key := range producers {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if s := producers[key]; len(s) > 1 {
			return reject(CodeInvalidStratification, "/rule_bundle/rules",
				"invariant", "one_producer_stratum_per_literal",
				"source_stratum", slices.Min(s), "target_stratum", slices.Max(s))
		}
	}
	for _, r := range b.rules {
		for _, l := range r.required {
			if s := producers[k.literalKey(l)]; len(s) > 0 && slices.Max(s) > r.stratum {
				return reject(CodeInvalidStratification, "/rule_bundle/rules",
					"rule_id", r.id, "source_stratum", slices.Max(s), "target_stratum", r.stratum)
			}
		}
		for _, d := range r.defaults {
			if d.referenced >= r.stratum {
				return reject(CodeOutsideV0NegativeRecursion, "/rule_bundle/rules",
					"rule_id", r.id, "source_stratum", d.referenced, "target_stratum", r.stratum)
			}
			pos := literal{polarity: positive, atom: d.atom}
			if s := producers[k.literalKey(pos)]; len(s) > 0 && slices.Max(s) > d.referenced {
				return reject(CodeInvalidStratification, "/rule_bundle/rules",
					"rule_id", r.id, "source_stratum", slices.Max(s), "target_stratum", d.referenced)
			}
		}
	}
	return nil
}
