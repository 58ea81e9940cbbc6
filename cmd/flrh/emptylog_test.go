package main

import (
	"strings"
	"testing"
)

// What emptying the log did is said in words: nothing for a store that
// keeps none, that the files keep nothing once emptied, and why not and
// what to do otherwise.
func TestLogEmptiedSaid(t *testing.T) {
	for _, tc := range []struct {
		l    *logEmptied
		want string
	}{
		{nil, ""},
		{&logEmptied{Emptied: true}, "log emptied: the store's files keep no byte of the pruned runs\n"},
		{&logEmptied{Error: "a reader held it"}, "log not emptied (a reader held it): the pruned runs stay in the store's log until its next checkpoint; run again, or flrh store compact\n"},
	} {
		var b strings.Builder
		tc.l.print(&b, "pruned runs")
		if b.String() != tc.want {
			t.Errorf("%+v said %q, want %q", tc.l, b.String(), tc.want)
		}
	}
}
