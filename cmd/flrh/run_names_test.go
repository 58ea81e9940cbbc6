package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The names run start accepts: builtin:ID and example:NAME always mean one
// thing; a bare id means the one workflow of that id, and is refused with
// both alternatives when a built-in workflow and an example share it.
func TestRunStartNames(t *testing.T) {
	c, err := loadCatalog(nil, true, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, from, refused string
	}{
		{ref: "builtin:refund-agent", from: "built-in"},
		{ref: "builtin:refund-agent@1", from: "built-in"},
		{ref: "example:refund-agent", from: "example:refund-agent"},
		{ref: "ops-agent", from: "example:ops-agent"},
		{ref: "support-agent@1", from: "example:support-agent"},
		{ref: "refund-agent", refused: "say which: builtin:refund-agent or example:refund-agent"},
		{ref: "refund-agent@1", refused: "say which: builtin:refund-agent or example:refund-agent"},
		{ref: "builtin:ops-agent", refused: "no built-in workflow ops-agent@1 (built-in: builtin:refund-agent@1)"},
		{ref: "refund-agent@2", refused: "no workflow refund-agent@2"},
		{ref: "example:nope", refused: `no example bundle "nope"`},
		{ref: "./no-such-bundle", refused: "no bundle directory ./no-such-bundle"},
		{ref: "bundles/refunds", refused: "no bundle directory bundles/refunds"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			cds, err := pinStart(tc.ref, "")(nil, c)
			if tc.refused != "" {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("got %v, want a usage error saying %q", err, tc.refused)
				}
				return
			}
			if err != nil || len(cds) != 1 || cds[0].from != tc.from {
				t.Fatalf("got %+v, %v; want the workflow from %s", cds, err, tc.from)
			}
		})
	}
}

func TestBareNamePrefersTheBundlesGiven(t *testing.T) {
	// A bundle given with --workflows wins over the built-in and the example
	// of the same id: the user named it.
	dir := filepath.Join(t.TempDir(), "refund-agent")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "refund-agent"))); err != nil {
		t.Fatal(err)
	}
	c, err := loadCatalog([]string{dir}, true, "")
	if err != nil {
		t.Fatal(err)
	}
	cds, err := pinStart("refund-agent", "")(nil, c)
	if err != nil || len(cds) != 1 || cds[0].from != dir {
		t.Fatalf("got %+v, %v", cds, err)
	}
}
