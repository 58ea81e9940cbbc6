package purity

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

func TestAnalyzer(t *testing.T) {
	if err := Analyzer.Flags.Set("pure", "pure"); err != nil {
		t.Fatal(err)
	}
	defer Analyzer.Flags.Set("pure", "")
	analysistest.Run(t, analysistest.TestData(), Analyzer, "pure", "impure")
}

func TestDefaultPackages(t *testing.T) {
	for _, c := range []struct {
		path string
		pure bool
	}{
		{"flrh.dev/flrh/cjson", true},
		{"flrh.dev/flrh/logic/ground", true},
		{"flrh.dev/flrh/logical", false},
		{"flrh.dev/flrh/runner", false},
		{"flrh.dev/flrh/cmd/flrh", false},
	} {
		if got := IsPure(c.path); got != c.pure {
			t.Errorf("IsPure(%q) = %v, want %v", c.path, got, c.pure)
		}
	}
}

// TestInternalImports: a pure package may import a package of the
// module's internal tree only when it is pure or vouched for.
func TestInternalImports(t *testing.T) {
	if err := Analyzer.Flags.Set("pure", Module+"/purepkg"); err != nil {
		t.Fatal(err)
	}
	defer Analyzer.Flags.Set("pure", "")
	analysistest.Run(t, analysistest.TestData(), Analyzer, Module+"/purepkg")
}
