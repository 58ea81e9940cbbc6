package jsonread

// SortedMembers returns the raw values of the named members of a
// top-level object whose keys the caller knows to be unique and in
// strictly increasing byte order (a flrh-cjson/1 canonical object),
// reading from offset at: the object's '{' (at 0 for a whole text), or
// the key of a member not yet read, as next gives it. keys must be in
// strictly increasing byte order; a member not read stays nil.
//
// It reads no further than it must: it stops at the first key that sorts
// after the last name, or at the object's close, and returns in next the
// offset of that key (-1 at the close). It does not read what follows, so
// it answers only for text the caller knows well-formed and sorted; ok is
// false where what it does read is not members as the scanner reads them
// (a key with an escape among them), or where keys are out of order.
func SortedMembers(b []byte, at int, keys ...string) (vals [][]byte, next int, ok bool) {
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			return nil, -1, false
		}
	}
	vals = make([][]byte, len(keys))
	if next, ok = sortedMembers(b, at, keys, vals); !ok {
		return nil, -1, false
	}
	return vals, next, true
}

// SortedMember is SortedMembers of one name, without allocating.
func SortedMember(b []byte, at int, key string) (val []byte, next int, ok bool) {
	var vals [1][]byte
	next, ok = sortedMembers(b, at, []string{key}, vals[:])
	return vals[0], next, ok
}

// SortedMembersTo is SortedMembers into vals, one per key, each nil
// before the call (a member not read stays so).
func SortedMembersTo(vals [][]byte, b []byte, at int, keys ...string) (next int, ok bool) {
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			return -1, false
		}
	}
	return sortedMembers(b, at, keys, vals[:len(keys)])
}

// sortedMembers is SortedMembers into vals, one per key, all nil.
func sortedMembers(b []byte, at int, keys []string, vals [][]byte) (next int, ok bool) {
	if at < 0 || at >= len(b) {
		return -1, false
	}
	s := Scanner{b: b, i: at, ok: true}
	if at == 0 {
		s.Expect('{')
		if s.Peek() == '}' {
			return -1, true
		}
	}
	var prev []byte
	for j := 0; s.ok; {
		start := s.i
		k := s.StrBytes()
		if !s.ok || prev != nil && string(k) <= string(prev) {
			return -1, false
		}
		prev = k
		for j < len(keys) && keys[j] < string(k) {
			j++
		}
		if j == len(keys) {
			return start, true
		}
		s.Expect(':')
		v := s.i
		s.Skip()
		if keys[j] == string(k) {
			vals[j] = b[v:s.i]
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			return -1, true
		default:
			s.Fail()
		}
	}
	return -1, false
}
