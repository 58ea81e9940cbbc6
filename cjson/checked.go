package cjson

// AppendChecked appends s between quotes exactly as it is, without the
// scan for bytes to escape that AppendString makes. It is for a string the
// caller already knows is Plain: an id, a digest, a version label or an
// enumerated word checked where the value holding it was built. For such a
// string the bytes are AppendString's; for any other they are not
// canonical, so a caller must never hand it one.
func AppendChecked(b []byte, s string) []byte {
	if CheckedHook != nil {
		CheckedHook(s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendCheckedList appends ss as a JSON array of strings, each written
// by AppendChecked.
func AppendCheckedList(b []byte, ss []string) []byte { return appendList(b, ss, AppendChecked) }

// AppendStringList appends ss as a JSON array of strings, each written by
// AppendString.
func AppendStringList(b []byte, ss []string) []byte { return appendList(b, ss, AppendString) }

func appendList(b []byte, ss []string, appendOne func([]byte, string) []byte) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOne(b, s)
	}
	return append(b, ']')
}

// CheckedHook, when set, is handed every string AppendChecked writes. It
// is nil in a program; tests of the packages that use AppendChecked set it
// (see MustBePlain) so that a string needing escape that reaches the
// unscanned path fails the test that sent it.
var CheckedHook func(string)

// MustBePlain is the CheckedHook tests install: it panics on a string
// AppendString would escape or refuse.
func MustBePlain(s string) {
	if !Plain(s) {
		panic("cjson.AppendChecked was handed " + string(AppendString(nil, s)) + ", which needs escaping")
	}
}

// AppendPlainSet appends ss as the encoder writes a set of strings: its
// elements in the order of their encoded bytes. It is for a writer that
// builds a record member by member and knows the member is a set. It
// reports false when an element is not Plain (its bytes would need the
// encoder) or two elements are equal (a set the encoder refuses); what it
// appended is then to be dropped with the rest of the caller's buffer.
// ss itself is not reordered. TestAppendPlainSetIsTheEncoders holds it to
// Marshal.
func AppendPlainSet(b []byte, ss []string) ([]byte, bool) {
	// Sorted on the stack when the set is small, as sets in records are.
	var stack [8]string
	set := append(stack[:0], ss...)
	for _, s := range set {
		if !Plain(s) {
			return b, false
		}
	}
	for i := 1; i < len(set); i++ {
		for j := i; j > 0; j-- {
			c := compareQuoted(set[j-1], set[j])
			if c == 0 {
				return b, false
			}
			if c < 0 {
				break
			}
			set[j-1], set[j] = set[j], set[j-1]
		}
	}
	return appendList(b, set, AppendChecked), true
}

// compareQuoted compares two plain strings as their encodings compare:
// each between quotes, so where one is a prefix of the other the closing
// quote meets the other's next byte.
func compareQuoted(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) < len(b):
		return int('"') - int(b[n])
	default:
		return int(a[n]) - int('"')
	}
}
