package bundle

import (
	"errors"
	"strings"
	"testing"

	"flrh.dev/flrh/examples"
)

// TestLoadExample holds that every embedded example loads under its name
// as LoadFS loads its files, and that any other name is ErrNoExample,
// naming the examples there are, with nothing loaded.
func TestLoadExample(t *testing.T) {
	for _, name := range examples.Names() {
		wf, ads, err := LoadExample(name)
		if err != nil || wf == nil || ads == nil {
			t.Fatalf("LoadExample(%q): %v", name, err)
		}
		fsys, err := examples.Bundle(name)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := LoadFS(fsys)
		if err != nil {
			t.Fatal(err)
		}
		if wf.ID() != want.ID() || wf.Version() != want.Version() || wf.Digest() != want.Digest() {
			t.Fatalf("LoadExample(%q) = %s@%s %s; LoadFS %s@%s %s", name, wf.ID(), wf.Version(), wf.Digest(), want.ID(), want.Version(), want.Digest())
		}
	}
	for _, name := range []string{"", "nope", "refund-agent/", "../refund-agent", "Refund-Agent"} {
		wf, ads, err := LoadExample(name)
		if !errors.Is(err, ErrNoExample) || wf != nil || ads != nil {
			t.Fatalf("LoadExample(%q) = %v, %v, %v; want ErrNoExample and nothing", name, wf, ads, err)
		}
		for _, have := range examples.Names() {
			if !strings.Contains(err.Error(), have) {
				t.Fatalf("LoadExample(%q): %v does not name %s", name, err, have)
			}
		}
	}
}
