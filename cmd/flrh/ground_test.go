package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/logic/ground"
)

func runGround(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	rootCmd.SetArgs(nil)
	rootCmd.SetOut(nil)
	return out.String(), err
}

const groundExample = "../../logic/ground/testdata/example/"

func TestGroundSolveAndStep(t *testing.T) {
	out, err := runGround(t, "ground", "solve", "--bundle", groundExample+"bundle.json", "--inputs", groundExample+"inputs-1.json", "--prior=", "--time", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ground.Decode([]byte(out))
	if err != nil {
		t.Fatalf("--json output is not JSON: %v", err)
	}
	res := v.(map[string]any)
	if res["kind"] != "LFixpointResult" {
		t.Fatalf("kind %v", res["kind"])
	}
	prior := filepath.Join(t.TempDir(), "prior.json")
	mat, _ := ground.Canonical(res["next_materialization"])
	if err := os.WriteFile(prior, mat, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runGround(t, "ground", "solve", "--bundle", groundExample+"bundle.json", "--inputs", groundExample+"inputs-2.json", "--prior", prior, "--time", "2", "--json=false")
	if err != nil {
		t.Fatal(err)
	}
	// A freeze withdraws the permission to deploy.
	if !strings.Contains(out, `-1 positive {"predicate":"may_deploy","subject":"change:42"}`) {
		t.Errorf("human output lacks the retraction:\n%s", out)
	}
	out, err = runGround(t, "ground", "step", "--bundle", groundExample+"bundle.json", "--inputs", groundExample+"inputs-1.json", "--time", "1")
	if err != nil || !strings.Contains(out, "reuse: 3 lookups, 0 hits, 3 executed") {
		t.Errorf("step: %v\n%s", err, out)
	}
}

func TestGroundRejectionAndUsage(t *testing.T) {
	// Flags are global to the command tree, so every run states them all.
	out, err := runGround(t, "ground", "solve", "--bundle", groundExample+"bundle.json", "--inputs", groundExample+"inputs-2.json", "--prior=", "--time", "1", "--json=false")
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, "LOGICAL_TIME_MISMATCH") {
		t.Errorf("time mismatch: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = runGround(t, "ground", "solve", "--bundle", bad, "--inputs=", "--prior=", "--time", "1")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("malformed file: %v, want a usage error", err)
	}
}

func TestGroundSeal(t *testing.T) {
	data, err := os.ReadFile(groundExample + "bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := ground.Decode(data)
	draft := v.(map[string]any)
	delete(draft, "rule_bundle_digest")
	for _, r := range draft["rules"].([]any) {
		delete(r.(map[string]any), "rule_digest")
	}
	path := filepath.Join(t.TempDir(), "draft.json")
	b, _ := ground.Canonical(draft)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runGround(t, "ground", "seal", path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != strings.TrimSpace(string(data)) {
		t.Errorf("sealed draft differs from the example bundle:\n%s", out)
	}
}

func TestGroundWhy(t *testing.T) {
	out, err := runGround(t, "ground", "solve", "--bundle", groundExample+"bundle.json", "--inputs", groundExample+"inputs-1.json", "--prior=", "--time", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := ground.Decode([]byte(out))
	mat, _ := ground.Canonical(v.(map[string]any)["next_materialization"])
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, mat, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runGround(t, "ground", "why", "--bundle", groundExample+"bundle.json", "--materialization", path, "--json=false",
		`{"predicate":"may_deploy","subject":"change:42"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"is TRUE_ONLY", "by rule:may-deploy (depth 2)", "by rule:ready (depth 1)",
		"base support evidence:ci:99", `not {"predicate":"frozen","subject":"service:web"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("why output lacks %q:\n%s", want, out)
		}
	}
}
