package ground

import (
	"slices"
	"testing"
)

// Atoms whose diagnostic order differs from their canonical order (9 vs 10,
// an object whose keys extend another's) still round-trip as priors, in any
// collection order (decision 0401).
func TestPriorInAnyOrder(t *testing.T) {
	c := corpus{
		atoms: map[string]atomT{
			"n9": obj("n", int64(9)), "n10": obj("n", int64(10)),
			"a": obj("a", int64(1)), "ab": obj("a", int64(1), "b", int64(2)),
			"h": obj("head", "x"),
		},
		bundles: map[string]bundleT{"b": {maxFirings: 10, maxDepth: 8, queries: []string{"n9", "n10", "a", "ab", "h"}, rules: []ruleT{
			r("rule:h9", 0, pos("h"), []litT{pos("n9")}),
			r("rule:h10", 0, pos("h"), []litT{pos("n10")}),
			r("rule:hab", 0, pos("h"), []litT{pos("ab")}, defT{"a", 0}),
		}}},
		deltas: map[string]deltaT{
			"n9":  {ref: "n9", polarity: positive, diff: 1, derivationID: "d:9"},
			"n10": {ref: "n10", polarity: positive, diff: 1, derivationID: "d:10"},
			"ab":  {ref: "ab", polarity: positive, diff: 1, derivationID: "d:ab"},
			"ab-": {ref: "ab", polarity: positive, diff: -1, derivationID: "d:ab"},
		},
	}
	c.bundles["b"] = bundleT{maxFirings: 10, maxDepth: 8, queries: []string{"n9", "n10", "a", "ab", "h"}, rules: []ruleT{
		r("rule:h9", 1, pos("h"), []litT{pos("n9")}),
		r("rule:h10", 1, pos("h"), []litT{pos("n10")}),
		r("rule:hab", 1, pos("h"), []litT{pos("ab")}, defT{"a", 0}),
	}}
	b := buildBundle(c, "b", false)
	first, rej := Solve(nil, b, buildDeltas(c, []string{"n9", "n10", "ab"}, 1, b), 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	if _, n, _ := stateOf(t, first, c.atoms["h"]); n != 3 {
		t.Fatalf("h has %d supports, want 3", n)
	}
	want, rej := Solve(first["next_materialization"], b, buildDeltas(c, []string{"ab-"}, 2, b), 2)
	if rej != nil {
		t.Fatalf("own prior rejected: %v", rej.Wire())
	}
	shuffled := cloneValue(first["next_materialization"]).(map[string]any)
	for _, f := range materializationSets {
		xs := shuffled[f].([]any)
		slices.Reverse(xs)
		for _, x := range xs {
			for _, nf := range nestedSets[f] {
				if inner, ok := x.(map[string]any)[nf].([]any); ok {
					slices.Reverse(inner)
				}
			}
		}
	}
	got, rej := Solve(shuffled, b, buildDeltas(c, []string{"ab-"}, 2, b), 2)
	if rej != nil {
		t.Fatalf("reordered prior rejected: %v", rej.Wire())
	}
	if string(mustCanonical(got)) != string(mustCanonical(want)) {
		t.Error("the prior's collection order changed the result")
	}
}

func TestPriorRejections(t *testing.T) {
	b := buildBundle(m2, "two_supports", false)
	res, _ := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}})
	good := res[0]["next_materialization"].(map[string]any)
	cases := []struct {
		name  string
		forge func(m map[string]any)
		lt    int64
		code  string
		path  string
	}{
		{"time-regression", func(m map[string]any) {}, 0, CodeLogicalTimeRegression, "/prior_materialization/through_logical_time"},
		{"bundle", func(m map[string]any) { m["rule_bundle_digest"] = "sha256:00" }, 2, CodeRuleBundleMismatch, "/prior_materialization/rule_bundle_digest"},
		{"schema", func(m map[string]any) { m["schema_version"] = "flrh-l-materialization/2" }, 2, CodeUnsupportedMaterialization, "/prior_materialization/schema_version"},
		{"digest", func(m map[string]any) { m["materialization_digest"] = "sha256:" + hexOf("x") }, 2, CodeProvenanceIntegrityViolation, "/prior_materialization/materialization_digest"},
		{"support-content", func(m map[string]any) {
			s := m["base_supports"].([]any)[0].(map[string]any)
			s["provenance_delta"] = obj("forged", true)
		}, 2, CodeProvenanceIntegrityViolation, "/prior_materialization/base_supports/0/support_content_digest"},
		{"state-forged-redigested", func(m map[string]any) {
			st := m["fact_states"].([]any)[0].(map[string]any)
			st["state"] = Both
			m["materialization_digest"] = digestOf(obj("kind", "M2MaterializationPreimage", "contract_version", ContractVersion,
				"materialization_without_materialization_digest", withoutKey(m, "materialization_digest")))
		}, 2, CodeProvenanceIntegrityViolation, "/prior_materialization"},
		{"float", func(m map[string]any) { m["through_logical_time"] = 1.0 }, 2, CodeCanonicalizationViolation, "/prior_materialization/through_logical_time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := cloneValue(good).(map[string]any)
			c.forge(m)
			_, rej := Solve(m, b, []any{}, c.lt)
			if rej == nil || rej.Code != c.code || rej.Path != c.path {
				t.Fatalf("got %v, want %s at %s", rej, c.code, c.path)
			}
		})
	}
}

// With several defects, the one reported does not depend on how the caller
// ordered the collections.
func TestPriorFirstDefectIsOrderFree(t *testing.T) {
	b := buildBundle(m2, "two_supports", false)
	res, _ := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}})
	m := cloneValue(res[0]["next_materialization"]).(map[string]any)
	for i, s := range m["base_supports"].([]any) {
		s.(map[string]any)["provenance_delta"] = obj("forged", int64(i))
	}
	_, want := Solve(m, b, []any{}, 2)
	if want == nil || want.Code != CodeProvenanceIntegrityViolation {
		t.Fatalf("forged supports: %v", want)
	}
	slices.Reverse(m["base_supports"].([]any))
	_, got := Solve(m, b, []any{}, 2)
	if got == nil || string(mustCanonical(got.Wire())) != string(mustCanonical(want.Wire())) {
		t.Errorf("reordered defects reported differently:\n%v\n%v", got, want)
	}
	// Inputs likewise: two out-of-domain inputs in either order.
	bad := func(x any) any {
		in := buildDelta(m2, "a_positive", 1, b)
		in["delta"].(map[string]any)["provenance_delta"].(map[string]any)["x"] = x
		return in
	}
	_, r1 := Solve(nil, b, []any{bad(1.5), bad(int64(1) << 62), bad("e\u0301")}, 1)
	_, r2 := Solve(nil, b, []any{bad("e\u0301"), bad(int64(1) << 62), bad(1.5)}, 1)
	if r1 == nil || r2 == nil || string(mustCanonical(r1.Wire())) != string(mustCanonical(r2.Wire())) {
		t.Errorf("input defects reported differently: %v / %v", r1, r2)
	}
}
