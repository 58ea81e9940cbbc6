package workflow

import (
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestEventIDsAreTheConcatenations holds eventIDs to the two strings
// written out, for drawn run ids (short and longer than its stack buffer)
// and times.
func TestEventIDsAreTheConcatenations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:/-]{0,40}`).Draw(t, "run")
		if rapid.Bool().Draw(t, "long") {
			run = strings.Repeat(run, 6)
		}
		lt := rapid.Int64().Draw(t, "lt")
		id, key := eventIDs(run, lt)
		n := strconv.FormatInt(lt, 10)
		if id != "event:"+run+":"+n || key != "accepted:"+run+":"+n {
			t.Fatalf("eventIDs(%q, %d) = %q, %q", run, lt, id, key)
		}
	})
}
