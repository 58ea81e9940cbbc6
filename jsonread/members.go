package jsonread

import "unicode/utf8"

// Members returns the raw values of the named members of a top-level
// object, for callers whose slow path decodes it with encoding/json into a
// struct holding those members. It gives up where encoding/json could
// read the text otherwise than exactly: a named member given twice, a key
// that matches one only case-insensitively, or any key that is not ASCII
// (encoding/json folds some non-ASCII letters to ASCII ones).
func Members(b []byte, keys ...string) ([][]byte, bool) {
	return readMembers(make([][]byte, len(keys)), b, false, keys, nil)
}

// OnlyMembers is Members for an object that may hold no other member.
func OnlyMembers(b []byte, keys ...string) ([][]byte, bool) {
	return readMembers(make([][]byte, len(keys)), b, true, keys, nil)
}

// OnlyMembersIn is OnlyMembers into out, which holds len(keys) nil
// values: a caller's array keeps the values off the heap.
func OnlyMembersIn(out [][]byte, b []byte, keys ...string) bool {
	_, ok := readMembers(out[:len(keys)], b, true, keys, nil)
	return ok
}

// readMembers is Members into out (len(keys) nil values), finding keys
// through x when it is not nil.
func readMembers(out [][]byte, b []byte, only bool, keys []string, x *keyIndex) ([][]byte, bool) {
	s := NewScanner(b)
	s.Object(func(k []byte) {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 {
				s.Fail()
				return
			}
		}
		i, found := x.find(k, keys)
		switch {
		case found == keyExact && out[i] == nil:
			start := s.i
			s.Skip()
			out[i] = b[start:s.i]
			return
		case found != keyAbsent:
			// Given twice, or matching only case-insensitively.
			s.Fail()
			return
		}
		if only {
			s.Fail()
			return
		}
		s.Skip()
	})
	return out, s.End()
}

// How a key of the text meets the names a reader looks for.
const (
	keyAbsent = iota // no name folds to it
	keyExact         // it is a name
	keyFolded        // it only folds to a name
)

// keyIndex finds a key among a struct's member names by two map lookups
// instead of comparing it with every name.
type keyIndex struct {
	exact  map[string]int
	folded map[string]bool // the names in ASCII lower case
}

// maxIndexedKey bounds the keys keyIndex folds on the stack; a longer key
// is compared with every name.
const maxIndexedKey = 64

// newKeyIndex indexes names, or returns nil (compare with every name) when
// two of them fold alike: then which one a key meets depends on their
// order, as the comparisons see it.
func newKeyIndex(names []string) *keyIndex {
	x := &keyIndex{exact: map[string]int{}, folded: map[string]bool{}}
	for i, n := range names {
		var buf [maxIndexedKey]byte
		l, ok := asciiLower(buf[:0], []byte(n))
		if !ok || x.folded[string(l)] {
			return nil
		}
		x.exact[n], x.folded[string(l)] = i, true
	}
	return x
}

// find says how the ASCII key k meets names (which x indexes, if not nil)
// and, when it is one of them, which: the first name it equals or folds
// to, as comparing it with each name in turn finds.
func (x *keyIndex) find(k []byte, names []string) (int, int) {
	if x != nil {
		if i, ok := x.exact[string(k)]; ok {
			return i, keyExact
		}
		var buf [maxIndexedKey]byte
		if l, ok := asciiLower(buf[:0], k); ok {
			if x.folded[string(l)] {
				return -1, keyFolded
			}
			return -1, keyAbsent
		}
	}
	for i, want := range names {
		switch {
		case string(k) == want:
			return i, keyExact
		case asciiEqualFold(k, want):
			return i, keyFolded
		}
	}
	return -1, keyAbsent
}

// asciiLower appends k in ASCII lower case to dst, or says no when k is
// not ASCII or longer than maxIndexedKey.
func asciiLower(dst, k []byte) ([]byte, bool) {
	if len(k) > maxIndexedKey {
		return nil, false
	}
	for _, c := range k {
		if c >= 0x80 {
			return nil, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst, true
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

// PlainTextBytes is PlainText without the string: the bytes of a JSON
// string without escapes, read in place, and whether they are valid UTF-8.
func PlainTextBytes(b []byte) ([]byte, bool) {
	s := NewScanner(b)
	v := s.StrBytes()
	return v, s.End() && utf8.Valid(v)
}

// Elements returns the raw texts of a top-level array's elements, each
// as the text gives it, or false when the text is not an array the
// scanner reads whole.
func Elements(b []byte) ([][]byte, bool) {
	var out [][]byte
	ok := EachElement(b, func(el []byte) { out = append(out, el) })
	return out, ok
}

// EachElement is Elements without the list: it calls f with each
// element's raw text in order, and reports what Elements reports. When
// the text is not an array the scanner reads whole, f may have been
// called with the elements read before it gave up.
func EachElement(b []byte, f func(el []byte)) bool {
	s := NewScanner(b)
	s.Array(func() {
		start := s.i
		s.Skip()
		f(b[start:s.i])
	})
	return s.End()
}
