package runner

import (
	"bytes"
	"slices"
)

// sortedPlainInput is the inbox body of an outside input without a usage
// report, for an input whose only departures from canonical text are the
// order of object members and whitespace between tokens (what a client's
// JSON encoder writes of its structs): the input with every object's
// members sorted by their keys' bytes and the whitespace dropped,
// everything else copied as it is. ok when those bytes are canonical and
// not a usage report's wrapper (canonicalPlainInput): they are then what
// decoding the input, checking it (plainInput) and encoding it again gives,
// since they decode to the same value as the input (the same members,
// keys spelled the same, values copied), and canonical bytes are their
// value's own encoding. Anything else — a member repeated, a number or a
// string not spelled canonically, a set not in order, text the copy
// cannot follow — is not ok, and the caller decodes the input, which
// says what is wrong with it.
func sortedPlainInput(input []byte) ([]byte, bool) {
	out := make([]byte, 0, len(input))
	out, end, ok := appendSorted(out, input, skipSpace(input, 0), 0)
	if !ok || skipSpace(input, end) != len(input) || !canonicalPlainInput(out) {
		return nil, false
	}
	return out, true
}

// sortedMaxDepth bounds the containers appendSorted follows into; deeper
// text is left to the decoder (cjson.MaxDepth is the limit it enforces).
const sortedMaxDepth = 64

// sortedMembers is the room an object's members take on the stack; an
// object with more of them grows the list on the heap.
const sortedMembers = 16

// member is one member of an object in the input: its key as written,
// quotes included, and its value's text.
type member struct{ key, val []byte }

// appendSorted appends to out the value of b starting at i (which is not
// whitespace), with its objects' members sorted and whitespace outside
// strings dropped, and returns where the value ends in b.
func appendSorted(out, b []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(b) {
		return out, i, false
	}
	switch b[i] {
	case '{':
		if depth >= sortedMaxDepth {
			return out, i, false
		}
		var room [sortedMembers]member
		members := room[:0]
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return append(out, '{', '}'), i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return out, i, false
			}
			kEnd, ok := stringEnd(b, i)
			if !ok {
				return out, i, false
			}
			key := b[i:kEnd]
			i = skipSpace(b, kEnd)
			if i >= len(b) || b[i] != ':' {
				return out, i, false
			}
			i = skipSpace(b, i+1)
			vEnd, ok := valueEnd(b, i)
			if !ok {
				return out, i, false
			}
			members = append(members, member{key: key, val: b[i:vEnd]})
			i = skipSpace(b, vEnd)
			if i >= len(b) {
				return out, i, false
			}
			if b[i] == '}' {
				break
			}
			if b[i] != ',' {
				return out, i, false
			}
			i = skipSpace(b, i+1)
		}
		// By the keys' bytes between their quotes: cjson's order for keys
		// written without escapes, which are what the check lets through.
		slices.SortFunc(members, func(x, y member) int { return bytes.Compare(x.key[1:len(x.key)-1], y.key[1:len(y.key)-1]) })
		out = append(out, '{')
		for n, m := range members {
			if n > 0 {
				if bytes.Equal(m.key, members[n-1].key) {
					return out, i, false // repeated: the decoder refuses it
				}
				out = append(out, ',')
			}
			out = append(append(out, m.key...), ':')
			var end int
			var ok bool
			if out, end, ok = appendSorted(out, m.val, 0, depth+1); !ok || end != len(m.val) {
				return out, i, false
			}
		}
		return append(out, '}'), i + 1, true
	case '[':
		if depth >= sortedMaxDepth {
			return out, i, false
		}
		out = append(out, '[')
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return append(out, ']'), i + 1, true
		}
		for first := true; ; first = false {
			if !first {
				out = append(out, ',')
			}
			var ok bool
			if out, i, ok = appendSorted(out, b, i, depth+1); !ok {
				return out, i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return out, i, false
			}
			if b[i] == ']' {
				return append(out, ']'), i + 1, true
			}
			if b[i] != ',' {
				return out, i, false
			}
			i = skipSpace(b, i+1)
		}
	}
	end, ok := valueEnd(b, i)
	if !ok {
		return out, i, false
	}
	return append(out, b[i:end]...), end, true
}

// skipSpace returns where the JSON whitespace in b from i ends.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns where the string starting at b[i] (a quote) ends,
// past its closing quote.
func stringEnd(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return i, false
}

// valueEnd returns where the value starting at b[i] ends: a string past
// its closing quote, a container past its closing bracket (strings
// inside it skipped), anything else at the next whitespace or
// punctuation. What is between is not checked here: the sorted text is
// checked as a whole.
func valueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, ok := stringEnd(b, i)
				if !ok {
					return end, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
		}
		return i, false
	case '}', ']', ',', ':':
		return i, false
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']', ':', '{', '[', '"':
			return i, i > start
		}
		i++
	}
	return i, i > start
}
