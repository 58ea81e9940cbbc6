package cjson

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validIDSlow is the identifier rule as first written:
// ^[A-Za-z0-9][A-Za-z0-9._:/-]*$, at most MaxIDLength bytes; with plus,
// the version rule, which also admits '+' after the first byte.
func validIDSlow(s string, plus bool) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && c != '.' && c != '_' && c != ':' && c != '/' && c != '-' && (!plus || c != '+') {
			return false
		}
	}
	return true
}

// ValidID's and ValidVersion's table agrees with each rule for every byte
// in every position and for drawn strings of every length around the
// limit.
func TestValidIDAndVersionAreTheRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		valid func(string) bool
		plus  bool
	}{{"ValidID", ValidID, false}, {"ValidVersion", ValidVersion, true}} {
		t.Run(c.name, func(t *testing.T) {
			for b := range 256 {
				for _, s := range []string{string([]byte{byte(b)}), "v" + string([]byte{byte(b)}), "v" + string([]byte{byte(b)}) + "1"} {
					if c.valid(s) != validIDSlow(s, c.plus) {
						t.Fatalf("%q: %v, the rule says %v", s, c.valid(s), validIDSlow(s, c.plus))
					}
				}
			}
			rapid.Check(t, func(rt *rapid.T) {
				s := rapid.StringOfN(rapid.SampledFrom([]rune("aZ09._:+/-@ é\x00")), 0, 130, -1).Draw(rt, "s")
				if c.valid(s) != validIDSlow(s, c.plus) {
					rt.Fatalf("%q: %v, the rule says %v", s, c.valid(s), validIDSlow(s, c.plus))
				}
			})
		})
	}
}

// idWordMask agrees with the table for every byte at every position of a
// word of identifier bytes, and for every pair of limit bytes at every
// pair of positions.
func TestIDWordMaskIsTheTable(t *testing.T) {
	inClass := func(c byte) bool { return idByte[c]&(idAlnum|idPunct) != 0 }
	check := func(b [8]byte) {
		x := uint64(0)
		ok := true
		for i := 7; i >= 0; i-- {
			x = x<<8 | uint64(b[i])
			ok = ok && inClass(b[i])
		}
		if got := idWordMask(x) == 0; got != ok {
			t.Fatalf("idWordMask(% x) == 0 is %v, the table says %v", b[:], got, ok)
		}
	}
	for at := range 8 {
		for c := range 256 {
			b := [8]byte{'a', 'Z', '0', '.', '_', ':', '/', '-'}
			b[at] = byte(c)
			check(b)
		}
	}
	limits := []byte{0x00, ',', '-', '/', '0', '9', ':', ';', '@', 'A', 'Z', '[', '^', '_', '`', 'a', 'z', '{', 0x7f, 0x80, 0xad, 0xba, 0xc1, 0xdf, 0xe1, 0xff}
	for i := range 8 {
		for j := range 8 {
			for _, c := range limits {
				for _, d := range limits {
					b := [8]byte{'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'}
					b[i], b[j] = c, d
					check(b)
				}
			}
		}
	}
}

// ValidID at every length around the word and the limit, with one byte
// of every value at every position, is the rule.
func TestValidIDWordsAreTheRule(t *testing.T) {
	for n := 1; n <= MaxIDLength+2; n++ {
		base := []byte(strings.Repeat("sha256:0f", 20)[:n])
		for at := range n {
			for c := range 256 {
				b := append([]byte(nil), base...)
				b[at] = byte(c)
				if s := string(b); ValidID(s) != validIDSlow(s, false) {
					t.Fatalf("%q: %v, the rule says %v", s, ValidID(s), validIDSlow(s, false))
				}
			}
		}
	}
}

var validIDInputs = []string{
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	"ticket:refund-agent:run-17:1",
	"r-17",
}

func BenchmarkValidID(b *testing.B) {
	for b.Loop() {
		for _, s := range validIDInputs {
			if ValidID(s) {
				scanSink++
			}
		}
	}
}
