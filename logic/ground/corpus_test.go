package ground

// The corpus below is transcribed from the reference conformance fixtures
// (fixtures/m2/cases.json and fixtures/m2il/cases.json of the FLR-H
// reference): atoms, rule templates, delta templates, cases, expected codes,
// pointers, contexts and digests. The expansion rules (default versions
// "rules/m2-test/1" and "dataflow/m2-test/1", causation "event:m2:<t>",
// provenance {"fixture_derivation_id": id}, rule and bundle digests computed
// over their preimages) are the reference corpus's own conventions.

import "slices"

type atomT = map[string]any

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

type litT struct {
	ref      string
	polarity string
}

type defT struct {
	ref        string
	referenced int64
}

type ruleT struct {
	id       string
	stratum  int64
	head     litT
	required []litT
	defaults []defT
}

type bundleT struct {
	ruleSetVersion, dataflowVersion string
	maxFirings, maxDepth            int64
	queries                         []string
	rules                           []ruleT
}

type deltaT struct {
	ref          string
	polarity     string
	diff         int64
	derivationID string
	provenance   map[string]any
}

type corpus struct {
	atoms   map[string]atomT
	bundles map[string]bundleT
	deltas  map[string]deltaT
	// seam is an exact protocol FactDelta passed through unchanged.
	seam map[string]any
}

func pos(ref string) litT { return litT{ref, positive} }
func neg(ref string) litT { return litT{ref, negative} }

func r(id string, stratum int64, head litT, required []litT, defaults ...defT) ruleT {
	return ruleT{id: id, stratum: stratum, head: head, required: required, defaults: defaults}
}

var m2 = corpus{
	seam: obj(
		"causation_id", "evt:m1:effect",
		"dataflow_version", "dataflow/0",
		"derivation_id", "derivation:0d7743ea7fae5a26bceb553d84464cc2e70e65654295f0ce1e2ef5958151ab80",
		"diff", int64(1),
		"kind", "FactDelta",
		"logical_time", int64(1),
		"provenance_delta", obj(
			"observation_digest", "sha256:de22786af34ef83e6570426c50e978c41da6d6e00d38630f05260017396a81c9",
			"source_event_id", "evt:m1:effect"),
		"rule_set_version", "rules/0",
		"tuple", obj(
			"object_digest", "sha256:de22786af34ef83e6570426c50e978c41da6d6e00d38630f05260017396a81c9",
			"predicate", "observation_recorded",
			"subject", "work:1"),
	),
	atoms: map[string]atomT{
		"a":          obj("predicate", "a", "subject", "item:1"),
		"b":          obj("predicate", "b", "subject", "item:1"),
		"c":          obj("predicate", "c", "subject", "item:1"),
		"d":          obj("predicate", "d", "subject", "item:1"),
		"neither":    obj("predicate", "truth_probe", "subject", "neither"),
		"true_only":  obj("predicate", "truth_probe", "subject", "true"),
		"false_only": obj("predicate", "truth_probe", "subject", "false"),
		"both":       obj("predicate", "truth_probe", "subject", "both"),
		"candidate":  obj("predicate", "candidate", "subject", "item:1"),
		"seed":       obj("predicate", "seed", "subject", "item:1"),
		"mid":        obj("predicate", "mid", "subject", "item:1"),
		"blocked":    obj("predicate", "blocked", "subject", "item:1"),
		"eligible":   obj("predicate", "eligible", "subject", "item:1"),
		"authority_shaped": obj("approval_required", true, "capability", "opaque:caller-data",
			"effect_intent", obj("kind", "EffectIntent", "receipt", "opaque:atom-receipt"),
			"kind", "ActionReceipt", "predicate", "opaque_authority_payload", "subject", "item:authority-shaped"),
	},
	deltas: map[string]deltaT{
		"a_positive":           {ref: "a", polarity: positive, diff: 1, derivationID: "derivation:base:a"},
		"a_positive_retract":   {ref: "a", polarity: positive, diff: -1, derivationID: "derivation:base:a"},
		"a_positive_duplicate": {ref: "a", polarity: positive, diff: 1, derivationID: "derivation:base:a"},
		"a_identity_conflict":  {ref: "b", polarity: positive, diff: 1, derivationID: "derivation:base:a"},
		"unknown_retract":      {ref: "d", polarity: positive, diff: -1, derivationID: "derivation:missing"},
		"b_positive":           {ref: "b", polarity: positive, diff: 1, derivationID: "derivation:base:b"},
		"b_positive_retract":   {ref: "b", polarity: positive, diff: -1, derivationID: "derivation:base:b"},
		"true_positive":        {ref: "true_only", polarity: positive, diff: 1, derivationID: "derivation:truth:true"},
		"false_negative":       {ref: "false_only", polarity: negative, diff: 1, derivationID: "derivation:truth:false"},
		"both_positive":        {ref: "both", polarity: positive, diff: 1, derivationID: "derivation:truth:both-positive"},
		"both_negative":        {ref: "both", polarity: negative, diff: 1, derivationID: "derivation:truth:both-negative"},
		"candidate_positive":   {ref: "candidate", polarity: positive, diff: 1, derivationID: "derivation:base:candidate"},
		"seed_positive":        {ref: "seed", polarity: positive, diff: 1, derivationID: "derivation:base:seed"},
		"blocked_positive":     {ref: "blocked", polarity: positive, diff: 1, derivationID: "derivation:truth:blocked-positive"},
		"blocked_negative":     {ref: "blocked", polarity: negative, diff: 1, derivationID: "derivation:truth:blocked-negative"},
		"authority_shaped_positive": {ref: "authority_shaped", polarity: positive, diff: 1, derivationID: "derivation:base:authority-shaped",
			provenance: obj("approval_digest", "opaque:caller-provenance", "capability", "opaque:not-an-authority-grant",
				"kind", "EffectIntent", "receipt", obj("authority_digest", "opaque:caller-nested-provenance"))},
		"a_derived_id_collision": {ref: "a", polarity: positive, diff: 1,
			derivationID: "derivation:18cb2e5a834a0ba8feac7a31c7f591237c24c1fb5af0244e234de736da0eb316"},
	},
	bundles: map[string]bundleT{
		"m1_empty":     {ruleSetVersion: "rules/0", dataflowVersion: "dataflow/0", maxFirings: 8, maxDepth: 8},
		"empty":        {maxFirings: 8, maxDepth: 8, queries: []string{"a"}},
		"truth_states": {maxFirings: 8, maxDepth: 8, queries: []string{"neither", "true_only", "false_only", "both"}},
		"two_supports": {maxFirings: 8, maxDepth: 8, queries: []string{"a", "b", "c", "d"}, rules: []ruleT{
			r("rule:c-from-a", 0, pos("c"), []litT{pos("a")}),
			r("rule:c-from-b", 0, pos("c"), []litT{pos("b")}),
			r("rule:d-from-c", 0, pos("d"), []litT{pos("c")}),
		}},
		"positive_cycle": {maxFirings: 8, maxDepth: 8, queries: []string{"a", "b", "c"}, rules: []ruleT{
			r("rule:b-from-a", 0, pos("b"), []litT{pos("a")}),
			r("rule:c-from-b", 0, pos("c"), []litT{pos("b")}),
			r("rule:a-from-c", 0, pos("a"), []litT{pos("c")}),
		}},
		"lower_stratum_default": {maxFirings: 8, maxDepth: 8, queries: []string{"mid", "blocked", "eligible"}, rules: []ruleT{
			r("rule:mid-from-seed", 0, pos("mid"), []litT{pos("seed")}),
			r("rule:blocked-from-mid", 0, pos("blocked"), []litT{pos("mid")}),
			r("rule:eligible-if-not-blocked", 1, pos("eligible"), []litT{pos("candidate")}, defT{"blocked", 0}),
		}},
		"negative_cycle": {maxFirings: 8, maxDepth: 8, queries: []string{"a", "b"}, rules: []ruleT{
			r("rule:a-not-b", 0, pos("a"), nil, defT{"b", 0}),
			r("rule:b-not-a", 0, pos("b"), nil, defT{"a", 0}),
		}},
		"firing_budget_one": {maxFirings: 1, maxDepth: 8, queries: []string{"a", "b", "c"}, rules: []ruleT{
			r("rule:b-from-a", 0, pos("b"), []litT{pos("a")}),
			r("rule:c-from-a", 0, pos("c"), []litT{pos("a")}),
		}},
		"depth_budget_one": {maxFirings: 8, maxDepth: 1, queries: []string{"a", "b", "c"}, rules: []ruleT{
			r("rule:b-from-a", 0, pos("b"), []litT{pos("a")}),
			r("rule:c-from-b", 0, pos("c"), []litT{pos("b")}),
		}},
		"one_firing_exact": {maxFirings: 1, maxDepth: 1, queries: []string{"a", "b"}, rules: []ruleT{
			r("rule:b-from-a", 0, pos("b"), []litT{pos("a")}),
		}},
		"invalid_stratification": {maxFirings: 8, maxDepth: 8, queries: []string{"a", "b", "c"}, rules: []ruleT{
			r("rule:b-from-a-higher", 1, pos("b"), []litT{pos("a")}),
			r("rule:c-from-b-lower", 0, pos("c"), []litT{pos("b")}),
		}},
	},
}

var m2il = corpus{
	atoms: map[string]atomT{
		"a": obj("entity", "m2il:a"), "b": obj("entity", "m2il:b"), "c": obj("entity", "m2il:c"),
		"x": obj("entity", "m2il:x"), "y": obj("entity", "m2il:y"), "z": obj("entity", "m2il:z"),
		"u": obj("entity", "m2il:u"), "candidate": obj("entity", "m2il:candidate"),
		"blocked": obj("entity", "m2il:blocked"), "eligible": obj("entity", "m2il:eligible"),
		"p": obj("entity", "m2il:p"), "q": obj("entity", "m2il:q"),
	},
	bundles: map[string]bundleT{
		"disjoint_chain": {maxFirings: 1000, maxDepth: 8, queries: []string{"a", "b", "c", "x", "y", "z", "u"}, rules: []ruleT{
			r("rule:m2il:b-from-a", 0, pos("b"), []litT{pos("a")}),
			r("rule:m2il:c-from-b", 0, pos("c"), []litT{pos("b")}),
			r("rule:m2il:y-from-x", 0, pos("y"), []litT{pos("x")}),
			r("rule:m2il:z-from-y", 0, pos("z"), []litT{pos("y")}),
		}},
		"default_flip": {maxFirings: 1000, maxDepth: 8, queries: []string{"candidate", "blocked", "eligible"}, rules: []ruleT{
			r("rule:m2il:eligible", 1, pos("eligible"), []litT{pos("candidate")}, defT{"blocked", 0}),
		}},
		"signed": {maxFirings: 1000, maxDepth: 8, queries: []string{"p", "q"}, rules: []ruleT{
			r("rule:m2il:q-false-from-p-false", 0, neg("q"), []litT{neg("p")}),
		}},
	},
	deltas: map[string]deltaT{
		"a+":             {ref: "a", polarity: positive, diff: 1, derivationID: "derivation:m2il:a"},
		"a-":             {ref: "a", polarity: positive, diff: -1, derivationID: "derivation:m2il:a"},
		"x+":             {ref: "x", polarity: positive, diff: 1, derivationID: "derivation:m2il:x"},
		"u+":             {ref: "u", polarity: positive, diff: 1, derivationID: "derivation:m2il:u"},
		"candidate+":     {ref: "candidate", polarity: positive, diff: 1, derivationID: "derivation:m2il:candidate"},
		"blocked+":       {ref: "blocked", polarity: positive, diff: 1, derivationID: "derivation:m2il:blocked-positive"},
		"blocked-":       {ref: "blocked", polarity: positive, diff: -1, derivationID: "derivation:m2il:blocked-positive"},
		"blocked_false+": {ref: "blocked", polarity: negative, diff: 1, derivationID: "derivation:m2il:blocked-negative"},
		"p_false+":       {ref: "p", polarity: negative, diff: 1, derivationID: "derivation:m2il:p-negative"},
		"p_false-":       {ref: "p", polarity: negative, diff: -1, derivationID: "derivation:m2il:p-negative"},
		"p_true+":        {ref: "p", polarity: positive, diff: 1, derivationID: "derivation:m2il:p-positive"},
	},
}

// --- expansion of templates into wire objects (our own code) ---

func litWire(c corpus, l litT) map[string]any {
	return obj("kind", "LLiteral", "polarity", l.polarity, "atom", cloneValue(c.atoms[l.ref]))
}

func canonicalSorted(xs []any) []any {
	out := slices.Clone(xs)
	sortByKey(out, func(v any) []byte { return mustCanonical(v) })
	return out
}

// buildBundle expands a bundle template into an LRuleBundle with correct
// rule and bundle digests.
func buildBundle(c corpus, name string, reverseRules bool) map[string]any {
	t, ok := c.bundles[name]
	if !ok {
		panic("no bundle " + name)
	}
	rsv, dfv := t.ruleSetVersion, t.dataflowVersion
	if rsv == "" {
		rsv = "rules/m2-test/1"
	}
	if dfv == "" {
		dfv = "dataflow/m2-test/1"
	}
	var rules []any
	for _, rt := range t.rules {
		var req, defs []any
		for _, l := range rt.required {
			req = append(req, litWire(c, l))
		}
		for _, d := range rt.defaults {
			defs = append(defs, obj("kind", "LDefaultNotPositive", "atom", cloneValue(c.atoms[d.ref]), "referenced_stratum", d.referenced))
		}
		req, defs = orEmpty(canonicalSorted(req)), orEmpty(canonicalSorted(defs))
		head := litWire(c, rt.head)
		digest := digestOf(obj("kind", "M2RulePreimage", "contract_version", ContractVersion, "profile_id", ProfileID,
			"rule_id", rt.id, "stratum", rt.stratum, "head", head,
			"ordered_required_body", req, "ordered_default_not_positive_body", defs))
		rules = append(rules, obj("kind", "LRule", "rule_id", rt.id, "stratum", rt.stratum, "head", head,
			"required_body", req, "default_not_positive_body", defs, "rule_digest", digest))
	}
	rules = orEmpty(canonicalSorted(rules))
	var queries []any
	for _, q := range t.queries {
		queries = append(queries, cloneValue(c.atoms[q]))
	}
	queries = orEmpty(canonicalSorted(queries))
	limits := obj("max_rule_firings", t.maxFirings, "max_derivation_depth", t.maxDepth)
	digest := digestOf(obj("kind", "M2RuleBundlePreimage", "contract_version", ContractVersion, "profile_id", ProfileID,
		"rule_set_version", rsv, "dataflow_version", dfv, "canonicalization_version", CanonicalizationVersion,
		"limits", limits, "ordered_query_atoms", queries, "ordered_rules", rules))
	if reverseRules {
		rules = slices.Clone(rules)
		slices.Reverse(rules)
	}
	return obj("kind", "LRuleBundle", "schema_version", RuleSchemaVersion, "contract_version", ContractVersion,
		"profile_id", ProfileID, "rule_set_version", rsv, "dataflow_version", dfv,
		"canonicalization_version", CanonicalizationVersion, "limits", cloneValue(limits),
		"query_atoms", queries, "rules", rules, "rule_bundle_digest", digest)
}

// buildDelta expands a delta template at a logical time for a bundle.
func buildDelta(c corpus, ref string, t int64, b map[string]any) map[string]any {
	if ref == "$m1_positive_seam" {
		return obj("kind", "LFactDeltaInput", "schema_version", InputSchemaVersion, "polarity", positive, "delta", cloneValue(c.seam))
	}
	d, ok := c.deltas[ref]
	if !ok {
		panic("no delta " + ref)
	}
	prov := d.provenance
	if prov == nil {
		prov = obj("fixture_derivation_id", d.derivationID)
	}
	return obj("kind", "LFactDeltaInput", "schema_version", InputSchemaVersion, "polarity", d.polarity,
		"delta", obj("kind", "FactDelta", "tuple", cloneValue(c.atoms[d.ref]), "logical_time", t, "diff", d.diff,
			"derivation_id", d.derivationID, "causation_id", "event:m2:"+itoa(t),
			"provenance_delta", cloneValue(prov), "rule_set_version", b["rule_set_version"],
			"dataflow_version", b["dataflow_version"]))
}

func buildDeltas(c corpus, refs []string, t int64, b map[string]any) []any {
	out := []any{}
	for _, ref := range refs {
		out = append(out, buildDelta(c, ref, t, b))
	}
	return out
}

func itoa(n int64) string { return string(mustCanonical(n)) }
