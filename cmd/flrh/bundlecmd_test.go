package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/internal/yamlbundle"
	"flrh.dev/flrh/workflow"
)

// flrh bundle check reports what each bundle defines, or its first
// problem with where it is (a YAML file's line included), and whether this
// environment wires it; --wired fails an unwired one.
func TestBundleCheck(t *testing.T) {
	examples := filepath.Join("..", "..", "examples")
	none := bundle.Env{}
	reps, err := checkBundles(examples, false, none)
	if err != nil || len(reps) != 3 {
		t.Fatalf("examples: %+v, %v", reps, err)
	}
	for _, r := range reps {
		if !r.OK || r.ID == "" || r.Version == "" || !strings.HasPrefix(r.Digest, "sha256:") || r.Manifest != workflow.ManifestFile ||
			len(r.Tools) == 0 || len(r.Variables) == 0 || r.Unwired != "not set: "+strings.Join(r.Variables, ", ") {
			t.Fatalf("%s: %+v", r.Bundle, r)
		}
	}
	ops := reps[0]
	if ops.ID != "ops-agent" || strings.Join(ops.Tools, ",") != "diag.read,service.restart" || strings.Join(ops.Variables, ",") != "FLRH_OPS_URL" || ops.Approvers != "oncall-lead" {
		t.Fatalf("ops-agent: %+v", ops)
	}
	// Who approves, as the bundle's approval policy says.
	group := groupBundleDir(t, `"approver": "finance-leads", "members": ["alice", "bob", "carol"], "quorum": 2, "separate_duties": true,`)
	if reps, err := checkBundles(group, false, none); err != nil || len(reps) != 1 ||
		reps[0].Approvers != "2 of alice, bob, carol (members of finance-leads), each approving; no one who handed the run an input" {
		t.Fatalf("a group's bundle: %+v, %v", reps, err)
	}
	env := map[string]string{"FLRH_OPS_URL": "http://127.0.0.1:1/v1/effects"}
	for _, wired := range []bool{false, true} {
		reps, err := checkBundles(filepath.Join(examples, "ops-agent"), wired, bundle.Vars(func(k string) string { return env[k] }))
		if err != nil || len(reps) != 1 || !reps[0].OK || reps[0].Unwired != "" {
			t.Fatalf("ops-agent wired (--wired %v): %+v, %v", wired, reps, err)
		}
		reps, err = checkBundles(filepath.Join(examples, "refund-agent"), wired, bundle.Vars(func(k string) string { return env[k] }))
		if err != nil || len(reps) != 1 || reps[0].OK == wired || reps[0].Unwired != "not set: FLRH_PAYMENTS_URL" ||
			wired && reps[0].Failure != "not wired here: not set: FLRH_PAYMENTS_URL" {
			t.Fatalf("refund-agent unwired (--wired %v): %+v, %v", wired, reps, err)
		}
	}
	// An endpoint that is set but is no URL fails as the runner would.
	env["FLRH_OPS_URL"] = "::not a url"
	if reps, err := checkBundles(filepath.Join(examples, "ops-agent"), true, bundle.Vars(func(k string) string { return env[k] })); err != nil || reps[0].OK || !strings.Contains(reps[0].Unwired, "diag.read") {
		t.Fatalf("ops-agent with a bad endpoint: %+v, %v", reps, err)
	}
	// The endpoint from a file (NAME_FILE), and a file that is not there.
	urlFile := filepath.Join(t.TempDir(), "ops-url")
	if err := os.WriteFile(urlFile, []byte("http://127.0.0.1:1/v1/effects\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := bundle.Env{Getenv: func(k string) string { return map[string]string{"FLRH_OPS_URL_FILE": urlFile}[k] }, ReadFile: bundle.ReadValueFile}
	if reps, err := checkBundles(filepath.Join(examples, "ops-agent"), true, fromFile); err != nil || !reps[0].OK || reps[0].Unwired != "" {
		t.Fatalf("ops-agent wired from a file: %+v, %v", reps, err)
	}
	os.Remove(urlFile)
	if reps, err := checkBundles(filepath.Join(examples, "ops-agent"), true, fromFile); err != nil || reps[0].OK || !strings.HasPrefix(reps[0].Unwired, "FLRH_OPS_URL_FILE: open ") {
		t.Fatalf("ops-agent with its file gone: %+v, %v", reps, err)
	}

	// A directory of bundles written in YAML, one of them broken: each is
	// reported, the broken one with its file, pointer, line and column.
	parent := t.TempDir()
	for _, name := range []string{"good", "broken"} {
		if err := os.Rename(yamlbundle.FromJSON(t, filepath.Join(examples, "refund-agent")), filepath.Join(parent, name)); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(parent, "broken", workflow.ManifestYAML)
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(b), "ttl: ", "ttl: -5 #", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	reps, err = checkBundles(parent, false, none)
	if err != nil || len(reps) != 2 {
		t.Fatalf("YAML bundles: %+v, %v", reps, err)
	}
	broken, good := reps[0], reps[1]
	if !good.OK || good.Manifest != workflow.ManifestYAML || good.ID != "refund-agent" {
		t.Fatalf("the good YAML bundle: %+v", good)
	}
	if e := broken.Error; broken.OK || e == nil || e.File != workflow.ManifestYAML || e.Pointer != "/approval/ttl" || e.Line == 0 || e.Column == 0 || e.Code != workflow.CodeMalformed {
		t.Fatalf("the broken YAML bundle: %+v %+v", broken, broken.Error)
	}

	// Paths that name no bundle are the caller's mistake.
	for _, ref := range []string{filepath.Join(parent, "absent"), manifest, t.TempDir(), "example:nothing"} {
		if _, err := checkBundles(ref, false, none); err == nil {
			t.Fatalf("%s: no error", ref)
		} else if _, ok := err.(usageError); !ok {
			t.Fatalf("%s: %T %v, not a usage error", ref, err, err)
		}
	}

	// Through the binary: exit 1 with a broken bundle, the report as JSON.
	bin := buildFlrh(t)
	out, err := flrh(bin, nil, "bundle", "check", parent, "example:ops-agent", "--json")
	if exitStatus(t, err) != 1 {
		t.Fatalf("bundle check with a broken bundle: %v\n%s", err, out)
	}
	var got []bundleReport
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 3 || got[0].Error == nil || got[0].Error.Line == 0 || !got[2].OK {
		t.Fatalf("bundle check --json: %v\n%s", err, out)
	}
	// flrh bundle yaml writes a bundle in YAML that checks as the same
	// workflow, and writes nothing over a directory that exists.
	yamlDir := filepath.Join(t.TempDir(), "refund-yaml")
	out, err = flrh(bin, nil, "bundle", "yaml", filepath.Join(examples, "refund-agent"), "--to", yamlDir)
	if err != nil || !strings.Contains(out, "wrote "+yamlDir+": ") || !strings.Contains(out, "workflow.yaml") || !strings.Contains(out, "refund-agent@1 sha256:") {
		t.Fatalf("bundle yaml: %v\n%s", err, out)
	}
	if reps, err := checkBundles(yamlDir, false, none); err != nil || !reps[0].OK || reps[0].Manifest != workflow.ManifestYAML || reps[0].ID != "refund-agent" {
		t.Fatalf("the bundle written in YAML: %+v, %v", reps, err)
	}
	for _, args := range [][]string{{"bundle", "yaml", filepath.Join(examples, "refund-agent"), "--to", yamlDir}, {"bundle", "yaml", filepath.Join(examples, "refund-agent")}, {"bundle", "yaml", yamlDir, "--to", filepath.Join(t.TempDir(), "again")}} {
		if out, err := flrh(bin, nil, args...); exitStatus(t, err) != exitUsage {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	out, err = flrh(bin, []string{"FLRH_OPS_URL=http://127.0.0.1:1/v1/effects"}, "bundle", "check", "example:ops-agent", "--wired")
	if err != nil || !strings.Contains(out, "ok   example:ops-agent: ops-agent@1") || !strings.Contains(out, "1 bundles checked, 0 failed") {
		t.Fatalf("bundle check --wired of a wired bundle: %v\n%s", err, out)
	}
}
