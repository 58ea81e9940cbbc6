package datalogstart

import (
	"go/build"
	"testing"
)

// This package's place in the initialisation order follows from its
// imports: none of them may pull in runtime/debug (which sorts late and
// would hold the first release back by about seventy packages) or
// anything of the product beyond internal/startpages.
func TestImportsKeepTheFirstReleaseEarly(t *testing.T) {
	seen := map[string]bool{}
	var walk func(path, dir string)
	walk = func(path, dir string) {
		if seen[path] || path == "C" || path == "unsafe" {
			return
		}
		seen[path] = true
		p, err := build.Default.Import(path, dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			walk(imp, p.Dir)
		}
	}
	walk("flrh.dev/flrh/cmd/flrh/internal/datalogstart", ".")
	for _, bad := range []string{"runtime/debug", "flrh.dev/flrh/logic"} {
		if seen[bad] {
			t.Errorf("datalogstart imports %s", bad)
		}
	}
	for path := range seen {
		if len(path) > len("flrh.dev/") && path[:len("flrh.dev/")] == "flrh.dev/" &&
			path != "flrh.dev/flrh/cmd/flrh/internal/datalogstart" && path != "flrh.dev/flrh/internal/startpages" {
			t.Errorf("datalogstart imports %s", path)
		}
	}
	if !seen["flrh.dev/flrh/internal/startpages"] {
		t.Error("the walk did not reach internal/startpages")
	}
}
