package jsonread

import "unicode/utf8"

// Members returns the raw values of the named members of a top-level
// object, for callers whose slow path decodes it with encoding/json into a
// struct holding those members. It gives up where encoding/json could
// read the text otherwise than exactly: a named member given twice, a key
// that matches one only case-insensitively, or any key that is not ASCII
// (encoding/json folds some non-ASCII letters to ASCII ones).
func Members(b []byte, keys ...string) ([][]byte, bool) { return readMembers(b, false, keys) }

// OnlyMembers is Members for an object that may hold no other member.
func OnlyMembers(b []byte, keys ...string) ([][]byte, bool) { return readMembers(b, true, keys) }

func readMembers(b []byte, only bool, keys []string) ([][]byte, bool) {
	out := make([][]byte, len(keys))
	s := NewScanner(b)
	s.Object(func(k []byte) {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 {
				s.Fail()
				return
			}
		}
		for i, want := range keys {
			switch {
			case string(k) == want && out[i] == nil:
				start := s.i
				s.Skip()
				out[i] = b[start:s.i]
				return
			case asciiEqualFold(k, want):
				s.Fail()
				return
			}
		}
		if only {
			s.Fail()
			return
		}
		s.Skip()
	})
	return out, s.End()
}

// asciiEqualFold is strings.EqualFold for an ASCII key: with every byte of
// k below 0x80, no Unicode folding (the Kelvin sign, the long s) can match
// one of its letters, so folding ASCII letters is all there is.
func asciiEqualFold(k []byte, want string) bool {
	if len(k) != len(want) {
		return false
	}
	for i := range k {
		a, b := k[i], want[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// PlainString reads a JSON string without escapes or control characters:
// its bytes between the quotes.
func PlainString(b []byte) (string, bool) {
	s := NewScanner(b)
	v := s.Str()
	return v, s.End()
}

// PlainText is PlainString for a string whose bytes are valid UTF-8:
// encoding/json reads it as exactly those bytes.
func PlainText(b []byte) (string, bool) {
	str, ok := PlainString(b)
	return str, ok && utf8.ValidString(str)
}
