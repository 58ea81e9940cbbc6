package workflow

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestTickStringsAreTheConcatenations holds tickStrings to the three
// strings written out — the event id, the idempotency key and the
// logical timestamp as time.Format writes it — for drawn run ids (short
// and longer than its stack buffer) and times, any int64 included.
func TestTickStringsAreTheConcatenations(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._:/-]{0,40}`).Draw(t, "run")
		if rapid.Bool().Draw(t, "long") {
			run = strings.Repeat(run, 6)
		}
		lt := rapid.Int64().Draw(t, "lt")
		if rapid.Bool().Draw(t, "small") {
			lt = rapid.Int64Range(0, 1<<20).Draw(t, "lt small")
		}
		id, key, stamp := tickStrings(run, lt)
		n := strconv.FormatInt(lt, 10)
		if id != "event:"+run+":"+n || key != "accepted:"+run+":"+n {
			t.Fatalf("tickStrings(%q, %d) ids = %q, %q", run, lt, id, key)
		}
		if want := time.Unix(lt, 0).UTC().Format(time.RFC3339); stamp != want {
			t.Fatalf("tickStrings(%q, %d) stamp = %q, want %q", run, lt, stamp, want)
		}
	})
}
