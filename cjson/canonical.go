package cjson

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// IsCanonical reports whether text is already in flrh-cjson/1 form:
// whether Canonicalize(text) succeeds and returns text itself. It reads the
// text once and builds no value, which is what a verifier needs of every
// stored record it does not otherwise recompute. A text whose root object
// names a kind with set-like arrays is checked through Canonicalize, whose
// ordering rules it would otherwise have to repeat. FuzzIsCanonical holds
// it to Canonicalize.
func IsCanonical(text []byte) bool {
	c := canonicalChecker{b: text}
	if !c.value(0, true) || c.i != len(text) {
		return false
	}
	if setLikePaths[string(c.kind)] != nil {
		out, err := Canonicalize(text)
		return err == nil && bytes.Equal(out, text)
	}
	return true
}

// canonicalAt reports whether text is a value in canonical form as it is
// written depth containers deep, below the root object's members (where
// no array is sorted as a set): whether encoding what it decodes to there
// gives text itself, containers counted against MaxDepth from depth.
func canonicalAt(text []byte, depth int) bool {
	c := canonicalChecker{b: text}
	return c.value(depth, false) && c.i == len(text)
}

// canonicalSetAt reports whether text is an array canonical at the given
// depth whose elements, each as written, are in strictly increasing byte
// order. Decoded and encoded there as a set (each element alone, sorted by
// bytes, none repeated), it gives text back: each element is canonical at
// its own depth, so it is its own encoding, and the order is already the
// set's.
func canonicalSetAt(text []byte, depth int) bool {
	c := canonicalChecker{b: text}
	if c.peek() != '[' || depth >= MaxDepth {
		return false
	}
	c.i++
	if c.peek() == ']' {
		c.i++
		return c.i == len(text)
	}
	var prev []byte
	for first := true; ; first = false {
		start := c.i
		if !c.value(depth+1, false) {
			return false
		}
		elem := text[start:c.i]
		if !first && bytes.Compare(elem, prev) <= 0 {
			return false
		}
		prev = elem
		switch c.peek() {
		case ',':
			c.i++
		case ']':
			c.i++
			return c.i == len(text)
		default:
			return false
		}
	}
}

type canonicalChecker struct {
	b []byte
	i int
	// kind is the root object's string "kind" member, as the text holds
	// it (unescaped where it has escapes): looked up by its bytes, where
	// a string of it was made for every text with a kind.
	kind []byte
}

func (c *canonicalChecker) peek() byte {
	if c.i >= len(c.b) {
		return 0
	}
	return c.b[c.i]
}

// value checks one value at the given container depth (root: 0).
func (c *canonicalChecker) value(depth int, root bool) bool {
	switch ch := c.peek(); {
	case ch == '{':
		return depth < MaxDepth && c.object(depth, root)
	case ch == '[':
		return depth < MaxDepth && c.array(depth)
	case ch == '"':
		_, ok := c.str(false)
		return ok
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	case ch == 't':
		return c.word("true")
	case ch == 'f':
		return c.word("false")
	case ch == 'n':
		return c.word("null")
	}
	return false
}

func (c *canonicalChecker) word(w string) bool {
	if !bytes.HasPrefix(c.b[c.i:], []byte(w)) {
		return false
	}
	c.i += len(w)
	return true
}

// object checks an object: ASCII keys in strictly increasing byte order
// (sorted, none repeated), no whitespace.
func (c *canonicalChecker) object(depth int, root bool) bool {
	c.i++ // '{'
	if c.peek() == '}' {
		c.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		if c.peek() != '"' {
			return false
		}
		key, ok := c.str(true)
		if !ok || !first && bytes.Compare(key, prev) <= 0 {
			return false
		}
		prev = key
		if c.peek() != ':' {
			return false
		}
		c.i++
		if root && string(key) == "kind" && c.peek() == '"' {
			v, ok := c.str(false)
			if !ok {
				return false
			}
			c.kind = v
		} else if !c.value(depth+1, false) {
			return false
		}
		switch c.peek() {
		case ',':
			c.i++
		case '}':
			c.i++
			return true
		default:
			return false
		}
	}
}

func (c *canonicalChecker) array(depth int) bool {
	c.i++ // '['
	if c.peek() == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth+1, false) {
			return false
		}
		switch c.peek() {
		case ',':
			c.i++
		case ']':
			c.i++
			return true
		default:
			return false
		}
	}
}

// number checks a signed 64-bit integer in shortest decimal form.
func (c *canonicalChecker) number() bool {
	start := c.i
	if c.peek() == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	n := c.i - digits
	switch {
	case n == 0, n > 1 && c.b[digits] == '0':
		return false
	case c.i < len(c.b) && (c.b[c.i] == '.' || c.b[c.i] == 'e' || c.b[c.i] == 'E'):
		return false
	}
	text := c.b[start:c.i]
	if string(text) == "-0" {
		return false
	}
	if n < 19 {
		return true
	}
	// 19 digits may pass the int64 range; more always do.
	if n > 19 {
		return false
	}
	limit := "9223372036854775807"
	if text[0] == '-' {
		limit = "9223372036854775808"
	}
	return string(c.b[digits:c.i]) <= limit
}

// str checks a string spelled exactly as the encoder spells it (only the
// quotation mark, the reverse solidus and control characters escaped, each
// in the encoder's form), valid UTF-8 and NFC, and an ASCII one if key. It
// returns the string's value: the text's own bytes, or decoded when it has
// an escape.
func (c *canonicalChecker) str(key bool) ([]byte, bool) {
	c.i++ // '"'
	start := c.i
	escaped, ascii := false, true
	for {
		// A run of plain bytes (printable ASCII but the quote and the
		// backslash) needs no look, and is passed over a word at a time.
		c.i = PlainEnd(c.b, c.i)
		if c.i >= len(c.b) {
			return nil, false
		}
		ch := c.b[c.i]
		switch {
		case ch == '"':
			v := c.b[start:c.i]
			c.i++
			if escaped {
				v = unescapeCanonical(v)
			}
			if key && !ascii || !ascii && !stringOK(string(v)) {
				return nil, false
			}
			return v, true
		case ch == '\\':
			if c.i+1 >= len(c.b) {
				return nil, false
			}
			switch c.b[c.i+1] {
			case '"', '\\', 'n', 'r', 't', 'b', 'f':
				c.i += 2
			case 'u':
				// \u00xx, lowercase, for the control characters that have
				// no short escape.
				if c.i+6 > len(c.b) || c.b[c.i+2] != '0' || c.b[c.i+3] != '0' {
					return nil, false
				}
				hi, lo := c.b[c.i+4], c.b[c.i+5]
				if hi != '0' && hi != '1' || strings.IndexByte(hexDigits, lo) < 0 {
					return nil, false
				}
				switch r := (hi-'0')<<4 | byte(strings.IndexByte(hexDigits, lo)); r {
				case '\n', '\r', '\t', '\b', '\f':
					return nil, false
				}
				c.i += 6
			default:
				return nil, false
			}
			escaped = true
		case ch < 0x20:
			return nil, false
		case ch >= utf8.RuneSelf:
			ascii = false
			c.i++
		default:
			c.i++
		}
	}
}

// unescapeCanonical decodes a string body whose escapes str has checked.
func unescapeCanonical(raw []byte) []byte {
	var b bytes.Buffer
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		if ch != '\\' {
			b.WriteByte(ch)
			continue
		}
		i++
		switch raw[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			b.WriteByte((raw[i+3]-'0')<<4 | byte(strings.IndexByte(hexDigits, raw[i+4])))
			i += 4
		default: // '"' or '\\'
			b.WriteByte(raw[i])
		}
	}
	return b.Bytes()
}
