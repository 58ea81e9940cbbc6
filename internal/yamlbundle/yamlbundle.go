// Package yamlbundle writes a workflow bundle's JSON files in YAML, for
// tests that hold a bundle written in YAML to the same bundle in JSON.
package yamlbundle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"flrh.dev/flrh/cjson"
)

// FromJSON copies the bundle in dir to a new temporary directory with each
// of its JSON files written in YAML instead (NAME.yaml, in block style,
// with a comment) and the manifest's references to them renamed, and
// returns the new directory.
func FromJSON(tb testing.TB, dir string) string {
	tb.Helper()
	out := tb.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	renamed := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(n, ".json") {
			renamed[n] = strings.TrimSuffix(n, ".json") + ".yaml"
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, n), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	var rename func(v any) any
	rename = func(v any) any {
		switch v := v.(type) {
		case string:
			if to, ok := renamed[v]; ok {
				return to
			}
		case map[string]any:
			for k, e := range v {
				v[k] = rename(e)
			}
		case []any:
			for i, e := range v {
				v[i] = rename(e)
			}
		}
		return v
	}
	for from, to := range renamed {
		b, err := os.ReadFile(filepath.Join(dir, from))
		if err != nil {
			tb.Fatal(err)
		}
		v, err := cjson.Decode(b)
		if err != nil { // a document read as plain JSON: a model's floats
			if err := json.Unmarshal(b, &v); err != nil {
				tb.Fatalf("%s: %v", from, err)
			}
		}
		if from == "workflow.json" {
			v = rename(v)
		}
		y, err := yaml.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		y = append([]byte("# "+from+", written in YAML\n"), y...)
		if err := os.WriteFile(filepath.Join(out, to), y, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}
