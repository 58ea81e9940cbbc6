package ground

// SealBundle completes a draft rule bundle: it computes every rule_digest
// and the rule_bundle_digest (members that may be absent or stale in the
// draft), puts every set-like collection in canonical order, and validates
// the result exactly as Solve would, stratification included. The draft is
// not modified.
func SealBundle(draft any) (sealed map[string]any, rej *Rejection) {
	var bd *string
	defer func() {
		if r := recover(); r != nil {
			sealed, rej = nil, closedFailure(KindRejection, r, nil, bd)
		}
	}()
	d, ok := draft.(map[string]any)
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle").rejection(KindRejection, nil, nil)
	}
	c := make(map[string]any, len(d)+1)
	for k, v := range d {
		c[k] = v
	}
	placeholder := "sha256:" + hexOf("unsealed")
	if _, ok := c["rule_bundle_digest"]; !ok {
		c["rule_bundle_digest"] = placeholder
	}
	if rules, ok := c["rules"].([]any); ok {
		withDigests := make([]any, len(rules))
		for i, r := range rules {
			rm, ok := r.(map[string]any)
			if !ok {
				withDigests[i] = r
				continue
			}
			rc := make(map[string]any, len(rm)+1)
			for k, v := range rm {
				rc[k] = v
			}
			if _, ok := rc["rule_digest"]; !ok {
				rc["rule_digest"] = placeholder
			}
			withDigests[i] = rc
		}
		c["rules"] = withDigests
	}
	k := newKeys()
	b, kerr := parseBundleMode(c, k, true)
	if kerr != nil {
		return nil, kerr.rejection(KindRejection, nil, nil)
	}
	bd = &b.digest
	qs := make([]any, len(b.queries))
	for i, a := range b.queries {
		qs[i] = a.val
	}
	rs := make([]any, len(b.rules))
	for i, r := range b.rules {
		rs[i] = r.wire()
	}
	out := map[string]any{
		"kind":                     "LRuleBundle",
		"schema_version":           RuleSchemaVersion,
		"contract_version":         ContractVersion,
		"profile_id":               ProfileID,
		"rule_set_version":         b.ruleSetVersion,
		"dataflow_version":         b.dataflowVersion,
		"canonicalization_version": CanonicalizationVersion,
		"limits":                   map[string]any{"max_rule_firings": b.maxFirings, "max_derivation_depth": b.maxDepth},
		"query_atoms":              qs,
		"rules":                    rs,
		"rule_bundle_digest":       b.digest,
	}
	return cloneValue(out).(map[string]any), nil
}
