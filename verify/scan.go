package verify

import (
	"fmt"
	"strconv"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
)

// scan reads JSON text that the store should hold in flrh-cjson/1 form
// (no whitespace, strings without escapes where values are read). It only
// ever opens a fast path: on anything it does not expect it gives up
// (ok false), and the caller falls back to the strict decoder, whose
// verdict and message stand. Whatever the fast path accepts it must prove
// some other way, by comparing bytes it recomputed with the stored ones.
type scan struct {
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
func (s *scan) enter() {
	if s.depth++; s.depth > maxScanDepth {
		s.fail()
	}
}

func newScan(b []byte) *scan { return &scan{b: b, ok: true} }

func (s *scan) fail() { s.ok = false }

// peek returns the next byte (0 at the end or after a failure).
func (s *scan) peek() byte {
	if !s.ok || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scan) expect(c byte) {
	if s.peek() != c {
		s.fail()
		return
	}
	s.i++
}

// str reads a string without escapes and returns its bytes.
func (s *scan) str() string { return string(s.strBytes()) }

// strBytes is str without a copy: the bytes are the text's own.
func (s *scan) strBytes() []byte {
	s.expect('"')
	if !s.ok {
		return nil
	}
	for i := s.i; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			start := s.i
			s.i = i + 1
			return s.b[start:i]
		case c == '\\' || c < 0x20:
			s.fail()
			return nil
		}
	}
	s.fail()
	return nil
}

// skipStr passes over a string, escapes included.
func (s *scan) skipStr() {
	s.expect('"')
	for s.ok && s.i < len(s.b) {
		// Runs of plain bytes are passed over in one loop.
		i := s.i
		for i < len(s.b) && s.b[i] != '"' && s.b[i] != '\\' && s.b[i] >= 0x20 {
			i++
		}
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
			s.fail()
		}
	}
	s.fail()
}

// escape passes over one escape sequence, as JSON defines them.
func (s *scan) escape() {
	if s.i+1 >= len(s.b) {
		s.fail()
		return
	}
	switch s.b[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
	case 'u':
		if s.i+6 > len(s.b) {
			s.fail()
			return
		}
		for _, h := range s.b[s.i+2 : s.i+6] {
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				s.fail()
				return
			}
		}
		s.i += 6
	default:
		s.fail()
	}
}

// skip passes over any value.
func (s *scan) skip() {
	switch c := s.peek(); {
	case c == '"':
		s.skipStr()
	case c == '{':
		s.object(func([]byte) { s.skip() })
	case c == '[':
		s.array(s.skip)
	case c == 't':
		s.word("true")
	case c == 'f':
		s.word("false")
	case c == 'n':
		s.word("null")
	case c == '-' || c >= '0' && c <= '9':
		s.int()
	default:
		s.fail()
	}
}

func (s *scan) word(w string) {
	if !s.ok || len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		s.fail()
		return
	}
	s.i += len(w)
}

func (s *scan) boolean() bool {
	switch s.peek() {
	case 't':
		s.word("true")
		return true
	case 'f':
		s.word("false")
	default:
		s.fail()
	}
	return false
}

func (s *scan) int() int64 {
	start := s.i
	if s.peek() == '-' {
		s.i++
	}
	digits := s.i
	for s.ok && s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i-digits > 1 && s.b[digits] == '0' {
		s.fail() // not JSON
		return 0
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil {
		s.fail()
	}
	return n
}

// object calls member for each key, positioned at its value, which member
// must consume. The key's bytes are the text's own: a member that keeps
// the key copies it.
func (s *scan) object(member func(key []byte)) {
	s.expect('{')
	s.enter()
	defer func() { s.depth-- }()
	if s.peek() == '}' {
		s.i++
		return
	}
	for s.ok {
		k := s.strBytes()
		s.expect(':')
		if !s.ok {
			return
		}
		member(k)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.fail()
		}
	}
}

// array calls elem for each element, which elem must consume.
func (s *scan) array(elem func()) {
	s.expect('[')
	s.enter()
	defer func() { s.depth-- }()
	if s.peek() == ']' {
		s.i++
		return
	}
	for s.ok {
		elem()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return
		default:
			s.fail()
		}
	}
}

// end reports whether the whole text was read without a failure.
func (s *scan) end() bool { return s.ok && s.i == len(s.b) }

// stepInputs reads from a stored control record what re-stepping it needs:
// the event it met and the guard inputs it was judged on. Every other
// member is passed over; the re-stepped record, compared byte for byte
// with the stored one, answers for them.
func stepInputs(b []byte) (control.Record, bool) {
	var rec control.Record
	s := newScan(b)
	s.object(func(k []byte) {
		switch string(k) {
		case "event":
			rec.Event = s.str()
		case "actor_role":
			rec.ActorRole = s.str()
		case "capability":
			rec.Capability = s.str()
		case "event_id":
			rec.EventID = s.str()
		case "evidence":
			rec.Evidence = map[string]string{}
			s.object(func(k []byte) { rec.Evidence[string(k)] = s.str() })
		case "guard_inputs":
			rec.GuardInputs = map[string]bool{}
			s.object(func(k []byte) { rec.GuardInputs[string(k)] = s.boolean() })
		default:
			s.skip()
		}
	})
	return rec, s.end()
}

// members returns the raw values of the named members of a top-level
// object, for callers whose slow path decodes it with encoding/json into a
// struct holding those members. It gives up where encoding/json could
// read the text otherwise than exactly: a named member given twice, a key
// that matches one only case-insensitively, or any key that is not ASCII
// (encoding/json folds some non-ASCII letters to ASCII ones).
func members(b []byte, keys ...string) ([][]byte, bool) { return readMembers(b, false, keys) }

// onlyMembers is members for an object that may hold no other member.
func onlyMembers(b []byte, keys ...string) ([][]byte, bool) { return readMembers(b, true, keys) }

func readMembers(b []byte, only bool, keys []string) ([][]byte, bool) {
	out := make([][]byte, len(keys))
	s := newScan(b)
	s.object(func(k []byte) {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 {
				s.fail()
				return
			}
		}
		for i, want := range keys {
			switch {
			case string(k) == want && out[i] == nil:
				start := s.i
				s.skip()
				out[i] = b[start:s.i]
				return
			case asciiEqualFold(k, want):
				s.fail()
				return
			}
		}
		if only {
			s.fail()
			return
		}
		s.skip()
	})
	return out, s.end()
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

// approvalDigest reads an intent's approval_digest member: a string, or
// nil when it is null or absent.
func approvalDigest(b []byte) (*string, bool) {
	var d *string
	s := newScan(b)
	s.object(func(k []byte) {
		if string(k) != "approval_digest" {
			s.skip()
			return
		}
		if s.peek() == 'n' {
			s.word("null")
			d = nil
			return
		}
		v := s.str()
		d = &v
	})
	return d, s.end()
}

// acceptedMembers are the members of an accepted-input record the fast
// reader knows; a record with any other (a usage report, say) is left to
// runner.DecodeAccepted.
var acceptedMembers = []string{"seq", "kind", "actor", "actor_role", "capability", "digest", "body"}

// decodeAccepted is runner.DecodeAccepted without encoding/json for a
// record made only of plain members: the strings without escapes, the
// sequence an integer. Anything else is decoded by runner.DecodeAccepted,
// whose result and error stand.
func decodeAccepted(event []byte) (runner.Accepted, error) {
	m, ok := onlyMembers(event, acceptedMembers...)
	var in runner.Accepted
	for i := 0; ok && i < len(m); i++ {
		if m[i] == nil || i == 6 {
			continue // absent: the zero value, as encoding/json leaves it
		}
		s := newScan(m[i])
		switch i {
		case 0:
			in.Seq = s.int()
		case 1:
			in.Kind = s.str()
		case 2:
			in.Actor = s.str()
		case 3:
			in.ActorRole = s.str()
		case 4:
			in.Capability = s.str()
		case 5:
			in.Digest = s.str()
		}
		ok = s.end()
	}
	if !ok {
		return runner.DecodeAccepted(event)
	}
	body, err := cjson.Canonicalize(m[6])
	if err != nil {
		return runner.Accepted{}, fmt.Errorf("%w: %v", runner.ErrInputNotCanonical, err)
	}
	in.Body = body
	return in, nil
}
