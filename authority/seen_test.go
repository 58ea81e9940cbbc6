package authority

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPlainSeenIsStrVal holds strVal through a plainSeen to strVal
// without one: over a run of strings drawn from a small pool (so that
// they repeat, as a decision's ids do), long and short, plain and not
// (a quote, a control byte, a non-ASCII rune, invalid UTF-8), variants
// of one another that differ in a byte or share an ending, and equal
// strings built separately (so that a hit compares bytes, not
// pointers), every string writes the same bytes and the first bad one
// the same error, whatever the table already holds. A string that must
// be escaped or rejected is never remembered: the table holds only
// strings the plain test accepted.
func TestPlainSeenIsStrVal(t *testing.T) {
	hexTail := rapid.StringMatching(`[0-9a-f]{64}`)
	odd := rapid.SampledFrom([]string{"", "\"", "\\", "\n", "\x01", "é", "\xff", "\u2028", "\x7f"})
	rapid.Check(t, func(rt *rapid.T) {
		var pool []string
		for i, n := 0, rapid.IntRange(1, 12).Draw(rt, "pool"); i < n; i++ {
			var s string
			if i > 0 && rapid.Bool().Draw(rt, "twin") {
				// A variant of an earlier string: same length and
				// ending, or one byte changed anywhere.
				s = rapid.SampledFrom(pool).Draw(rt, "of")
			} else {
				prefix := rapid.SampledFrom([]string{"sha256:", "proposal:", "batch:", "derivation:", "x"}).Draw(rt, "prefix")
				s = prefix + hexTail.Draw(rt, "tail")
				if rapid.IntRange(0, 3).Draw(rt, "short") == 0 {
					s = s[:rapid.IntRange(0, len(s)).Draw(rt, "cut")]
				}
			}
			if rapid.IntRange(0, 2).Draw(rt, "taint") == 0 && len(s) > 0 {
				at := rapid.IntRange(0, len(s)-1).Draw(rt, "at")
				s = s[:at] + odd.Draw(rt, "odd") + s[at+1:]
			}
			pool = append(pool, s)
		}
		var seen plainSeen
		for i, n := 0, rapid.IntRange(1, 40).Draw(rt, "writes"); i < n; i++ {
			s := rapid.SampledFrom(pool).Draw(rt, "s")
			if rapid.Bool().Draw(rt, "copy") {
				s = strings.Clone(s)
			}
			got := canonWriter{seen: &seen}
			got.strVal(s)
			want := canonWriter{}
			want.strVal(s)
			if string(got.b) != string(want.b) || (got.err == nil) != (want.err == nil) {
				rt.Fatalf("%q: wrote %q (error %v) through plainSeen, %q (error %v) without", s, got.b, got.err, want.b, want.err)
			}
			if got.err != nil && got.err.Error() != want.err.Error() {
				rt.Fatalf("%q: error %v through plainSeen, %v without", s, got.err, want.err)
			}
			for _, r := range seen {
				if r != "" && !isPlainRef(r) {
					rt.Fatalf("plainSeen holds %q, which is not plain", r)
				}
			}
		}
	})
}

// isPlainRef is the plain test by its definition, byte by byte.
func isPlainRef(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
