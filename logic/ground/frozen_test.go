package ground

import "testing"

// Frozen fixpoint digests of the reference validation receipt for the M2
// corpus (research/M2_VALIDATION of the reference), transcribed. Each digest
// binds every byte of its result, so equality is a byte-for-byte match.
var frozenSuccessDigests = map[string]struct {
	bundle string
	deltas []string
	digest string
}{
	"default-negation-accepts-false-only":             {"lower_stratum_default", []string{"candidate_positive", "blocked_negative"}, "sha256:0f47bb5ff09027c82cb17575820340a45ce00095de88cae66452f712c4aa05fe"},
	"default-negation-after-empty-lower-stratum":      {"lower_stratum_default", []string{"candidate_positive"}, "sha256:d092d99b8f415d5f9eb7c8c3dab221ef048e50fc28c82a9e566f8be2a4e56553"},
	"default-negation-rejects-both":                   {"lower_stratum_default", []string{"candidate_positive", "blocked_positive", "blocked_negative"}, "sha256:c431a5f2864f624c188f1f4f779e3f2a7129cce7a6e7cc26b5059d3077a06154"},
	"exact-budget-boundary":                           {"one_firing_exact", []string{"a_positive"}, "sha256:bbdc0540457f1c3e0db48f3f8c656cd90e17b72d79a4c3bb4bc96be3650788ab"},
	"exact-duplicate-batch-idempotent":                {"empty", []string{"a_positive", "a_positive_duplicate"}, "sha256:eca4a6c0ddc603539fbce4b94993f4687a82b83d9f4fd17eb942cc6bfc62447d"},
	"four-truth-states":                               {"truth_states", []string{"true_positive", "false_negative", "both_positive", "both_negative"}, "sha256:36c63895b5211b9b6a12b285b0f99281493cd9290b3b77fa953145ef35fd20f6"},
	"lower-stratum-completes-before-default-negation": {"lower_stratum_default", []string{"candidate_positive", "seed_positive"}, "sha256:1c335af9a9e8f9d49d9c2ff9bdae0142812513e9b2109403849e29dc6bcad884"},
	"m1-positive-seam":                                {"m1_empty", []string{"$m1_positive_seam"}, "sha256:d75363b94e618b152fbedb3056832317e530916c8efad074f1ed92db458cebbe"},
	"opaque-authority-shaped-data-is-inert":           {"empty", []string{"authority_shaped_positive"}, "sha256:4c6826923ab59177a9adb00cb99d7e1f5ee9f22bd9cd0d3eac04e7833dd3b32b"},
	"two-supports-and-downstream":                     {"two_supports", []string{"a_positive", "b_positive"}, "sha256:496fa81379e0d39a69a5bd44c92e3c6b0e1411e11cc5d1d41aa9333eaaec98e7"},
}

func TestFrozenSuccessDigests(t *testing.T) {
	for id, c := range frozenSuccessDigests {
		t.Run(id, func(t *testing.T) {
			b := buildBundle(m2, c.bundle, false)
			res, rej := Solve(nil, b, buildDeltas(m2, c.deltas, 1, b), 1)
			if rej != nil {
				t.Fatal(rej.Wire())
			}
			if res["fixpoint_digest"] != c.digest {
				t.Errorf("fixpoint_digest %v, want %s", res["fixpoint_digest"], c.digest)
			}
			// The incremental step produces the same bytes.
			step, rej := StepIncremental(nil, b, buildDeltas(m2, c.deltas, 1, b), 1)
			if rej != nil || get(step, "fixpoint_result", "fixpoint_digest") != c.digest {
				t.Errorf("StepIncremental: %v", rej)
			}
		})
	}
}

func TestFrozenSequenceDigests(t *testing.T) {
	cases := []struct {
		id      string
		bundle  string
		steps   [][]string
		digests []string
		rejects bool
	}{
		{"duplicate-then-double-retract", "empty", [][]string{{"a_positive"}, {"a_positive_duplicate"}, {"a_positive_retract"}, {"a_positive_retract"}},
			[]string{"sha256:eca4a6c0ddc603539fbce4b94993f4687a82b83d9f4fd17eb942cc6bfc62447d",
				"sha256:6295ede5bc6be710921eb9bbf9454fb69043d01ae409bd3a50a75c253d4708b9",
				"sha256:a04e8235086303197e3bc3aaa0a3b9b016149de6cff1bc30af3af69458ffc75c"}, true},
		{"positive-cycle-delete", "positive_cycle", [][]string{{"a_positive"}, {"a_positive_retract"}},
			[]string{"sha256:98831715c34bf82e9c0302abd66510917af59174169758f270c22923bc0a438a",
				"sha256:8eef6fdb9cfee90ed935e07f77a174a9f80b3fc22ec7ee0eb16b43b28d0cdb58"}, false},
		{"two-support-retain-then-remove", "two_supports", [][]string{{"a_positive", "b_positive"}, {"a_positive_retract"}, {"b_positive_retract"}},
			[]string{"sha256:496fa81379e0d39a69a5bd44c92e3c6b0e1411e11cc5d1d41aa9333eaaec98e7",
				"sha256:9ddc7e9346e37270f12a6468f3bd456b45dc708c9f4ae2dfca4ea826c0e77b4d",
				"sha256:a49218a84c464b9c8d10a0a441a17f92d2fe5ce99125910081e696416566711a"}, false},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			res, rej := runSequence(t, m2, c.bundle, c.steps)
			if (rej != nil) != c.rejects {
				t.Fatalf("rejection %v", rej)
			}
			if len(res) != len(c.digests) {
				t.Fatalf("%d accepted steps, want %d", len(res), len(c.digests))
			}
			for i, want := range c.digests {
				if res[i]["fixpoint_digest"] != want {
					t.Errorf("step %d: %v, want %s", i, res[i]["fixpoint_digest"], want)
				}
			}
		})
	}
}
