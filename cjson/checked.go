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
