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

func benchSum256(b *testing.B, resumed bool) {
	p := []byte(`{"actor_role":"policy_evaluator","capability":"effect.authorize_low_risk","contract_version":"flrh-h-authority/1","kind":"M4AControlEventPreimage","payload":{"authority_digest":"sha256:` + strings.Repeat("a", 650))
	m := eventMidstate(EventEffectAuthorized)
	r := resumers.Get().(*resumer)
	for b.Loop() {
		if resumed {
			sum256(p, m, r)
		} else {
			sum256(p, nil, r)
		}
	}
}

// BenchmarkSum256Whole and BenchmarkSum256Resumed hash an 830-byte
// control-event preimage whole and from its event type's midstate.
func BenchmarkSum256Whole(b *testing.B)   { benchSum256(b, false) }
func BenchmarkSum256Resumed(b *testing.B) { benchSum256(b, true) }
