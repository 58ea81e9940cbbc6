package jsonread

import (
	"bytes"
	"strings"
	"testing"
)

// SortedMembers reads from a sorted object what Members reads, in one
// call or resumed where a first call stopped, and stops at the first key
// past the last name.
func TestSortedMembersAgreesWithMembers(t *testing.T) {
	keys := []string{"a", "b", "ba", "c", "d", "e"}
	vals := []string{`1`, `"x"`, `[1,{"c":2}]`, `{"a":[],"b":null}`, `true`}
	for mask := 0; mask < 1<<len(keys); mask++ {
		var members []string
		for i, k := range keys {
			if mask&(1<<i) != 0 {
				members = append(members, `"`+k+`":`+vals[(i+mask)%len(vals)])
			}
		}
		b := []byte("{" + strings.Join(members, ",") + "}")
		for _, names := range [][]string{{"b"}, {"a", "c"}, {"ba", "e"}, {"0"}, {"f"}, {"a", "b", "ba", "c", "d", "e"}} {
			want, ok := Members(b, names...)
			if !ok {
				t.Fatalf("%s: Members refuses", b)
			}
			got, next, ok := SortedMembers(b, 0, names...)
			if !ok || !sameValues(got, want) {
				t.Fatalf("%s %q: sorted %q %v, members %q", b, names, got, ok, want)
			}
			if next >= 0 && (b[next] != '"' || string(b[next+1:next+1+bytes.IndexByte(b[next+1:], '"')]) <= names[len(names)-1]) {
				t.Fatalf("%s %q: stopped at %d, not at a key past the last name", b, names, next)
			}
			// Resumed: the first name, then the rest from where it stopped.
			first, next, ok := SortedMembers(b, 0, names[0])
			if !ok || !bytes.Equal(first[0], want[0]) {
				t.Fatalf("%s %q: first %q", b, names, first)
			}
			if len(names) > 1 && next >= 0 {
				rest, _, ok := SortedMembers(b, next, names[1:]...)
				if !ok || !sameValues(rest, want[1:]) {
					t.Fatalf("%s %q: resumed at %d %q, members %q", b, names, next, rest, want[1:])
				}
			}
		}
	}
	for _, b := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"\u0061":1}`, `[1]`, `{"a":}`, `{"a":1`} {
		if _, _, ok := SortedMembers([]byte(b), 0, "c"); ok {
			t.Errorf("%s: read", b)
		}
	}
	for _, at := range []int{-1, 7} {
		if _, _, ok := SortedMembers([]byte(`{"a":1}`), at, "a"); ok {
			t.Errorf("from %d: read", at)
		}
	}
	if _, _, ok := SortedMembers([]byte(`{"a":1}`), 0, "b", "a"); ok {
		t.Error("names out of order: read")
	}
}

func sameValues(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
