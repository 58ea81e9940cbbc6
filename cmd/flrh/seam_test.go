package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/logic/ground"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/seam"
)

// TestSeamProject runs the reference's eligible-golden projection from
// files: L solved by the ground engine, profiles from the CLI, the query
// batch from the seam API. The expected digest is the reference golden's.
func TestSeamProject(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var atoms []any
	for _, s := range []string{"true_only", "false_only", "both", "neither"} {
		atoms = append(atoms, map[string]any{"predicate": "lr_truth_probe", "subject": s})
	}
	bundle, rej := ground.SealBundle(map[string]any{
		"kind": "LRuleBundle", "schema_version": "flrh-l-rules/1", "contract_version": "flrh-l-kernel/1",
		"profile_id": "flrh-l-ground-stratified/1", "rule_set_version": "rules/lr-test/1",
		"dataflow_version": "dataflow/0", "canonicalization_version": "flrh-cjson/1",
		"limits":      map[string]any{"max_rule_firings": int64(32), "max_derivation_depth": int64(8)},
		"query_atoms": atoms, "rules": []any{},
	})
	if rej != nil {
		t.Fatal(rej)
	}
	fix, rej := ground.Solve(nil, bundle, []any{map[string]any{
		"kind": "LFactDeltaInput", "schema_version": "flrh-l-input/1", "polarity": "positive",
		"delta": map[string]any{
			"kind": "FactDelta", "tuple": map[string]any{"predicate": "lr_truth_probe", "subject": "true_only"},
			"logical_time": int64(7), "diff": int64(1), "derivation_id": "derivation:lr:true", "causation_id": "event:lr:7",
			"provenance_delta": map[string]any{"fixture_derivation_id": "derivation:lr:true"},
			"rule_set_version": "rules/lr-test/1", "dataflow_version": "dataflow/0",
		},
	}}, 7)
	if rej != nil {
		t.Fatal(rej)
	}
	enc := func(v any) []byte {
		b, err := ground.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r, err := runFrontier(t, "frontier", "profile", "--dataflow", "dataflow/0", "--source", "source:lr:proposal", "--source", "source:lr:verdict",
		"--max-deltas-per-command", "32", "--max-active-values", "32", "--max-open-epochs", "8",
		"--max-ready-batches", "8", "--max-demand-per-command", "8", "--max-outstanding-demand", "16")
	if err != nil {
		t.Fatal(err)
	}
	b, err := runFrontier(t, "seam", "binding", "--rule-set", "rules/lr-test/1", "--dataflow", "dataflow/0",
		"--proposal-source", "source:lr:proposal", "--verdict-source", "source:lr:verdict", "--max-queries", "8", "--max-requirements", "4")
	if err != nil {
		t.Fatal(err)
	}
	var rp, bp struct {
		Digest string `json:"profile_digest"`
	}
	_ = json.Unmarshal([]byte(r), &rp)
	_ = json.Unmarshal([]byte(b), &bp)
	atom, _ := seam.AtomOf(atoms[0])
	q, err := json.Marshal(seam.QueryBatch{
		BindingProfileDigest: bp.Digest, LFixpointDigest: fix["fixpoint_digest"].(string),
		RuleBundleDigest: bundle["rule_bundle_digest"].(string), RProfileDigest: rp.Digest,
		Queries: []seam.Query{{
			Proposal: protocol.EffectProposal{
				Kind: "EffectProposal", ProposalID: "proposal:lr:eligible-golden", EffectType: "artifact.publish",
				ActionDigest: "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
				CauseID:      "cause:lr:proposal:eligible-golden", CorrelationID: "run:m1:1",
				ProposalDedupKey:  "proposal-dedup:lr:eligible-golden",
				DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
				GoalID:            "goal:m1:publish", ObligationID: "obligation:m1:publish", DeclaredRiskHint: "high_risk_external",
				Preconditions: []string{"precondition:lr:eligible-golden"},
				Versions: protocol.VersionEnvelope{Canonicalization: "flrh-cjson/1", CompositionProfile: "composition/0",
					Dataflow: "dataflow/0", EventSchema: "flrh-f-event/1", Gate: "m1-gate/1", GraphSchema: "graph/0",
					Model: "none/0", Oracle: "m1-oracle/1", Resolver: "resolver/0", RuleSet: "rules/lr-test/1",
					StateSchema: "flrh-f-state/1", Tool: "publisher/1", Workflow: "flrh-workflow/0.1"},
			},
			FactRequirements: []seam.FactRequirement{{PreconditionID: "precondition:lr:eligible-golden",
				Literal: seam.Literal{Polarity: seam.Positive, Atom: atom}}},
		}},
	}.Sealed())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"seam", "project", "--l-result", write("l.json", enc(fix)), "--rule-bundle", write("b.json", enc(bundle)),
		"--r-profile", write("r.json", []byte(r)), "--binding", write("bp.json", []byte(b)), "--query-batch", write("q.json", q)}
	out, err := runFrontier(t, append(args, "--json=false")...)
	// The L result here holds only the true_only support, so its digests
	// differ from the reference's four-support fixture; the verdict and
	// its evidence do not.
	if err != nil || !strings.HasPrefix(out, "projected: sha256:") || !strings.Contains(out, "proposal:lr:eligible-golden: eligible [derivation:lr:true]") {
		t.Fatalf("project: %v\n%s", err, out)
	}
	args[len(args)-1] = write("q2.json", []byte(strings.Replace(string(q), `"query_batch_digest":"sha256:`, `"query_batch_digest":"sha256:f`, 1)))
	out, err = runFrontier(t, append(args, "--json")...)
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, `"code":"DIGEST_MISMATCH"`) {
		t.Fatalf("tampered batch: %v\n%s", err, out)
	}
}
