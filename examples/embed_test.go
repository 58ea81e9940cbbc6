package examples

import (
	"io/fs"
	"testing"
)

// Every example named is embedded with its manifest.
func TestBundlesEmbedded(t *testing.T) {
	for _, name := range Names() {
		fsys, err := Bundle(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fs.Stat(fsys, "workflow.json"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
