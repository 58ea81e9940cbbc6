package ground

import (
	"os"
	"testing"
)

func TestTmpGen(t *testing.T) {
	c := corpus{
		atoms: map[string]atomT{
			"reviewed": obj("predicate", "reviewed", "subject", "change:42"),
			"tested":   obj("predicate", "tested", "subject", "change:42"),
			"ready":    obj("predicate", "ready", "subject", "change:42"),
			"frozen":   obj("predicate", "frozen", "subject", "service:web"),
			"deploy":   obj("predicate", "may_deploy", "subject", "change:42"),
		},
		bundles: map[string]bundleT{"ex": {ruleSetVersion: "rules/example/1", dataflowVersion: "dataflow/example/1", maxFirings: 100, maxDepth: 8,
			queries: []string{"ready", "deploy", "frozen"},
			rules: []ruleT{
				r("rule:ready", 0, pos("ready"), []litT{pos("reviewed"), pos("tested")}),
				r("rule:not-ready-untested", 0, neg("ready"), []litT{neg("tested")}),
				r("rule:may-deploy", 1, pos("deploy"), []litT{pos("ready")}, defT{"frozen", 0}),
			}}},
		deltas: map[string]deltaT{
			"reviewed": {ref: "reviewed", polarity: positive, diff: 1, derivationID: "evidence:review:7", provenance: obj("source", "code-review", "review_id", "7")},
			"tested":   {ref: "tested", polarity: positive, diff: 1, derivationID: "evidence:ci:99", provenance: obj("source", "ci", "run_id", "99")},
			"frozen":   {ref: "frozen", polarity: positive, diff: 1, derivationID: "evidence:freeze:1", provenance: obj("source", "change-calendar")},
		},
	}
	b := buildBundle(c, "ex", false)
	os.MkdirAll("testdata/example", 0o755)
	os.WriteFile("testdata/example/bundle.json", append(mustCanonical(b), '\n'), 0o644)
	os.WriteFile("testdata/example/inputs-1.json", append(mustCanonical(buildDeltas(c, []string{"reviewed", "tested"}, 1, b)), '\n'), 0o644)
	os.WriteFile("testdata/example/inputs-2.json", append(mustCanonical(buildDeltas(c, []string{"frozen"}, 2, b)), '\n'), 0o644)
}
