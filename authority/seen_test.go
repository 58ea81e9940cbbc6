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

// TestScratchWritersAreFresh holds writers lent a decision's scratch
// buffer to writers of their own: preimages written in turn, and one
// begun while another is still open (it gets a pooled buffer), digest
// to what a nil arena's writers give, and the buffer is handed back.
func TestScratchWritersAreFresh(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var shared decisionShared
		a := &strArena{seen: shared.scratch.plainSeen(), scratch: &shared.scratch}
		vals := rapid.SliceOfN(rapid.StringMatching(`[ -~é"\\]{0,90}`), 1, 8).Draw(rt, "vals")
		ref := func(v string) string {
			w := (*strArena)(nil).writer(16)
			w.lit(`{"v":`)
			w.val(v)
			w.lit(`}`)
			return w.mustDigest()
		}
		for i, v := range vals {
			w := a.writer(rapid.IntRange(0, 4096).Draw(rt, "n"))
			w.lit(`{"v":`)
			w.val(v)
			w.lit(`}`)
			if rapid.Bool().Draw(rt, "nested") {
				u := vals[(i+1)%len(vals)]
				x := a.writer(16)
				if x.home != nil {
					rt.Fatalf("a second writer was lent the buffer already lent")
				}
				x.lit(`{"v":`)
				x.val(u)
				x.lit(`}`)
				if got, want := x.mustDigest(), ref(u); got != want {
					rt.Fatalf("nested %q: %s, want %s", u, got, want)
				}
			}
			if got, want := w.mustDigestIn(a), ref(v); got != want {
				rt.Fatalf("%q: %s, want %s", v, got, want)
			}
			if shared.scratch.busy {
				rt.Fatalf("the buffer was not handed back")
			}
		}
		a.plain(strings.Repeat("p", seenMin)) // at least one remembered
		pooled := shared.scratch.p
		shared.scratch.done()
		if shared.scratch.p != nil {
			rt.Fatalf("done kept the buffer")
		}
		// The strings found plain live in the pooled buffer: handed back,
		// it holds none of them.
		if pooled.seen != (plainSeen{}) {
			rt.Fatalf("the pooled buffer still remembers %q", pooled.seen)
		}
	})
}

// TestSeenIsTheDecisionsScratch: a decision's plainSeen is the one in
// its pooled preimage buffer, so it lives outside the decision's records.
func TestSeenIsTheDecisionsScratch(t *testing.T) {
	var shared decisionShared
	seen := shared.scratch.plainSeen()
	if shared.scratch.p == nil || seen != &shared.scratch.p.seen || shared.scratch.plainSeen() != seen {
		t.Fatalf("plainSeen is not the pooled buffer's")
	}
	shared.scratch.done()
}
