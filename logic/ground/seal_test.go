package ground

import (
	"slices"
	"testing"
)

func TestSealBundle(t *testing.T) {
	want := buildBundle(m2, "lower_stratum_default", false)
	draft := cloneValue(want).(map[string]any)
	delete(draft, "rule_bundle_digest")
	rules := draft["rules"].([]any)
	for i, r := range rules {
		rm := r.(map[string]any)
		if i == 0 {
			delete(rm, "rule_digest")
		} else {
			rm["rule_digest"] = "sha256:stale"
		}
	}
	slices.Reverse(rules)
	before := mustCanonical(draft)
	got, rej := SealBundle(draft)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	if string(mustCanonical(got)) != string(mustCanonical(want)) {
		t.Errorf("sealed bundle differs:\n%s\n%s", mustCanonical(got), mustCanonical(want))
	}
	if string(mustCanonical(draft)) != string(before) {
		t.Error("SealBundle modified the draft")
	}
	// A draft that cannot be a bundle is refused with Solve's codes.
	bad := buildBundle(m2, "negative_cycle", false)
	delete(bad, "rule_bundle_digest")
	if _, rej := SealBundle(bad); rej == nil || rej.Code != CodeOutsideV0NegativeRecursion || rej.RuleBundleDigest == nil {
		t.Errorf("negative cycle sealed: %v", rej)
	}
	if _, rej := SealBundle([]any{}); rej == nil || rej.Code != CodeMalformedRuleBundle {
		t.Errorf("non-object sealed: %v", rej)
	}
}
