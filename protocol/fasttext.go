package protocol

import (
	"bytes"
	"encoding/binary"
)

// The fast check over text.
//
// After the fast schema check, most of Validate's cost is cjson.Decode
// building maps that are read once and dropped. For the kinds whose whole
// verdict the schema gives, the compiled checks of fast.go also run over
// the JSON text itself, without building a value, and Validate returns at
// once when they accept.
//
// The text acceptor reads a deliberately narrow grammar, inside what
// cjson.Decode accepts: strings of printable ASCII without escapes (valid
// UTF-8 and NFC by construction), integers without a leading zero or a
// negative zero and of at most 18 digits (inside int64), true, false,
// null, and containers nested fewer than textMaxDepth deep, with object
// keys that appear once. Anything else — an escape, a non-ASCII byte, a
// longer number, a deep nesting, a large object without a schema — is not
// a rejection: Validate takes the full path, which decides and reports.

// textMaxDepth bounds container nesting on the text path, well inside
// cjson.MaxDepth.
const textMaxDepth = 64

// textKinds are the kinds whose verdict is the schema's alone once the text
// is canonical input: no cross-field rule the schema does not also state,
// no authority-owned member the closed schema admits, and every set-like
// array a uniqueItems array of strings (TestTextKindsNeedOnlyTheSchema
// holds them to it).
var textKinds = []string{
	KindAcceptedEvent, KindFactDelta, KindEffectProposal, KindEligibilityVerdict,
	KindEffectIntent, KindActionReceipt, KindGraphEnvelope, KindGraphDelta,
}

// anyNode accepts every value; free-form members are read with it, so that
// their text is still checked.
var anyNode = &fastNode{minLen: -1, maxLen: -1}

// acceptsText reports whether the whole of text is one object of kind that
// Validate accepts. False means "not decided here".
func acceptsText(kind string, text []byte) bool {
	if !textKind(kind) {
		return false
	}
	n := compiledFast()[kind]
	if n == nil {
		return false
	}
	i := skipWS(text, 0)
	if i >= len(text) || text[i] != '{' {
		return false
	}
	end, ok := n.acceptsTextAt(text, i, 0, 0, false, false, nil)
	return ok && skipWS(text, end) == len(text)
}

func textKind(kind string) bool {
	for _, k := range textKinds {
		if k == kind {
			return true
		}
	}
	return false
}

func skipWS(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// textValue is one scalar read from text.
type textValue struct {
	t   jsonType
	str []byte // tString: the content between the quotes
	num int64  // tInteger
	b   bool   // tBool
}

// scalarText reads the scalar at src[i]; end is just past it. known says
// the text was already read once: a string then ends at the next quote.
func scalarText(src []byte, i int, known bool) (v textValue, end int, ok bool) {
	if i >= len(src) {
		return v, 0, false // the text ends where a value should begin
	}
	switch c := src[i]; {
	case c == '"' && known:
		if j := bytes.IndexByte(src[i+1:], '"'); j >= 0 {
			return textValue{t: tString, str: src[i+1 : i+1+j]}, i + 2 + j, true
		}
	case c == '"':
		j := i + 1
		for j+8 <= len(src) && plainTextWord(binary.LittleEndian.Uint64(src[j:])) {
			j += 8
		}
		for ; j < len(src); j++ {
			c := src[j]
			if c == '"' {
				return textValue{t: tString, str: src[i+1 : j]}, j + 1, true
			}
			if c < 0x20 || c >= 0x7f || c == '\\' {
				return v, 0, false
			}
		}
	case c == 't' && hasWord(src, i, "true"):
		return textValue{t: tBool, b: true}, i + 4, true
	case c == 'f' && hasWord(src, i, "false"):
		return textValue{t: tBool}, i + 5, true
	case c == 'n' && hasWord(src, i, "null"):
		return textValue{t: tNull}, i + 4, true
	case c == '-' || c >= '0' && c <= '9':
		j, neg := i, c == '-'
		if neg {
			j++
		}
		start := j
		var n int64
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			n = n*10 + int64(src[j]-'0')
			j++
		}
		digits := j - start
		if digits == 0 || digits > 18 || digits > 1 && src[start] == '0' || neg && n == 0 {
			return v, 0, false
		}
		if j < len(src) && (src[j] == '.' || src[j] == 'e' || src[j] == 'E') {
			return v, 0, false
		}
		if neg {
			n = -n
		}
		return textValue{t: tInteger, num: n}, j, true
	}
	return v, 0, false
}

// plainTextWord reports whether the eight bytes of w (little-endian) are
// all printable ASCII other than a quote or a backslash: bytes a string of
// the text grammar may hold, none of which ends it. A word holding any
// other byte answers false (its lowest such byte always sets its high bit
// below: no borrow reaches it from the plain bytes under it), and the
// caller reads that word byte by byte.
func plainTextWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs, del := w^(ones*'"'), w^(ones*'\\'), w^(ones*0x7f)
	return ((w-ones*0x20)|(q-ones)|(bs-ones)|(del-ones)|w)&highs == 0
}

func hasWord(src []byte, i int, w string) bool {
	return len(src)-i >= len(w) && string(src[i:i+len(w)]) == w
}

// equalText is scalarEqual between a compiled constant and a scalar read
// from text.
func equalText(c any, v *textValue) bool {
	switch x := c.(type) {
	case nil:
		return v.t == tNull
	case bool:
		return v.t == tBool && v.b == x
	case int64:
		return v.t == tInteger && v.num == x
	case string:
		return v.t == tString && string(v.str) == x
	}
	return false
}

// acceptsTextAt is accepts for the value whose text starts at src[i] (no
// leading space). It returns the index just past the value. depth counts
// schema nodes, cdepth enclosing containers. known says the value's text
// was already read and found inside the grammar (by the schema node that
// applies this one at the same place), so only this node's own keywords
// remain to check; here says the caller is such a node, which does not use
// the returned index, so an object may be left as soon as its declared
// members are checked. spans, when not nil, receives the text of each
// declared member of the object read here, by the member's index in
// n.declared (see textread.go).
func (n *fastNode) acceptsTextAt(src []byte, i, depth, cdepth int, known, here bool, spans [][]byte) (int, bool) {
	return n.acceptsTextIn(src, i, depth, cdepth, known, here, spans, nil)
}

// memberSpans are the members of one object, read by a closed node: its
// declared members' texts by index (nil: absent). Every key of the object
// is one of them, each once.
type memberSpans struct {
	node  *fastNode
	spans [][]byte
}

// spansApplied says whether the subschemas applied at a closed object's
// place read its members from the spans its own check found, instead of
// reading the object again. Tests turn it off to compare the two.
var spansApplied = true

// patternsCut says whether a string a plain pattern checks is read only to
// its closing quote. Tests turn it off to compare.
var patternsCut = true

// acceptsTextIn is acceptsTextAt with outer, when not nil, the members of
// the object at src[i] as a node applying n at the same place read them.
func (n *fastNode) acceptsTextIn(src []byte, i, depth, cdepth int, known, here bool, spans [][]byte, outer *memberSpans) (int, bool) {
	if depth > maxFastDepth || i >= len(src) {
		return 0, false
	}
	var end int
	var t jsonType
	switch src[i] {
	case '{', '[':
		if cdepth >= textMaxDepth {
			return 0, false
		}
		var ok bool
		switch {
		case known && n.props == nil && n.required == nil && n.minProps == 0 && !n.closed && n.items == nil && !n.unique:
			// Nothing of this node looks inside the container. A caller
			// that applies this node at the same place (here) does not use
			// the index past the value, so the value is not passed over.
			t = tObject
			if src[i] == '[' {
				t = tArray
			}
			end, ok = i, true
			if !here {
				end = skipValue(src, i)
			}
		case src[i] == '{' && known && here && outer != nil && n.fromSpans():
			// Applied at the place of a closed object already read: the
			// members are checked where they stand, the object not read
			// again. The caller does not use the index.
			t = tObject
			end, ok = i, n.objectSpans(src, depth, cdepth, outer)
		case src[i] == '{':
			t = tObject
			if outer == nil && spans == nil && spansApplied && n.closed && n.hasApplicators() && len(n.declared) <= 64 {
				var buf [64][]byte
				spans = buf[:len(n.declared)]
			}
			end, ok = n.objectText(src, i, depth, cdepth, known, known && here, spans)
			if ok && outer == nil && spans != nil && spansApplied && n.closed && n.hasApplicators() {
				outer = &memberSpans{node: n, spans: spans}
			}
		default:
			t = tArray
			end, ok = n.arrayText(src, i, depth, cdepth, known)
		}
		if !ok {
			return 0, false
		}
		if n.types != 0 && n.types&t == 0 || n.hasConst || n.enum != nil {
			// Containers are never a compiled constant.
			return 0, false
		}
	default:
		// A string whose every byte the node's pattern must match is read
		// to its closing quote only: the pattern refuses every byte the
		// text path's grammar refuses, and with it, an escape.
		v, e, ok := scalarText(src, i, known || n.plainPattern && patternsCut)
		if !ok || n.types != 0 && n.types&v.t == 0 {
			return 0, false
		}
		end, t = e, v.t
		if n.hasConst && !equalText(n.constVal, &v) {
			return 0, false
		}
		if n.enum != nil {
			found := false
			for _, c := range n.enum {
				if equalText(c, &v) {
					found = true
					break
				}
			}
			if !found {
				return 0, false
			}
		}
		switch t {
		case tString:
			// Printable ASCII: one code point per byte.
			if n.minLen >= 0 && len(v.str) < n.minLen || n.maxLen >= 0 && len(v.str) > n.maxLen {
				return 0, false
			}
			if n.pattern != nil && !matchIn(n.pattern, v.str) {
				return 0, false
			}
			if n.dateTime && !validTimestamp(v.str) {
				return 0, false
			}
		case tInteger:
			if n.hasMin && v.num < n.min || n.hasMax && v.num > n.max {
				return 0, false
			}
		}
	}
	if n.ref != nil {
		if _, ok := n.ref.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); !ok {
			return 0, false
		}
	}
	for _, s := range n.allOf {
		if _, ok := s.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); !ok {
			return 0, false
		}
	}
	if n.anyOf != nil {
		ok := false
		for _, s := range n.anyOf {
			if _, ok = s.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); ok {
				break
			}
		}
		if !ok {
			return 0, false
		}
	}
	if n.ifN != nil {
		if _, ok := n.ifN.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); ok {
			if n.thenN != nil {
				if _, ok := n.thenN.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); !ok {
					return 0, false
				}
			}
		} else if n.elseN != nil {
			if _, ok := n.elseN.acceptsTextIn(src, i, depth+1, cdepth, true, true, nil, outer); !ok {
				return 0, false
			}
		}
	}
	return end, true
}

// hasApplicators reports whether n applies other schemas at its own place.
func (n *fastNode) hasApplicators() bool {
	return n.ref != nil || n.allOf != nil || n.anyOf != nil || n.ifN != nil
}

// fromSpans reports whether objectText's verdict on an object for n,
// applied at the object's place, is that of its declared members alone:
// an open object with no count of members, whose required members are
// all declared. The members left over are then read by anyNode, which
// accepts every value whose text is known.
func (n *fastNode) fromSpans() bool {
	return n.props != nil && !n.closed && n.minProps == 0 && n.nRequired >= 0
}

// objectSpans is objectText's verdict for n (fromSpans) on the object
// whose members outer read: each declared member of n present in it is
// checked as objectText checks it, at the same depths, and the required
// ones counted. A member outer's node does not declare is absent, since
// that node is closed.
func (n *fastNode) objectSpans(src []byte, depth, cdepth int, outer *memberSpans) bool {
	required := 0
	for _, p := range n.declared {
		q, ok := outer.node.props[p.name]
		if !ok || q.idx >= len(outer.spans) || outer.spans[q.idx] == nil {
			continue
		}
		if _, ok := p.node.acceptsTextAt(src, offsetIn(src, outer.spans[q.idx]), depth+1, cdepth+1, true, false, nil); !ok {
			return false
		}
		if p.required {
			required++
		}
	}
	return required == n.nRequired
}

// maxTextKeys bounds the members of an object whose keys are told apart
// by comparing them with each other rather than by the declared members.
const maxTextKeys = 32

func (n *fastNode) objectText(src []byte, i, depth, cdepth int, known, here bool, spans [][]byte) (int, bool) {
	i = skipWS(src, i+1)
	if i < len(src) && src[i] == '}' {
		return i + 1, len(n.required) == 0 && n.minProps == 0 && n.nRequired >= 0
	}
	var seen uint64 // declared members seen, by index (closed objects)
	var keys [maxTextKeys][]byte
	members, required, found := 0, 0, 0
	next := 0 // the index in n.declared of the member expected next
	for {
		if i >= len(src) || src[i] != '"' {
			return 0, false
		}
		k, end, ok := scalarText(src, i, known)
		if !ok {
			return 0, false
		}
		i = skipWS(src, end)
		if i >= len(src) || src[i] != ':' {
			return 0, false
		}
		i = skipWS(src, i+1)
		// Members in canonical order come in the declared order: the
		// member after the last one found is tried before the lookup.
		var p prop
		declared := false
		if next < len(n.declared) && n.declared[next].name == string(k.str) {
			p, declared = n.declared[next], true
		} else {
			p, declared = n.props[string(k.str)]
		}
		if declared {
			next = p.idx + 1
		}
		if n.closed && (!declared || p.idx >= 64) {
			return 0, false
		}
		if n.closed {
			if seen&(1<<p.idx) != 0 {
				return 0, false // a key that appears twice
			}
			seen |= 1 << p.idx
		} else if !known {
			if members >= maxTextKeys {
				return 0, false
			}
			for _, prev := range keys[:members] {
				if string(prev) == string(k.str) {
					return 0, false
				}
			}
			keys[members] = k.str
		}
		members++
		sub := anyNode
		if declared {
			sub = p.node
			if p.required {
				required++
			}
			found++
		}
		start := i
		if i, ok = sub.acceptsTextAt(src, i, depth+1, cdepth+1, known, false, nil); !ok {
			return 0, false
		}
		if declared && p.idx < len(spans) {
			spans[p.idx] = src[start:i]
		}
		if here && !n.closed && n.minProps == 0 && found == len(n.props) {
			// Every declared member is checked and the rest of an open
			// object is free: what is left to read cannot change the verdict.
			return 0, required == n.nRequired
		}
		i = skipWS(src, i)
		if i >= len(src) {
			return 0, false
		}
		if src[i] == '}' {
			break
		}
		if src[i] != ',' {
			return 0, false
		}
		i = skipWS(src, i+1)
	}
	// Required members are all declared ones (nRequired ≥ 0), counted once
	// each because no key appears twice.
	if n.nRequired < 0 || required != n.nRequired || members < n.minProps {
		return 0, false
	}
	return i + 1, true
}

// maxTextUnique bounds the elements of a uniqueItems array compared on the
// text path.
const maxTextUnique = 16

func (n *fastNode) arrayText(src []byte, i, depth, cdepth int, known bool) (int, bool) {
	i = skipWS(src, i+1)
	if i < len(src) && src[i] == ']' {
		return i + 1, true
	}
	sub := anyNode
	if n.items != nil {
		sub = n.items
	}
	var elems [maxTextUnique][]byte
	count := 0
	for {
		if n.unique {
			// Only strings are compared here; any other element is left
			// to the full path.
			v, _, ok := scalarText(src, i, known)
			if !ok || v.t != tString || count >= maxTextUnique {
				return 0, false
			}
			for _, prev := range elems[:count] {
				if string(prev) == string(v.str) {
					return 0, false
				}
			}
			elems[count] = v.str
		}
		count++
		var ok bool
		if i, ok = sub.acceptsTextAt(src, i, depth+1, cdepth+1, known, false, nil); !ok {
			return 0, false
		}
		i = skipWS(src, i)
		if i >= len(src) {
			return 0, false
		}
		if src[i] == ']' {
			return i + 1, true
		}
		if src[i] != ',' {
			return 0, false
		}
		i = skipWS(src, i+1)
	}
}

// skipValue returns the index just past the value at src[i], whose text is
// known to be inside the grammar: its strings have no escapes, so a quote
// always ends one.
func skipValue(src []byte, i int) int {
	level := 0
	for ; i < len(src); i++ {
		switch src[i] {
		case '"':
			j := bytes.IndexByte(src[i+1:], '"')
			if j < 0 {
				return len(src)
			}
			i += 1 + j
			if level == 0 {
				return i + 1
			}
		case '{', '[':
			level++
		case '}', ']':
			level--
			if level == 0 {
				return i + 1
			}
		default:
			if level == 0 {
				if _, end, ok := scalarText(src, i, true); ok {
					return end
				}
				return len(src)
			}
		}
	}
	return i
}
