package control

import (
	"testing"

	"pgregory.net/rapid"
)

// lowerName says exactly what the actor-role and capability patterns say,
// for names drawn from their alphabets and beyond them (upper case, other
// punctuation, non-ASCII, newlines where a pattern's $ might be read as
// matching before one).
func TestLowerNameMatchesThePatterns(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		if got, want := lowerName(s, false), reRole().MatchString(s); got != want {
			t.Fatalf("lowerName(%q, false) = %v, role pattern %v", s, got, want)
		}
		if got, want := lowerName(s, true), reCapability().MatchString(s); got != want {
			t.Fatalf("lowerName(%q, true) = %v, capability pattern %v", s, got, want)
		}
	}
	for _, s := range []string{"", "a", "agent", "run.input", "run_input", "a1", "1a", "_a", ".a", "A", "aB", "a-b", "a\n", "a.", "é", "a\x00", "runner", "person.release"} {
		check(t, s)
	}
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, rapid.OneOf(
			rapid.StringMatching(`[a-z0-9_.]{0,12}`),
			rapid.StringMatching(`[a-zA-Z0-9_.\-\n ]{0,12}`),
			rapid.String(),
		).Draw(rt, "name"))
	})
}
