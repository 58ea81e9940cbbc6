package cjson

import (
	"crypto/sha256"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Sum256 gives sha256.Sum256 of the whole input whatever the midstate:
// for prefixes of every length up to three blocks, inputs that begin
// with the prefix or with bytes that differ from it anywhere (or stop
// short of it), and a hash reused across calls or from the pool.
func TestMidstateSum256IsSum256(t *testing.T) {
	shared := GetResumer()
	defer PutResumer(shared)
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(0, 200).Draw(rt, "size")
		opening := string(rapid.SliceOfN(rapid.Byte(), size, size).Draw(rt, "opening"))
		m := NewMidstate(opening)
		n := len(opening) &^ 63
		if (m == nil) != (n == 0) || (m != nil && m.Prefix() != opening[:n]) {
			rt.Fatalf("NewMidstate(%d bytes) = %+v", len(opening), m)
		}
		b := []byte(opening)
		switch rapid.IntRange(0, 3).Draw(rt, "how") {
		case 1: // one byte of the prefix differs
			if n > 0 {
				b[rapid.IntRange(0, n-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
			}
		case 2: // the input stops inside the prefix
			if n > 0 {
				b = b[:rapid.IntRange(0, n-1).Draw(rt, "cut")]
			}
		case 3: // a byte after the prefix differs
			if len(b) > n {
				b[rapid.IntRange(n, len(b)-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
			}
		}
		b = append(b, rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "rest")...)
		var r *Resumer
		if rapid.Bool().Draw(rt, "reuse") {
			r = shared
		}
		if got, want := m.Sum256(b, r), sha256.Sum256(b); got != want {
			rt.Fatalf("Sum256(%q) = %x, want %x", b, got, want)
		}
	})
}

// Openings gives sha256.Sum256 of every preimage whatever it
// holds: preimages drawn from a few openings (so that slots are hit,
// missed and replaced), with the opening's length given right, short or
// long, and bytes changed inside or after it.
func TestOpeningsSum256IsSum256(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var c Openings
		// Openings of one length that differ in a byte or two, and others.
		size := rapid.IntRange(0, 260).Draw(rt, "size")
		base := rapid.SliceOfN(rapid.Byte(), size, size).Draw(rt, "base")
		openings := [][]byte{base}
		for range rapid.IntRange(0, 5).Draw(rt, "variants") {
			o := append([]byte(nil), base...)
			if len(o) > 0 && rapid.Bool().Draw(rt, "alike") {
				o[rapid.IntRange(0, len(o)-1).Draw(rt, "differs at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "by"))
			} else {
				o = rapid.SliceOfN(rapid.Byte(), 0, 260).Draw(rt, "other")
			}
			openings = append(openings, o)
		}
		for range rapid.IntRange(1, 30).Draw(rt, "preimages") {
			o := openings[rapid.IntRange(0, len(openings)-1).Draw(rt, "which")]
			b := append(append([]byte(nil), o...), rapid.SliceOfN(rapid.Byte(), 0, 200).Draw(rt, "rest")...)
			n := len(o)
			switch rapid.IntRange(0, 3).Draw(rt, "how") {
			case 1: // a byte of the opening differs
				if len(o) > 0 {
					b[rapid.IntRange(0, len(o)-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
				}
			case 2: // the opening's length given wrong, even past the end
				n = rapid.IntRange(-1, len(b)+70).Draw(rt, "n")
			case 3: // the preimage cut inside the opening
				b = b[:rapid.IntRange(0, len(o)).Draw(rt, "cut")]
			}
			var r *Resumer
			if rapid.Bool().Draw(rt, "own hash") {
				r = GetResumer()
			}
			if got, want := c.Sum256(b, n, r), sha256.Sum256(b); got != want {
				rt.Fatalf("sum256(%q, %d) = %x, want %x", b, n, got, want)
			}
		}
	})
}

// Callers may share an Openings at once: every sum is Sum256's while
// goroutines hit and replace the same slots.
func TestOpeningsConcurrent(t *testing.T) {
	var c Openings
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 300 {
				b := []byte(strings.Repeat(string(rune('a'+(g+i)%6)), 130) + strings.Repeat("z", i%90))
				if c.Sum256(b, 130, nil) != sha256.Sum256(b) {
					ok = false
				}
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("a concurrent sum differs from sha256.Sum256")
		}
	}
}
