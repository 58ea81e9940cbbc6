package jsonread

import (
	"testing"

	"pgregory.net/rapid"
)

// plainRunByBytes is plainRun one byte at a time: the oracle.
func plainRunByBytes(b []byte, i int) int {
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	return i
}

// Every byte value, at every offset of a word and past it, stops a run
// exactly where the byte loop does.
func TestPlainRunStopsAtEveryByte(t *testing.T) {
	for n := 0; n < 20; n++ {
		for at := 0; at < n; at++ {
			for c := range 256 {
				b := make([]byte, n)
				for k := range b {
					b[k] = 'a' + byte(k%26)
				}
				b[at] = byte(c)
				for start := 0; start <= n; start++ {
					if got, want := plainRun(b, start), plainRunByBytes(b, start); got != want {
						t.Fatalf("%q from %d: plainRun %d, byte loop %d", b, start, got, want)
					}
				}
			}
		}
	}
}

// Random texts, drawn mostly from the bytes near the ones that stop a run
// (and high bytes, whose borrows the word test must not mistake).
func TestPlainRunMatchesTheByteLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]byte{'"', '\\', 0x1f, 0x20, 0x21, 0x00, 0x01, 0x5b, 0x5d, 0x22 ^ 0x80, 0x5c ^ 0x80, 0x7f, 0x80, 0xa0, 0xff}),
			rapid.Byte()), 0, 64).Draw(t, "b")
		start := rapid.IntRange(0, len(b)).Draw(t, "start")
		if got, want := plainRun(b, start), plainRunByBytes(b, start); got != want {
			t.Fatalf("%q from %d: plainRun %d, byte loop %d", b, start, got, want)
		}
	})
}

// Elements gives each element's text, in order, exactly as it stands,
// and nothing for what is not one array.
func TestElements(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{`["a","b"]`, []string{`"a"`, `"b"`}, true},
		{`[1,{"x":[2,3]},null,"c\"d",[]]`, []string{`1`, `{"x":[2,3]}`, `null`, `"c\"d"`, `[]`}, true},
		{`["a",]`, nil, false},
		{`["a"]x`, nil, false},
		{`{"a":1}`, nil, false},
		{`"a"`, nil, false},
		{``, nil, false},
	} {
		got, ok := Elements([]byte(c.text))
		if ok != c.ok {
			t.Fatalf("%s: ok %v, want %v", c.text, ok, c.ok)
		}
		if !ok {
			continue
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %q, want %q", c.text, got, c.want)
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Fatalf("%s: %q, want %q", c.text, got, c.want)
			}
		}
	}
}
