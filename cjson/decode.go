package cjson

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds container nesting: the root container is at depth 0 and a
// container at depth MaxDepth or deeper is rejected. Pinned so that every
// implementation agrees instead of failing at its own stack limit.
const MaxDepth = 128

// Decode parses JSON text strictly into the value model of this package:
// map[string]any for objects, []any for arrays, string, int64, bool and nil.
// It rejects everything flrh-cjson/1 rejects (see the package comment), and
// also duplicate object keys, which plain JSON tolerates. It never panics.
func Decode(text []byte) (any, error) {
	return decode(text, len(text) <= sharedTextMax)
}

// DecodeAt is Decode of a value that sits at nesting depth depth of a
// larger text (0 for a whole text): its containers are counted against
// MaxDepth from there, so it accepts exactly what decoding the whole text
// accepts of this value, and gives the same value.
func DecodeAt(text []byte, depth int) (any, error) {
	return decodeAt(text, len(text) <= sharedTextMax, depth)
}

// sharedTextMax bounds the documents whose strings are cut from one copy
// of the whole text: a small document's strings, keys and number texts
// then cost one allocation between them instead of one each, and a string
// kept from it keeps at most this many bytes alive. A larger document's
// strings are copied each on its own.
const sharedTextMax = 4096

// decode is Decode, its strings cut from one copy of the text when shared
// is set.
func decode(text []byte, shared bool) (any, error) { return decodeAt(text, shared, 0) }

// decodeAt is decode of a value at nesting depth depth.
func decodeAt(text []byte, shared bool, depth int) (any, error) {
	d := decoder{src: text}
	if shared {
		d.text = string(text)
	}
	if len(text) >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF {
		return nil, errAt(CodeInvalidUTF8, "/", 0, "byte order mark is not allowed")
	}
	d.skipSpace()
	v, err := d.value(at{}, depth)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.src) {
		return nil, errAt(CodeTrailingData, "/", d.pos, "unexpected data after the JSON value")
	}
	return v, nil
}

type decoder struct {
	src []byte
	pos int
	// text, when not empty, is a copy of src that strings without escapes
	// are cut from.
	text string
}

// slice returns src[i:j] as a string: cut from text when there is one,
// else copied.
func (d *decoder) slice(i, j int) string {
	if d.text != "" {
		return d.text[i:j]
	}
	return string(d.src[i:j])
}

// at is the JSON Pointer of the value being read, kept as its container's
// pointer and its own token until an error needs it spelled out: a
// document has far more members than faults.
type at struct {
	base, tok string
	child     bool
}

func (a at) ptr() string {
	if !a.child {
		return a.base
	}
	return a.base + "/" + a.tok
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) syntax(p at, format string, args ...any) *Error {
	return errAt(CodeSyntax, p.ptr(), d.pos, format, args...)
}

func (d *decoder) value(p at, depth int) (any, error) {
	if d.pos >= len(d.src) {
		return nil, d.syntax(p, "unexpected end of input")
	}
	switch c := d.src[d.pos]; {
	case c == '{':
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, p.ptr(), d.pos, "nesting depth reaches %d", MaxDepth)
		}
		return d.object(p.ptr(), depth)
	case c == '[':
		if depth >= MaxDepth {
			return nil, errAt(CodeNestingDepth, p.ptr(), d.pos, "nesting depth reaches %d", MaxDepth)
		}
		return d.array(p.ptr(), depth)
	case c == '"':
		start := d.pos
		s, err := d.str(p)
		if err != nil {
			return nil, err
		}
		if !stringOK(s) {
			return nil, errAt(CodeNonNFC, p.ptr(), start, "string is not in Unicode NFC")
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number(p)
	case c == 't':
		return true, d.literal(p, "true")
	case c == 'f':
		return false, d.literal(p, "false")
	case c == 'n':
		return nil, d.literal(p, "null")
	case c == 'N' || c == 'I':
		return nil, errAt(CodeFloat, p.ptr(), d.pos, "NaN and Infinity are floating-point values")
	default:
		return nil, d.syntax(p, "unexpected character %q", rune(c))
	}
}

func (d *decoder) literal(p at, word string) error {
	if !strings.HasPrefix(string(d.src[d.pos:min(len(d.src), d.pos+len(word))]), word) {
		return d.syntax(p, "invalid literal")
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) object(ptr string, depth int) (any, error) {
	d.pos++ // '{'
	obj := map[string]any{}
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.src) || d.src[d.pos] != '"' {
			return nil, d.syntax(at{base: ptr}, "expected a string object key")
		}
		keyStart := d.pos
		key, err := d.str(at{base: ptr})
		if err != nil {
			return nil, err
		}
		child := at{ptr, EscapePointer(key), true}
		if !keyOK(key) {
			return nil, checkKey(key, child.ptr(), keyStart)
		}
		if _, dup := obj[key]; dup {
			return nil, errAt(CodeDuplicateKey, child.ptr(), keyStart, "object key %q appears twice", key)
		}
		d.skipSpace()
		if d.pos >= len(d.src) || d.src[d.pos] != ':' {
			return nil, d.syntax(child, "expected ':' after object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(child, depth+1)
		if err != nil {
			return nil, err
		}
		obj[key] = v
		d.skipSpace()
		if d.pos >= len(d.src) {
			return nil, d.syntax(at{base: ptr}, "unterminated object")
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return obj, nil
		default:
			return nil, d.syntax(at{base: ptr}, "expected ',' or '}' in object")
		}
	}
}

func (d *decoder) array(ptr string, depth int) (any, error) {
	d.pos++ // '['
	arr := []any{}
	d.skipSpace()
	if d.pos < len(d.src) && d.src[d.pos] == ']' {
		d.pos++
		return arr, nil
	}
	for i := 0; ; i++ {
		d.skipSpace()
		v, err := d.value(at{ptr, strconv.Itoa(i), true}, depth+1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		d.skipSpace()
		if d.pos >= len(d.src) {
			return nil, d.syntax(at{base: ptr}, "unterminated array")
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return arr, nil
		default:
			return nil, d.syntax(at{base: ptr}, "expected ',' or ']' in array")
		}
	}
}

func (d *decoder) number(p at) (any, error) {
	start := d.pos
	if d.src[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.src) && d.src[d.pos] >= '0' && d.src[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == digits {
		return nil, errAt(CodeSyntax, p.ptr(), start, "a number needs digits")
	}
	if d.pos < len(d.src) {
		if c := d.src[d.pos]; c == '.' || c == 'e' || c == 'E' {
			return nil, errAt(CodeFloat, p.ptr(), start, "floating-point numbers are not allowed; use a scaled integer")
		}
	}
	text := d.slice(start, d.pos)
	if d.pos-digits > 1 && d.src[digits] == '0' {
		return nil, errAt(CodeSyntax, p.ptr(), start, "leading zero in %s", text)
	}
	if text == "-0" {
		return nil, errAt(CodeNegativeZero, p.ptr(), start, "negative zero is not allowed")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, errAt(CodeIntRange, p.ptr(), start, "%s is outside the signed int64 range", text)
	}
	return n, nil
}

// str reads a string literal at d.pos and returns its value. A literal
// with no escape and no control character, in valid UTF-8, is its own
// bytes: it is copied once. Any other takes strSlow, which decodes it, or
// finds its fault and where.
func (d *decoder) str(p at) (string, error) {
	for i := d.pos + 1; i < len(d.src); i++ {
		c := d.src[i]
		if c == '"' {
			if b := d.src[d.pos+1 : i]; utf8.Valid(b) {
				s := d.slice(d.pos+1, i)
				d.pos = i + 1
				return s, nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	return d.strSlow(p)
}

// strSlow is str, byte by byte.
func (d *decoder) strSlow(p at) (string, error) {
	start := d.pos
	d.pos++ // opening quote
	var b strings.Builder
	for {
		if d.pos >= len(d.src) {
			return "", errAt(CodeSyntax, p.ptr(), start, "unterminated string")
		}
		c := d.src[d.pos]
		switch {
		case c == '"':
			d.pos++
			return b.String(), nil
		case c == '\\':
			r, err := d.escape(p)
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case c < 0x20:
			return "", errAt(CodeSyntax, p.ptr(), d.pos, "control character U+%04X must be escaped", c)
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.src[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", errAt(CodeInvalidUTF8, p.ptr(), d.pos, "invalid UTF-8 byte 0x%02x", c)
			}
			b.WriteRune(r)
			d.pos += size
		}
	}
}

// escape decodes one backslash escape (including a surrogate pair).
func (d *decoder) escape(p at) (rune, error) {
	at := d.pos
	if d.pos+1 >= len(d.src) {
		return 0, errAt(CodeSyntax, p.ptr(), at, "unterminated escape")
	}
	c := d.src[d.pos+1]
	d.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, ok := d.hex4()
		if !ok {
			return 0, errAt(CodeSyntax, p.ptr(), at, "invalid \\u escape")
		}
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || d.pos+1 >= len(d.src) || d.src[d.pos] != '\\' || d.src[d.pos+1] != 'u' {
				return 0, errAt(CodeNonScalar, p.ptr(), at, "lone surrogate \\u%04x", r)
			}
			d.pos += 2
			r2, ok := d.hex4()
			if !ok {
				return 0, errAt(CodeSyntax, p.ptr(), at, "invalid \\u escape")
			}
			combined := utf16.DecodeRune(r, r2)
			if combined == utf8.RuneError {
				return 0, errAt(CodeNonScalar, p.ptr(), at, "invalid surrogate pair \\u%04x\\u%04x", r, r2)
			}
			return combined, nil
		}
		return r, nil
	default:
		return 0, errAt(CodeSyntax, p.ptr(), at, "invalid escape \\%c", c)
	}
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.src) {
		return 0, false
	}
	var r rune
	for _, c := range d.src[d.pos : d.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}

// checkKey applies the key rule: protocol member names are ASCII, which also
// makes them NFC, so the reference's NFC check on keys can never fire after
// this one.
func checkKey(key, ptr string, off int) error {
	if !keyOK(key) {
		return errAt(CodeNonASCIIKey, ptr, off, "object keys must be ASCII")
	}
	return nil
}

// EscapePointer escapes one reference token of a JSON Pointer (RFC 6901).
func EscapePointer(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
