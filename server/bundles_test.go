package server

import (
	"os"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/internal/yamlbundle"
)

func TestLoadBundles(t *testing.T) {
	dir := filepath.Join("..", "examples")
	env := map[string]string{}
	b, err := LoadBundles(dir, bundle.Vars(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, wf := range b.Workflows {
		ids = append(ids, wf.ID()+"@"+wf.Version())
	}
	if len(ids) < 2 {
		t.Fatalf("bundles %v", ids)
	}
	// No endpoint variables: every bundle is loaded but none is wired.
	if len(b.Unwired) != len(b.Workflows) || len(b.Adapters.Entries()) != 0 {
		t.Fatalf("unwired %v, adapters %v", b.Unwired, b.Adapters.Entries())
	}
	// One bundle directory on its own.
	one, err := LoadBundles(filepath.Join(dir, "refund-agent"), bundle.Vars(func(string) string { return "http://127.0.0.1:1/v1/effects" }))
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Workflows) != 1 || len(one.Unwired) != 0 || len(one.Adapters.Entries()) == 0 {
		t.Fatalf("refund bundle: %+v", one)
	}
	if _, err := LoadBundles(filepath.Join(dir, "no-such-dir"), bundle.Env{}); err == nil || !IsNotExist(err) {
		t.Fatalf("missing dir: %v", err)
	}
	// Bundles written in YAML, on their own or among others.
	yamlRefund := yamlbundle.FromJSON(t, filepath.Join(dir, "refund-agent"))
	parent := t.TempDir()
	for name, from := range map[string]string{"refund": yamlRefund, "ops": yamlbundle.FromJSON(t, filepath.Join(dir, "ops-agent"))} {
		if err := os.Rename(from, filepath.Join(parent, name)); err != nil {
			t.Fatal(err)
		}
	}
	for want, d := range map[int]string{1: filepath.Join(parent, "refund"), 2: parent} {
		y, err := LoadBundles(d, bundle.Vars(func(string) string { return "http://127.0.0.1:1/v1/effects" }))
		if err != nil || len(y.Workflows) != want || len(y.Unwired) != 0 {
			t.Fatalf("YAML bundles in %s: %+v, %v; want %d", d, y, err, want)
		}
	}
}
