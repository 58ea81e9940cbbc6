package ground

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// runSequence feeds the steps of a sequence through Solve at logical times
// 1, 2, ... and returns every accepted result; it stops at a rejection.
func runSequence(t *testing.T, c corpus, bundleName string, steps [][]string) ([]map[string]any, *Rejection) {
	t.Helper()
	b := buildBundle(c, bundleName, false)
	var priorMat any
	var out []map[string]any
	for i, refs := range steps {
		lt := int64(i + 1)
		res, rej := Solve(priorMat, b, buildDeltas(c, refs, lt, b), lt)
		if rej != nil {
			return out, rej
		}
		out = append(out, res)
		priorMat = res["next_materialization"]
	}
	return out, nil
}

func get(v any, path ...string) any {
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v
}

// The reference goldens. The expected digests are transcribed from
// fixtures/m2/golden and fixtures/m2il/golden; fixpoint_digest binds every
// other byte of the result, so equal digests mean byte-identical results.
func TestGoldenTwoSupportRetraction(t *testing.T) {
	res, rej := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}})
	if rej != nil {
		t.Fatalf("rejected: %v", rej.Wire())
	}
	got := res[1]
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"fixpoint_digest"}, "sha256:9ddc7e9346e37270f12a6468f3bd456b45dc708c9f4ae2dfca4ea826c0e77b4d"},
		{[]string{"prior_materialization_digest"}, "sha256:d2f1eb17b30510005ac448691f692aff3bba245cdde2d8ecc3ef8179d257c71c"},
		{[]string{"rule_bundle_digest"}, "sha256:0cf0b461ee88766319d80383cee61700c4b16fd6fba25ee5c5c8053378bf9154"},
		{[]string{"next_materialization", "materialization_digest"}, "sha256:bfcd6a61fdc024b85691a58afb40ecce3676e3d4f0ebd3e542a007e79bd0287f"},
		{[]string{"stats", "rule_evaluation_count"}, int64(2)},
		{[]string{"stats", "rule_firing_count"}, int64(2)},
		{[]string{"stats", "worklist_pop_count"}, int64(3)},
		{[]string{"stats", "max_derivation_depth"}, int64(2)},
	}
	for _, c := range checks {
		if g := get(got, c.path...); g != c.want {
			t.Errorf("%v = %v, want %v", c.path, g, c.want)
		}
	}
	if d := got["input_delta_digests"].([]any); len(d) != 1 || d[0] != "sha256:6d3495675fb58b537a55c4eec5d5819e8e1ae0f91819653eaaaf9896b531b976" {
		t.Errorf("input_delta_digests = %v", d)
	}
	deltas := got["derived_fact_deltas"].([]any)
	if len(deltas) != 1 {
		t.Fatalf("derived_fact_deltas = %v", deltas)
	}
	if g := get(deltas[0], "delta", "causation_id"); g != "logic:7506aba01c942fdb466df3369914ceb8e3e2886a1582182ff26fb05e5599f884" {
		t.Errorf("causation_id = %v", g)
	}
	if g := get(deltas[0], "delta", "derivation_id"); g != "derivation:26b59ffa66c53e149ca182db455338a5a240b2499b6a6fc8dec34672d5681907" {
		t.Errorf("derivation_id = %v", g)
	}
	if g := get(deltas[0], "delta", "diff"); g != int64(-1) {
		t.Errorf("diff = %v", g)
	}
}

func TestGoldenNegativeCycleRejection(t *testing.T) {
	b := buildBundle(m2, "negative_cycle", false)
	_, rej := Solve(nil, b, []any{}, 1)
	if rej == nil {
		t.Fatal("accepted a negative cycle")
	}
	want := `{"code":"OUTSIDE_V0_NEGATIVE_RECURSION","context":{"rule_id":"rule:b-not-a","source_stratum":0,"target_stratum":0},"contract_version":"flrh-l-kernel/1","kind":"LRejection","logical_time":1,"path":"/rule_bundle/rules","rule_bundle_digest":"sha256:69fe82d1ae71a24728da8b154a2bbd8a44cd4f692106eafdcff00f32ba6ca5b1","schema_version":"flrh-l-result/1"}`
	if got := string(mustCanonical(rej.Wire())); got != want {
		t.Errorf("rejection bytes\n got %s\nwant %s", got, want)
	}
}

func TestGoldenM2ILDisjointChain(t *testing.T) {
	steps := [][]string{{"a+", "x+"}, {}, {"u+"}, {"a-"}}
	res, rej := runSequence(t, m2il, "disjoint_chain", steps)
	if rej != nil {
		t.Fatalf("rejected: %v", rej.Wire())
	}
	want := map[int]struct{ fixpoint, prior, mat string }{
		2: {"sha256:4abf465f6e093006ebc7325a1fee1034f357b56c3a1b426a1c92d0a12bd57a87",
			"sha256:bac6447f44d59fa88fbd3acecee1b6f6c73153a08c4b19ff87eed225bb9b5cd3",
			"sha256:5839ae4d28412607f2da5307213ab9b537a564f8a70089dc33453dfd0996f839"},
		3: {"sha256:2b6e97029d771e6749b39353fce8fe2fa03994c0f726662eaaf6c10104ca266b",
			"sha256:5839ae4d28412607f2da5307213ab9b537a564f8a70089dc33453dfd0996f839",
			"sha256:b20bcd470657a36c24ad783ae6d989290e42fb71d0f8968c17444e92835bbaf0"},
	}
	for i, w := range want {
		if g := res[i]["fixpoint_digest"]; g != w.fixpoint {
			t.Errorf("step %d fixpoint_digest = %v, want %v", i, g, w.fixpoint)
		}
		if g := res[i]["prior_materialization_digest"]; g != w.prior {
			t.Errorf("step %d prior = %v, want %v", i, g, w.prior)
		}
		if g := get(res[i], "next_materialization", "materialization_digest"); g != w.mat {
			t.Errorf("step %d materialization = %v, want %v", i, g, w.mat)
		}
	}
}

// The reference pins the SHA-256 of its golden files (the M2-IL manifest for
// the two M2 goldens, the M2-IL candidate receipt for its own two). Our
// canonical bytes plus the file's final newline hash to exactly those pins:
// the whole files are reproduced byte for byte.
func TestGoldenFilePins(t *testing.T) {
	fileHash := func(v any) string {
		sum := sha256.Sum256(append(mustCanonical(v), '\n'))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	res, rej := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}})
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	if got := fileHash(res[1]); got != "sha256:5a03b388701f65bb2d179b4388a2f2f5159e3bb8c5fb1b4457f79617d5e372bb" {
		t.Errorf("two-support-retraction.fixpoint.json hash %s", got)
	}
	_, rej = Solve(nil, buildBundle(m2, "negative_cycle", false), []any{}, 1)
	if got := fileHash(rej.Wire()); got != "sha256:bfb97b8356a2477e7b0764c083f464a1d276d97aa7c8866aa8a7bb1ebc7abfae" {
		t.Errorf("negative-cycle.rejection.json hash %s", got)
	}
	// The M2-IL golden files, pinned by the reference's candidate receipt,
	// reproduced through the incremental step.
	steps := runSteps(t, m2il, "disjoint_chain", [][]string{{"a+", "x+"}, {}, {"u+"}, {"a-"}})
	if got := fileHash(steps[2]["fixpoint_result"]); got != "sha256:7ac74957efac1db408b1f3d6d7e9818e92431838705026c0de5701f7d0378ae9" {
		t.Errorf("insertion-reuse.fixpoint.json hash %s", got)
	}
	if got := fileHash(steps[3]["fixpoint_result"]); got != "sha256:5f6da1c91f8f5656fbfc0c626fc5cc9f537c2e68445918c68eb2e3ec66951123" {
		t.Errorf("retraction-reuse.fixpoint.json hash %s", got)
	}
}
