// Package yamlbundle gives tests a workflow bundle written in YAML, made
// from one written in JSON by bundle.WriteYAML (what flrh bundle yaml
// does), to hold the two to the same behaviour.
package yamlbundle

import (
	"path/filepath"
	"testing"

	"flrh.dev/flrh/bundle"
)

// FromJSON writes the bundle in dir in YAML into a new temporary
// directory and returns it.
func FromJSON(tb testing.TB, dir string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "yaml")
	if _, err := bundle.WriteYAML(dir, dst); err != nil {
		tb.Fatal(err)
	}
	return dst
}
