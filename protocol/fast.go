package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"flrh.dev/flrh/cjson"
)

// The fast schema check.
//
// The general JSON Schema validator builds an evaluation tree, error
// locations and annotations for every value it visits, and that costs far
// more than the shapes of this protocol need: closed objects of strings,
// integers and booleans with patterns, bounds and enums. A wire object that
// is valid — nearly every object on the runtime's paths — only needs the
// answer "yes".
//
// So each kind's schema is also compiled, from the same embedded document,
// into a small tree of checks (fastNode) that answers only yes or no. The
// fast check is an acceptor: when it says yes the schema validator would
// too, and Validate returns without consulting it; when it says no (or the
// value is outside what it understands) the schema validator runs and
// produces the error exactly as before. A fast "no" is therefore never
// reported by itself, so error codes, pointers and details cannot drift.
//
// The compiler understands a subset of draft 2020-12: type, const, enum,
// minLength, maxLength, pattern, format (date-time, the one format the
// schema asserts), minimum, maximum, properties, required,
// additionalProperties (boolean), minProperties, items, uniqueItems, $ref
// to a local definition, anyOf, allOf and if/then/else. A keyword outside
// it makes the kind's compilation fail, and that kind then always takes the
// schema validator: a change to the schema can slow the check down but
// never change a verdict.

// jsonType is a bit per JSON Schema type of a value of the cjson model.
type jsonType uint8

const (
	tNull jsonType = 1 << iota
	tBool
	tInteger
	tString
	tArray
	tObject
	tNumber = tInteger // the value model has integers only
)

// typeOf returns the JSON type of v, or 0 for a Go value outside the cjson
// value model, which the fast check never accepts.
func typeOf(v any) jsonType {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case int64:
		return tInteger
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return 0
}

// maxFastDepth bounds how many schema nodes one check may nest through; a
// value deeper than this is left to the schema validator.
const maxFastDepth = 256

// fastNode is one compiled schema. Zero fields mean "no such keyword".
type fastNode struct {
	types jsonType // allowed types; 0 allows every type

	hasConst bool
	constVal any   // string, int64, bool or nil
	enum     []any // same value kinds as constVal

	minLen, maxLen int // in code points; -1 when absent
	pattern        *matcher
	plainPattern   bool // pattern.plain: a string is read to its quote
	dateTime       bool

	hasMin, hasMax bool
	min, max       int64

	props    map[string]prop
	declared []prop // props in name order, for closed objects
	closed   bool   // additionalProperties: false
	required []string
	// nRequired counts the distinct required names; it is -1 when one of
	// them is not a declared property, and a closed object then accepts
	// nothing.
	nRequired int
	minProps  int

	items  *fastNode
	unique bool

	ref          *fastNode
	anyOf, allOf []*fastNode
	ifN          *fastNode
	thenN, elseN *fastNode
}

// prop is one member schema of an object, and whether the member is
// required, so that a closed object's members are checked and its
// required ones confirmed in one lookup each.
type prop struct {
	idx      int // index in declared
	name     string
	node     *fastNode
	required bool
}

// accepts reports whether v is valid against n. It never panics and never
// allocates for values of the cjson model.
func (n *fastNode) accepts(v any, depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	t := typeOf(v)
	if t == 0 {
		return false
	}
	if n.types != 0 && n.types&t == 0 {
		return false
	}
	if n.hasConst && !scalarEqual(n.constVal, v) {
		return false
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if scalarEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch t {
	case tString:
		s := v.(string)
		if n.minLen >= 0 || n.maxLen >= 0 {
			c := utf8.RuneCountInString(s)
			if n.minLen >= 0 && c < n.minLen || n.maxLen >= 0 && c > n.maxLen {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.match(s) {
			return false
		}
		if n.dateTime && !ValidTimestamp(s) {
			return false
		}
	case tInteger:
		i := v.(int64)
		if n.hasMin && i < n.min || n.hasMax && i > n.max {
			return false
		}
	case tObject:
		if !n.acceptsObject(v.(map[string]any), depth) {
			return false
		}
	case tArray:
		a := v.([]any)
		if n.items != nil {
			for _, e := range a {
				if !n.items.accepts(e, depth+1) {
					return false
				}
			}
		}
		if n.unique && !uniqueStrings(a) {
			return false
		}
	}
	if n.ref != nil && !n.ref.accepts(v, depth+1) {
		return false
	}
	for _, s := range n.allOf {
		if !s.accepts(v, depth+1) {
			return false
		}
	}
	if n.anyOf != nil {
		ok := false
		for _, s := range n.anyOf {
			if s.accepts(v, depth+1) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if n.ifN != nil {
		if n.ifN.accepts(v, depth+1) {
			if n.thenN != nil && !n.thenN.accepts(v, depth+1) {
				return false
			}
		} else if n.elseN != nil && !n.elseN.accepts(v, depth+1) {
			return false
		}
	}
	return true
}

func (n *fastNode) acceptsObject(obj map[string]any, depth int) bool {
	if len(obj) < n.minProps {
		return false
	}
	if n.closed {
		// Look every declared member up rather than range over the object:
		// a lookup costs less than an iteration step and a lookup. The
		// object has no other member exactly when all of its members were
		// found among the declared ones.
		if n.nRequired < 0 {
			return false
		}
		found := 0
		for i := range n.declared {
			d := &n.declared[i]
			e, ok := obj[d.name]
			if !ok {
				if d.required {
					return false
				}
				continue
			}
			if !d.node.accepts(e, depth+1) {
				return false
			}
			found++
		}
		return found == len(obj)
	}
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	if n.props == nil {
		return true
	}
	for k, e := range obj { //flrh:orderfree a conjunction: every member must pass
		if p, ok := n.props[k]; ok && !p.node.accepts(e, depth+1) {
			return false
		}
	}
	return true
}

// scalarEqual is JSON equality for the scalars a compiled const or enum
// holds. Values of different Go types (true and 1, say) are never equal.
func scalarEqual(a, b any) bool {
	switch b.(type) {
	case nil, bool, int64, string:
		return a == b
	}
	return false
}

// uniqueStrings reports whether a holds pairwise different strings. An
// element of another type makes it answer false, leaving the verdict to the
// schema validator's general equality.
func uniqueStrings(a []any) bool {
	if len(a) > 16 {
		return uniqueStringsSorted(a)
	}
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return false
		}
		for _, y := range a[:i] {
			if y.(string) == s {
				return false
			}
		}
	}
	return true
}

// uniqueStringsSorted is uniqueStrings for long arrays, where comparing
// every pair would cost more than sorting a copy.
func uniqueStringsSorted(a []any) bool {
	ss := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return false
		}
		ss[i] = s
	}
	slices.Sort(ss)
	for i := 1; i < len(ss); i++ {
		if ss[i] == ss[i-1] {
			return false
		}
	}
	return true
}

// matcher checks a pattern of the form ^atom...atom$ where an atom is a
// literal byte or an ASCII character class with an optional quantifier,
// and only the last atom may vary in length, so greedy matching needs no
// backtracking. Any other pattern keeps the regular expression, compiled
// by the same engine the schema validator uses (Go's regexp).
type matcher struct {
	atoms []atom
	re    *regexp.Regexp
	// plain says no atom matches a byte a string of the text path may not
	// hold (a control, DEL, a quote, a backslash; classes are ASCII): a
	// string the pattern matches is inside the text path's grammar.
	plain bool
	// digest says the pattern is digestPattern, which cjson.ValidDigest
	// answers eight digits at a time.
	digest bool
}

// digestPattern is the protocol's pattern of a digest: exactly the strings
// cjson.ValidDigest accepts (TestDigestPatternIsValidDigest).
const digestPattern = `^sha256:[0-9a-f]{64}$`

type atom struct {
	class    [4]uint64  // bytes the atom matches (ASCII only)
	min, max int        // repetitions; max < 0 is unbounded
	in       *[256]bool // class as a table, one entry per byte (set by compilePattern)
	// ranges are the class's runs of consecutive bytes, as wordRanges
	// writes them, for reading eight bytes at a time; words says there
	// are at most len(ranges) runs (set by compilePattern).
	ranges [4]wordRange
	words  bool
}

// wordRange is a run of bytes lo..hi below 0x80, as the two words whose
// sums with a word of such bytes set a byte's high bit: lo, when the byte
// is at least lo, and hi, when it is above hi (no carry passes from one
// byte to the next: each sum of a byte and its addend is below 0x100).
// The zero wordRange holds no byte: neither sum sets a high bit.
type wordRange struct{ lo, hi uint64 }

// wordRanges writes the runs of a's class into a.ranges, and reports
// whether there were no more than it holds.
func (a *atom) wordRanges() bool {
	const ones = 0x0101010101010101
	n := 0
	for c := 0; c < 0x80; c++ {
		if !a.has(byte(c)) {
			continue
		}
		lo := c
		for c+1 < 0x80 && a.has(byte(c+1)) {
			c++
		}
		if n == len(a.ranges) {
			a.ranges = [4]wordRange{}
			return false
		}
		a.ranges[n] = wordRange{lo: ones * uint64(0x80-lo), hi: ones * uint64(0x7f-c)}
		n++
	}
	return true
}

// inWord reports whether each of the eight bytes of w (little-endian) is
// in one of the runs r: every byte below 0x80, and for each byte, a run
// whose lo sum sets its high bit and whose hi sum does not
// (TestInWordIsBytewise).
func inWord(w uint64, r *[4]wordRange) bool {
	const highs = 0x8080808080808080
	in := (w+r[0].lo)&^(w+r[0].hi) | (w+r[1].lo)&^(w+r[1].hi) | (w+r[2].lo)&^(w+r[2].hi) | (w+r[3].lo)&^(w+r[3].hi)
	return w&highs == 0 && in&highs == highs
}

// word64 is the eight bytes of s from i, little-endian.
func word64[T string | []byte](s T, i int) uint64 {
	return binary.LittleEndian.Uint64([]byte(s[i : i+8]))
}

func (a *atom) has(c byte) bool { return a.class[c>>6]&(1<<(c&63)) != 0 }

// table returns a's class as one entry per byte.
func (a *atom) table() *[256]bool {
	var t [256]bool
	for c := range t {
		t[c] = a.has(byte(c))
	}
	return &t
}

func (m *matcher) match(s string) bool { return matchIn(m, s) }

// wordsRead says whether matchIn reads an atom's bytes eight at a time
// where it can; tests turn it off to compare.
var wordsRead = true

// matchIn is match for a string or for the bytes of one in a JSON text.
func matchIn[T string | []byte](m *matcher, s T) bool {
	if m.digest {
		switch x := any(s).(type) {
		case string:
			return cjson.ValidDigest(x)
		case []byte:
			return cjson.ValidDigestBytes(x)
		}
	}
	if m.re != nil {
		switch x := any(s).(type) {
		case string:
			return m.re.MatchString(x)
		case []byte:
			return m.re.Match(x)
		}
	}
	i := 0
	for k := range m.atoms {
		// Greedy: as many bytes of the class as the atom may take.
		a := &m.atoms[k]
		end := len(s)
		if a.max >= 0 && a.max < end-i {
			end = i + a.max
		}
		start := i
		if a.words && wordsRead {
			for i+8 <= end && inWord(word64(s, i), &a.ranges) {
				i += 8
			}
		}
		for i < end && a.in[s[i]] {
			i++
		}
		if i-start < a.min {
			return false
		}
	}
	return i == len(s)
}

func compilePattern(p string) (*matcher, error) {
	if atoms, ok := parseSimplePattern(p); ok {
		plain := true
		for i := range atoms {
			atoms[i].in = atoms[i].table()
			atoms[i].words = atoms[i].wordRanges()
			for c := range 256 {
				if atoms[i].in[c] && (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
					plain = false
				}
			}
		}
		return &matcher{atoms: atoms, plain: plain, digest: p == digestPattern}, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	return &matcher{re: re}, nil
}

// parseSimplePattern parses the matcher's pattern subset; ok is false for
// anything else.
func parseSimplePattern(p string) ([]atom, bool) {
	if len(p) < 2 || p[0] != '^' || p[len(p)-1] != '$' || strings.HasSuffix(p, `\$`) {
		return nil, false
	}
	body := p[1 : len(p)-1]
	var atoms []atom
	for i := 0; i < len(body); {
		var a atom
		c := body[i]
		switch {
		case c == '[':
			end := strings.IndexByte(body[i+1:], ']')
			if end < 1 {
				return nil, false
			}
			cls := body[i+1 : i+1+end]
			if cls[0] == '^' || strings.ContainsAny(cls, `\[`) {
				return nil, false
			}
			for j := 0; j < len(cls); j++ {
				lo, hi := cls[j], cls[j]
				if j+2 < len(cls) && cls[j+1] == '-' {
					hi = cls[j+2]
					j += 2
				}
				if lo >= utf8.RuneSelf || hi >= utf8.RuneSelf || lo > hi {
					return nil, false
				}
				for b := int(lo); b <= int(hi); b++ {
					a.class[b>>6] |= 1 << (b & 63)
				}
			}
			i += end + 2
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(":_-/@#%&=,;<>'\"!~`", c) >= 0:
			a.class[c>>6] |= 1 << (c & 63)
			i++
		default:
			return nil, false
		}
		a.min, a.max = 1, 1
		if i < len(body) {
			switch body[i] {
			case '*':
				a.min, a.max = 0, -1
				i++
			case '+':
				a.min, a.max = 1, -1
				i++
			case '?':
				return nil, false
			case '{':
				end := strings.IndexByte(body[i:], '}')
				if end < 0 {
					return nil, false
				}
				n, err := strconv.Atoi(body[i+1 : i+end])
				if err != nil || n < 0 {
					return nil, false
				}
				a.min, a.max = n, n
				i += end + 1
			}
		}
		if len(atoms) > 0 && atoms[len(atoms)-1].min != atoms[len(atoms)-1].max {
			// Only the last atom may vary in length.
			return nil, false
		}
		atoms = append(atoms, a)
	}
	return atoms, true
}

// fastCompiler turns the schema document into fastNodes.
type fastCompiler struct {
	defs  map[string]any
	nodes map[string]*fastNode // compiled definitions, by name
}

// compileFast compiles the fast check of every kind of the embedded
// schema. A kind whose schema uses a keyword outside the subset is absent
// from the result, and Validate uses the schema validator alone for it.
var compiledFast = sync.OnceValue(func() map[string]*fastNode {
	fc, err := newFastCompiler(Schema())
	if err != nil {
		return nil
	}
	out := map[string]*fastNode{}
	for _, k := range append(append([]string(nil), Kinds...), "VersionEnvelope") {
		if n, err := fc.def(k); err == nil {
			out[k] = n
		}
	}
	return out
})

func newFastCompiler(doc []byte) (*fastCompiler, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var root map[string]any
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	defs, ok := root["$defs"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema has no $defs")
	}
	return &fastCompiler{defs: defs, nodes: map[string]*fastNode{}}, nil
}

// def compiles the definition name. A definition is compiled once; a
// reference cycle is refused, since accepts would not terminate on it
// without descending into the value.
func (fc *fastCompiler) def(name string) (*fastNode, error) {
	if n, ok := fc.nodes[name]; ok {
		if n == nil {
			return nil, fmt.Errorf("reference cycle through %s", name)
		}
		return n, nil
	}
	s, ok := fc.defs[name]
	if !ok {
		return nil, fmt.Errorf("no definition %s", name)
	}
	fc.nodes[name] = nil
	n, err := fc.node(s)
	if err != nil {
		delete(fc.nodes, name)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fc.nodes[name] = n
	return n, nil
}

func (fc *fastCompiler) node(s any) (*fastNode, error) {
	switch b := s.(type) {
	case bool:
		if b {
			return &fastNode{minLen: -1, maxLen: -1}, nil
		}
		// false accepts nothing: an empty enum.
		return &fastNode{minLen: -1, maxLen: -1, enum: []any{}}, nil
	case map[string]any:
		return fc.object(b)
	}
	return nil, fmt.Errorf("a schema is an object or a boolean, not %T", s)
}

func (fc *fastCompiler) object(s map[string]any) (*fastNode, error) {
	n := &fastNode{minLen: -1, maxLen: -1}
	for _, kw := range slices.Sorted(maps.Keys(s)) {
		val := s[kw]
		var err error
		switch kw {
		case "$schema", "$id", "$comment", "title", "description", "examples", "$defs":
			// Annotations; $defs are reached through $ref.
		case "type":
			err = n.setTypes(val)
		case "const":
			n.hasConst = true
			n.constVal, err = scalar(val)
		case "enum":
			arr, ok := val.([]any)
			if !ok {
				return nil, fmt.Errorf("enum is not an array")
			}
			n.enum = make([]any, 0, len(arr))
			for _, e := range arr {
				x, err := scalar(e)
				if err != nil {
					return nil, err
				}
				n.enum = append(n.enum, x)
			}
		case "minLength":
			n.minLen, err = count(val)
		case "maxLength":
			n.maxLen, err = count(val)
		case "pattern":
			p, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("pattern is not a string")
			}
			n.pattern, err = compilePattern(p)
			n.plainPattern = err == nil && n.pattern.plain
		case "format":
			if val != "date-time" {
				return nil, fmt.Errorf("format %v is not compiled", val)
			}
			n.dateTime = true
		case "minimum":
			n.hasMin = true
			n.min, err = integer(val)
		case "maximum":
			n.hasMax = true
			n.max, err = integer(val)
		case "properties":
			m, ok := val.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("properties is not an object")
			}
			n.props = make(map[string]prop, len(m))
			for _, name := range slices.Sorted(maps.Keys(m)) {
				pn, err := fc.node(m[name])
				if err != nil {
					return nil, err
				}
				n.props[name] = prop{name: name, node: pn}
			}
		case "additionalProperties":
			b, ok := val.(bool)
			if !ok {
				return nil, fmt.Errorf("additionalProperties is not a boolean")
			}
			n.closed = !b
		case "required":
			arr, ok := val.([]any)
			if !ok {
				return nil, fmt.Errorf("required is not an array")
			}
			for _, r := range arr {
				name, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("required names a non-string")
				}
				n.required = append(n.required, name)
			}
		case "minProperties":
			n.minProps, err = count(val)
		case "items":
			n.items, err = fc.node(val)
		case "uniqueItems":
			b, ok := val.(bool)
			if !ok {
				return nil, fmt.Errorf("uniqueItems is not a boolean")
			}
			n.unique = b
		case "$ref":
			ref, ok := val.(string)
			if !ok || !strings.HasPrefix(ref, "#/$defs/") || strings.ContainsAny(ref[len("#/$defs/"):], "/~%") {
				return nil, fmt.Errorf("$ref %v is not a local definition", val)
			}
			n.ref, err = fc.def(ref[len("#/$defs/"):])
		case "anyOf", "allOf":
			arr, ok := val.([]any)
			if !ok || len(arr) == 0 {
				return nil, fmt.Errorf("%s is not a non-empty array", kw)
			}
			list := make([]*fastNode, len(arr))
			for i, e := range arr {
				if list[i], err = fc.node(e); err != nil {
					return nil, err
				}
			}
			if kw == "anyOf" {
				n.anyOf = list
			} else {
				n.allOf = list
			}
		case "if":
			n.ifN, err = fc.node(val)
		case "then":
			n.thenN, err = fc.node(val)
		case "else":
			n.elseN, err = fc.node(val)
		default:
			return nil, fmt.Errorf("keyword %s is not compiled", kw)
		}
		if err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, r := range n.required {
		if seen[r] {
			continue
		}
		seen[r] = true
		p, ok := n.props[r]
		if !ok {
			n.nRequired = -1
			break
		}
		p.required = true
		n.props[r] = p
		n.nRequired++
	}
	for i, name := range slices.Sorted(maps.Keys(n.props)) {
		p := n.props[name]
		p.idx = i
		n.props[name] = p
		n.declared = append(n.declared, p)
	}
	if n.ifN == nil {
		// then and else without if are ignored by the specification.
		n.thenN, n.elseN = nil, nil
	}
	if n.onlyRef() {
		// A schema that is only a reference accepts what its target
		// accepts: the target is checked in its place, so that a value
		// is not read once for this node and again for the target.
		return n.ref, nil
	}
	return n, nil
}

// onlyRef reports whether $ref is the one keyword of n that checks
// anything.
func (n *fastNode) onlyRef() bool {
	return n.ref != nil && n.types == 0 && !n.hasConst && n.enum == nil &&
		n.minLen < 0 && n.maxLen < 0 && n.pattern == nil && !n.dateTime && !n.hasMin && !n.hasMax &&
		n.props == nil && !n.closed && n.required == nil && n.nRequired == 0 && n.minProps == 0 &&
		n.items == nil && !n.unique && n.anyOf == nil && n.allOf == nil && n.ifN == nil
}

func (n *fastNode) setTypes(val any) error {
	var names []any
	switch t := val.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return fmt.Errorf("type is not a string or an array")
	}
	for _, x := range names {
		switch x {
		case "null":
			n.types |= tNull
		case "boolean":
			n.types |= tBool
		case "integer":
			n.types |= tInteger
		case "number":
			n.types |= tNumber
		case "string":
			n.types |= tString
		case "array":
			n.types |= tArray
		case "object":
			n.types |= tObject
		default:
			return fmt.Errorf("type %v is not compiled", x)
		}
	}
	return nil
}

// scalar converts a const or enum value of the schema to the value model.
func scalar(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case json.Number:
		return integer(x)
	}
	return nil, fmt.Errorf("const or enum value %v is not a scalar", v)
}

func integer(v any) (int64, error) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%v is not a number", v)
	}
	return strconv.ParseInt(string(num), 10, 64)
}

func count(v any) (int, error) {
	i, err := integer(v)
	if err != nil || i < 0 || i > 1<<30 {
		return 0, fmt.Errorf("%v is not a count", v)
	}
	return int(i), nil
}
