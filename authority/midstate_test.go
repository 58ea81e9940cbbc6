package authority

import (
	"crypto/sha256"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sum256 gives sha256.Sum256 of the whole input whatever the midstate:
// for prefixes of every length up to three blocks, inputs that begin
// with the prefix or with bytes that differ from it anywhere (or stop
// short of it), and a hash reused across calls or from the pool.
func TestSum256FromMidstateIsSum256(t *testing.T) {
	shared := resumers.Get().(*resumer)
	defer resumers.Put(shared)
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(0, 200).Draw(rt, "size")
		opening := string(rapid.SliceOfN(rapid.Byte(), size, size).Draw(rt, "opening"))
		m := newMidstate(opening)
		n := len(opening) &^ 63
		if (m == nil) != (n == 0) || (m != nil && m.prefix != opening[:n]) {
			rt.Fatalf("newMidstate(%d bytes) = %+v", len(opening), m)
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
		var r *resumer
		if rapid.Bool().Draw(rt, "reuse") {
			r = shared
		}
		if got, want := sum256(b, m, r), sha256.Sum256(b); got != want {
			rt.Fatalf("sum256(%q) = %x, want %x", b, got, want)
		}
	})
}

// Every midstate is the state after its own prefix: hashing the prefix
// and anything after it from the midstate is hashing it whole.
func TestMidstatesAreTheirPrefixes(t *testing.T) {
	all := []*midstate{stableBatchMidstate}
	all = append(all, verdictMidstates[:]...)
	all = append(all, inputMidstates[:]...)
	for _, m := range eventMidstates {
		all = append(all, m)
	}
	for _, m := range all {
		if m == nil || len(m.prefix) == 0 || len(m.prefix)%64 != 0 {
			t.Fatalf("midstate %+v: want a prefix of whole blocks", m)
		}
		for _, rest := range []string{"", "x", strings.Repeat("y", 200)} {
			b := []byte(m.prefix + rest)
			if got, want := sum256(b, m, nil), sha256.Sum256(b); got != want {
				t.Fatalf("%q: %x, want %x", b, got, want)
			}
		}
	}
}

func benchSum256(b *testing.B, p []byte, m *midstate, resumed bool) {
	r := resumers.Get().(*resumer)
	for b.Loop() {
		if resumed {
			sum256(p, m, r)
		} else {
			sum256(p, nil, r)
		}
	}
}

var (
	benchEvent = []byte(`{"actor_role":"policy_evaluator","capability":"effect.authorize_low_risk","contract_version":"flrh-h-authority/1","kind":"M4AControlEventPreimage","payload":{"authority_digest":"sha256:` + strings.Repeat("a", 650))
	benchInput = []byte(`{"contract_version":"flrh-h-authority/1","effect_sequence":1,"kind":"AuthorizeInputPreimage","now":` + strings.Repeat("1", 305))
)

// BenchmarkSum256Whole and BenchmarkSum256Resumed hash an 830-byte
// control-event preimage whole and from its event type's midstate (two
// blocks); the OneBlock pair a 404-byte input preimage, whole and from
// its midstate (one block).
func BenchmarkSum256Whole(b *testing.B) {
	benchSum256(b, benchEvent, eventMidstate(EventEffectAuthorized), false)
}
func BenchmarkSum256Resumed(b *testing.B) {
	benchSum256(b, benchEvent, eventMidstate(EventEffectAuthorized), true)
}
func BenchmarkSum256OneBlockWhole(b *testing.B) { benchSum256(b, benchInput, inputMidstates[1], false) }
func BenchmarkSum256OneBlockResumed(b *testing.B) {
	benchSum256(b, benchInput, inputMidstates[1], true)
}

// A midstateCache gives sha256.Sum256 of every preimage whatever it
// holds: preimages drawn from a few openings (so that slots are hit,
// missed and replaced), with the opening's length given right, short or
// long, and bytes changed inside or after it.
func TestMidstateCacheIsSum256(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var c midstateCache
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
			var r *resumer
			if rapid.Bool().Draw(rt, "own hash") {
				r = resumers.Get().(*resumer)
			}
			if got, want := c.sum256(b, n, r), sha256.Sum256(b); got != want {
				rt.Fatalf("sum256(%q, %d) = %x, want %x", b, n, got, want)
			}
		}
	})
}

// Decisions may share the cache at once: every sum is Sum256's while
// goroutines hit and replace the same slots.
func TestMidstateCacheConcurrent(t *testing.T) {
	var c midstateCache
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 300 {
				b := []byte(strings.Repeat(string(rune('a'+(g+i)%6)), 130) + strings.Repeat("z", i%90))
				if c.sum256(b, 130, nil) != sha256.Sum256(b) {
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
