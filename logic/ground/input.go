package ground

import (
	"strconv"
)

// parsedInput is one validated LFactDeltaInput.
type parsedInput struct {
	diff         int64
	derivationID string
	support      *baseSupport
	digest       string // input-delta digest over the normalized wire
}

func parseInput(v any, index int, logicalTime int64, b *bundle) (*parsedInput, *kernelError) {
	path := "/fact_delta_inputs/" + strconv.Itoa(index)
	if kerr := checkCanonical(v, path); kerr != nil {
		return nil, kerr
	}
	m, ok := exactObject(v, inputKeys...)
	if !ok {
		return nil, reject(CodeMalformedFactDeltaInput, path)
	}
	if m["kind"] != "LFactDeltaInput" {
		return nil, reject(CodeMalformedFactDeltaInput, path+"/kind")
	}
	if m["schema_version"] != InputSchemaVersion {
		return nil, reject(CodeUnsupportedInputSchema, path+"/schema_version")
	}
	pol, _ := m["polarity"].(string)
	if pol != positive && pol != negative {
		return nil, reject(CodeMalformedFactDeltaInput, path+"/polarity")
	}
	dp := path + "/delta"
	d, ok := exactObject(m["delta"], factDeltaKeys...)
	if !ok {
		return nil, reject(CodeMalformedFactDeltaInput, dp)
	}
	if d["kind"] != "FactDelta" {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/kind")
	}
	a, kerr := parseAtom(d["tuple"], CodeMalformedFactDeltaInput, dp+"/tuple")
	if kerr != nil {
		return nil, kerr
	}
	t, ok := nonNegInt(d["logical_time"])
	if !ok {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/logical_time")
	}
	if t != logicalTime {
		return nil, reject(CodeLogicalTimeMismatch, dp+"/logical_time", "expected", logicalTime, "actual", t)
	}
	diff, ok := asInt(d["diff"])
	if !ok || (diff != 1 && diff != -1) {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/diff")
	}
	if !validID(d["derivation_id"]) {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/derivation_id")
	}
	if !validID(d["causation_id"]) {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/causation_id")
	}
	prov, ok := d["provenance_delta"].(map[string]any)
	if !ok || len(prov) == 0 {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/provenance_delta")
	}
	if !validVersion(d["rule_set_version"]) {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/rule_set_version")
	}
	if !validVersion(d["dataflow_version"]) {
		return nil, reject(CodeMalformedFactDeltaInput, dp+"/dataflow_version")
	}
	rsv, dfv := d["rule_set_version"].(string), d["dataflow_version"].(string)
	if rsv != b.ruleSetVersion {
		return nil, reject(CodeRuleSetVersionMismatch, dp+"/rule_set_version", "expected", b.ruleSetVersion, "actual", rsv)
	}
	if dfv != b.dataflowVersion {
		return nil, reject(CodeDataflowVersionMismatch, dp+"/dataflow_version", "expected", b.dataflowVersion, "actual", dfv)
	}
	lit := literal{polarity: pol, atom: a}
	provCopy := cloneValue(prov)
	id := d["derivation_id"].(string)
	support := &baseSupport{
		id:             id,
		contentDigest:  baseSupportContentDigest(lit, provCopy, rsv, dfv),
		lit:            lit,
		provenance:     provCopy,
		ruleSetVersion: rsv,
		dataflow:       dfv,
	}
	normalized := map[string]any{
		"kind":           "LFactDeltaInput",
		"schema_version": InputSchemaVersion,
		"polarity":       pol,
		"delta": map[string]any{
			"kind":             "FactDelta",
			"tuple":            a.val,
			"logical_time":     t,
			"diff":             diff,
			"derivation_id":    id,
			"causation_id":     d["causation_id"],
			"provenance_delta": provCopy,
			"rule_set_version": rsv,
			"dataflow_version": dfv,
		},
	}
	return &parsedInput{
		diff:         diff,
		derivationID: id,
		support:      support,
		digest: digestOf(map[string]any{
			"kind":             "M2InputDeltaPreimage",
			"contract_version": ContractVersion,
			"fact_delta_input": normalized,
		}),
	}, nil
}

// applyInputs checks the batch against the prior ledger of base supports and
// returns the next ledger (canonically ordered) and the sorted set of input
// digests. Every identity problem is found before anything is applied.
func applyInputs(inputs []*parsedInput, priorBase []*baseSupport, priorDerived []*derivedSupport) ([]*baseSupport, []string, *kernelError) {
	prior := make(map[string]*baseSupport, len(priorBase))
	for _, s := range priorBase {
		prior[s.id] = s
	}
	derivedIDs := make(map[string]bool, len(priorDerived))
	for _, s := range priorDerived {
		derivedIDs[s.id] = true
	}
	groups := map[string][]*parsedInput{}
	var ids []string
	for _, in := range inputs {
		if _, ok := groups[in.derivationID]; !ok {
			ids = append(ids, in.derivationID)
		}
		groups[in.derivationID] = append(groups[in.derivationID], in)
	}
	sortStrings(ids)
	for _, id := range ids {
		group := groups[id]
		adds, retracts := 0, 0
		contents := map[string]bool{}
		for _, in := range group {
			if in.diff == 1 {
				adds++
			} else {
				retracts++
			}
			contents[in.support.contentDigest] = true
		}
		if (adds > 0 && retracts > 0) || retracts > 1 {
			return nil, nil, reject(CodeAmbiguousBatchDelta, "/fact_delta_inputs", "derivation_id", id)
		}
		if len(contents) > 1 {
			return nil, nil, reject(CodeDerivationIdentityConflict, "/fact_delta_inputs", "derivation_id", id)
		}
		if derivedIDs[id] {
			return nil, nil, reject(CodeDerivedSupportTarget, "/fact_delta_inputs", "derivation_id", id)
		}
		existing := prior[id]
		support := group[0].support
		if retracts > 0 && existing == nil {
			return nil, nil, reject(CodeUnknownDerivation, "/fact_delta_inputs", "derivation_id", id)
		}
		if existing != nil && existing.contentDigest != support.contentDigest {
			return nil, nil, reject(CodeDerivationIdentityConflict, "/fact_delta_inputs", "derivation_id", id)
		}
	}
	removed := map[string]bool{}
	var added []*baseSupport
	for _, id := range ids {
		g := groups[id]
		switch {
		case g[0].diff == -1:
			removed[id] = true
		case prior[id] == nil:
			added = append(added, g[0].support)
		}
	}
	base := make([]*baseSupport, 0, len(priorBase)+len(added))
	for _, s := range priorBase {
		if !removed[s.id] {
			base = append(base, s)
		}
	}
	base = append(base, added...)
	sortByKey(base, (*baseSupport).key)
	digestSet := map[string]bool{}
	var digests []string
	for _, in := range inputs {
		if !digestSet[in.digest] {
			digestSet[in.digest] = true
			digests = append(digests, in.digest)
		}
	}
	sortStrings(digests)
	return base, digests, nil
}
