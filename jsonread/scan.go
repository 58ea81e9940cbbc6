package jsonread

import (
	"encoding/binary"
	"math/bits"
	"strconv"
)

// Scanner reads JSON text in flrh-cjson/1 form (no whitespace, strings
// without escapes where values are read). It only ever opens a fast path:
// on anything it does not expect it gives up (OK false), and the caller
// falls back to a strict decoder, whose verdict and message stand. Whatever
// a fast path built on it accepts, the caller must know to be what the
// strict decoder reads: the struct reader and the member readers here are
// held to encoding/json by fuzz tests; other callers prove what they read
// some other way (comparing bytes they recomputed with the stored ones).
type Scanner struct {
	b     []byte
	i     int
	ok    bool
	depth int // containers open
}

// maxScanDepth bounds nesting: encoding/json refuses text nested deeper
// than its own limit (10,000), so the scanner gives up well before it and
// leaves such text to encoding/json.
const maxScanDepth = 1000

// enter opens a container, giving up past maxScanDepth.
func (s *Scanner) enter() {
	if s.depth++; s.depth > maxScanDepth {
		s.Fail()
	}
}

// NewScanner returns a scanner at the start of b.
func NewScanner(b []byte) *Scanner { return &Scanner{b: b, ok: true} }

// Fail gives up: every later read fails too.
func (s *Scanner) Fail() { s.ok = false }

// Peek returns the next byte (0 at the end or after a failure).
func (s *Scanner) Peek() byte {
	if !s.ok || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Expect reads the byte c.
func (s *Scanner) Expect(c byte) {
	if s.Peek() != c {
		s.Fail()
		return
	}
	s.i++
}

// Str reads a string without escapes and returns its bytes.
func (s *Scanner) Str() string { return string(s.StrBytes()) }

// StrBytes is Str without a copy: the bytes are the text's own.
func (s *Scanner) StrBytes() []byte {
	s.Expect('"')
	if !s.ok {
		return nil
	}
	if i := plainRun(s.b, s.i); i < len(s.b) && s.b[i] == '"' {
		start := s.i
		s.i = i + 1
		return s.b[start:i]
	}
	s.Fail()
	return nil
}

// plainRun returns the index of the first byte at or after i that ends a
// run of plain string bytes — a quote, a backslash or a control character
// — or len(b) when none does. It reads eight bytes at a time while eight
// remain, then byte by byte.
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := w^(ones*'"'), w^(ones*'\\')
		// Each term sets the high bit of the lowest byte of w that is
		// below 0x20, a quote or a backslash, and of no byte below it (a
		// borrow from that byte may mark higher ones too): the lowest
		// bit set is the first byte that ends the run.
		if m := ((w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	return i
}

// SkipStr passes over a string, escapes included.
func (s *Scanner) SkipStr() {
	s.Expect('"')
	for s.ok && s.i < len(s.b) {
		// Runs of plain bytes are passed over in one loop.
		i := plainRun(s.b, s.i)
		s.i = i
		if i == len(s.b) {
			break
		}
		switch c := s.b[i]; {
		case c == '"':
			s.i++
			return
		case c == '\\':
			s.escape()
		default:
			s.Fail()
		}
	}
	s.Fail()
}

// escape passes over one escape sequence, as JSON defines them.
func (s *Scanner) escape() {
	if s.i+1 >= len(s.b) {
		s.Fail()
		return
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
	case 'u':
		if s.i+6 > len(s.b) {
			s.Fail()
			return
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				s.Fail()
				return
			}
		}
		s.i += 6
	default:
		s.Fail()
	}
}

// Skip passes over any value.
func (s *Scanner) Skip() {
	if c := s.Peek(); c == '{' || c == '[' {
		s.skipContainer()
	} else {
		s.skipScalar(c)
	}
}

// skipContainer passes over an object or array as Object and Array with
// Skip for every member and element would, reading and refusing what they
// do, but in one loop: the containers open are a stack of bits (set for an
// object), not of calls.
func (s *Scanner) skipContainer() {
	base := s.depth
	var objects [maxScanDepth/64 + 1]uint64
	level := 0 // containers open in this value
	for s.ok {
		// At a value.
		if c := s.Peek(); c == '{' || c == '[' {
			s.i++
			if s.depth++; s.depth > maxScanDepth {
				s.Fail()
				break
			}
			obj := c == '{'
			if obj {
				objects[level>>6] |= 1 << (level & 63)
			} else {
				objects[level>>6] &^= 1 << (level & 63)
			}
			level++
			if closer := c + 2; s.Peek() != closer { // '{'+2 is '}', '['+2 is ']'
				if obj {
					s.StrBytes()
					s.Expect(':')
				}
				continue
			}
			s.i++
			level--
			s.depth--
		} else {
			s.skipScalar(c)
		}
		// After a value: a separator and the next value, or the close
		// of its container (and then after that container).
		for level > 0 && s.ok {
			obj := objects[(level-1)>>6]&(1<<((level-1)&63)) != 0
			switch s.Peek() {
			case ',':
				s.i++
				if obj {
					s.StrBytes()
					s.Expect(':')
				}
			case '}', ']':
				if (s.b[s.i] == '}') != obj {
					s.Fail()
					break
				}
				s.i++
				level--
				s.depth--
				continue
			default:
				s.Fail()
			}
			break
		}
		if level == 0 {
			break
		}
	}
	s.depth = base
}

// skipScalar passes over a value that is not a container, starting with c.
func (s *Scanner) skipScalar(c byte) {
	switch {
	case c == '"':
		s.SkipStr()
	case c == 't':
		s.Word("true")
	case c == 'f':
		s.Word("false")
	case c == 'n':
		s.Word("null")
	case c == '-' || c >= '0' && c <= '9':
		s.skipInt()
	default:
		s.Fail()
	}
}

// skipInt passes over what Int reads, refusing what it refuses: at most
// 18 digits are always in int64's range, so only longer numbers are
// parsed.
func (s *Scanner) skipInt() {
	start, digits := s.intText()
	switch n := s.i - digits; {
	case n == 0, n > 1 && s.b[digits] == '0':
		s.Fail()
	case n > 18:
		if _, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64); err != nil {
			s.Fail()
		}
	}
}

// intText passes over an optional minus sign and a run of digits, and
// returns where the number and its digits start; Int and skipInt judge
// what it passed over.
func (s *Scanner) intText() (start, digits int) {
	start = s.i
	if s.Peek() == '-' {
		s.i++
	}
	digits = s.i
	for s.ok && s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return start, digits
}

// Word reads the literal w (true, false, null).
func (s *Scanner) Word(w string) {
	if !s.ok || len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		s.Fail()
		return
	}
	s.i += len(w)
}

// Bool reads true or false.
func (s *Scanner) Bool() bool {
	switch s.Peek() {
	case 't':
		s.Word("true")
		return true
	case 'f':
		s.Word("false")
	default:
		s.Fail()
	}
	return false
}

// Int reads an integer in int64's range, as JSON writes it.
func (s *Scanner) Int() int64 {
	start, digits := s.intText()
	if s.i-digits > 1 && s.b[digits] == '0' {
		s.Fail() // not JSON
		return 0
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		s.Fail()
	}
	return n
}

// Object calls member for each key, positioned at its value, which member
// must consume. The key's bytes are the text's own: a member that keeps
// the key copies it.
func (s *Scanner) Object(member func(key []byte)) {
	s.Expect('{')
	s.enter()
	defer func() { s.depth-- }()
	if s.Peek() == '}' {
		s.i++
		return
	}
	for s.ok {
		k := s.StrBytes()
		s.Expect(':')
		if !s.ok {
			return
		}
		member(k)
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.Fail()
		}
	}
}

// Array calls elem for each element, which elem must consume.
func (s *Scanner) Array(elem func()) {
	s.Expect('[')
	s.enter()
	defer func() { s.depth-- }()
	if s.Peek() == ']' {
		s.i++
		return
	}
	for s.ok {
		elem()
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return
		default:
			s.Fail()
		}
	}
}

// End reports whether the whole text was read without a failure.
func (s *Scanner) End() bool { return s.ok && s.i == len(s.b) }

// OK reports whether nothing failed so far.
func (s *Scanner) OK() bool { return s.ok }
