package jsonread

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// skipByCalls is Skip as first written, a call per container: the oracle
// for skipContainer.
func (s *Scanner) skipByCalls() {
	switch c := s.Peek(); {
	case c == '{':
		s.Object(func([]byte) { s.skipByCalls() })
	case c == '[':
		s.Array(s.skipByCalls)
	case c == '"':
		s.SkipStr()
	case c == 't':
		s.Word("true")
	case c == 'f':
		s.Word("false")
	case c == 'n':
		s.Word("null")
	case c == '-' || c >= '0' && c <= '9':
		s.Int()
	default:
		s.Fail()
	}
}

// skipInt stops and refuses exactly where Int does: every length of
// digits, leading zeros and signs, and int64's bounds.
func TestSkipIntAgreesWithInt(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, text string) {
		fast, slow := NewScanner([]byte(text)), NewScanner([]byte(text))
		fast.skipInt()
		slow.Int()
		if fast.ok != slow.ok || fast.i != slow.i {
			t.Fatalf("%q: skipInt %v at %d, Int %v at %d", text, fast.ok, fast.i, slow.ok, slow.i)
		}
	}
	for _, text := range []string{"", "-", "0", "-0", "00", "01", "-01", "7", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "999999999999999999", "1000000000000000000", "-999999999999999999",
		"99999999999999999999", "1x", "-x", "12,"} {
		check(t, text)
	}
	rapid.Check(t, func(t *rapid.T) {
		check(t, rapid.StringMatching(`-?[0-9]{0,22}[,x\]]?`).Draw(t, "text"))
	})
}

// skipBoth skips b from an outer depth with both skips and reports a
// difference in what they read, refuse or leave.
func skipBoth(b []byte, depth int) string {
	fast, slow := NewScanner(b), NewScanner(b)
	fast.depth, slow.depth = depth, depth
	fast.Skip()
	slow.skipByCalls()
	if fast.ok != slow.ok || fast.depth != slow.depth || fast.ok && fast.i != slow.i {
		return "differs"
	}
	return ""
}

var skipSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `[1,2,[3,{"b":[]}]]`, `{"a":{"b":{"c":[true,false,null]}}}`, `{"a":1,}`, `[1,]`,
	`{"a":1]`, `[1}`, `{"a\"":1}`, `{"a":"x\"y\u00e9\\"}`, `{"a" :1}`, `[1 ,2]`, `{1:2}`, `[01]`, `[-]`,
	`[1.5]`, `[99999999999999999999]`, `{"a":tru}`, `[nul]`, `{"a":1}{`, `[[[[`, `]]`, `{"a":[{"b":{}}],"c":"d"}`,
	"[\"\x01\"]", "{\"\x01\":1}", `[{}]`, `[[],[[]]]`, `{"":""}`,
}

// The loop skips, refuses and stops exactly where the calls do, from any
// outer depth: seeds, text drawn from JSON's own bytes, and nesting at and
// past the depth limit.
func TestSkipAgreesWithCalls(t *testing.T) {
	for _, seed := range skipSeeds {
		for _, d := range []int{0, 1, maxScanDepth - 2, maxScanDepth} {
			if skipBoth([]byte(seed), d) != "" {
				t.Fatalf("%q from depth %d: the skips differ", seed, d)
			}
		}
	}
	for n := maxScanDepth - 2; n <= maxScanDepth+2; n++ {
		for _, text := range []string{strings.Repeat("[", n) + strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n), strings.Repeat(`[{"a":`, n/2) + "1" + strings.Repeat("}]", n/2)} {
			for _, d := range []int{0, 3} {
				if skipBoth([]byte(text), d) != "" {
					t.Fatalf("%d levels from depth %d: the skips differ", n, d)
				}
			}
		}
	}
	pieces := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"b\n"`, `"\u00e9"`, `"\"`, "1", "-2", "0", "01", "true", "false", "null", "x", " ", `"`, "\x01", "é"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 60).Draw(t, "pieces") {
			b.WriteString(p)
		}
		d := rapid.IntRange(0, 3).Draw(t, "depth")
		if skipBoth([]byte(b.String()), d) != "" {
			t.Fatalf("%q from depth %d: the skips differ", b.String(), d)
		}
	})
}

func FuzzSkipAgreesWithCalls(f *testing.F) {
	for _, s := range append(skipSeeds, seeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if skipBoth(b, 0) != "" {
			t.Fatalf("%q: the skips differ", b)
		}
	})
}
