package runner

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/control"
)

// eventID spells what the concatenation spelled.
func TestEventIDMatchesConcatenation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run := rapid.String().Draw(t, "run")
		n := rapid.Int64().Draw(t, "n")
		if got, want := eventID(run, n), run+":"+strconv.FormatInt(n, 10); got != want {
			t.Fatalf("eventID %q, want %q", got, want)
		}
	})
}

// The ids of a run's transitions cut from a spelled batch are eventID's,
// whatever the run and the transition asked for next (the next one, as
// a run goes, or any other).
func TestEventIDsMatchEventID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ids eventIDs
		runs := []string{rapid.String().Draw(t, "run"), rapid.String().Draw(t, "other")}
		n := rapid.Int64().Draw(t, "n")
		for range rapid.IntRange(1, 3*idBatch).Draw(t, "calls") {
			run := runs[rapid.IntRange(0, 1).Draw(t, "which")]
			switch rapid.IntRange(0, 3).Draw(t, "how") {
			case 0:
				n = rapid.Int64().Draw(t, "jump")
			default:
				if n < math.MaxInt64 {
					n++
				}
			}
			if got, want := ids.id(run, n), eventID(run, n); got != want {
				t.Fatalf("id %q, want %q", got, want)
			}
		}
	})
}

// A kept record reads as it was kept, however many were kept after it
// (the arena grows past tickEvents), and is a copy: changing what was
// kept afterwards changes nothing.
func TestKeptRecordsStayPut(t *testing.T) {
	var tk tick
	var kept []*control.Record
	for i := range 3*tickEvents + 1 {
		rec := control.Record{Seq: int64(i), EventID: "run:" + strconv.Itoa(i), Pending: []string{}}
		kept = append(kept, tk.keepRecord(rec))
		rec.Seq = -1
	}
	for i, p := range kept {
		if p.Seq != int64(i) || p.EventID != "run:"+strconv.Itoa(i) {
			t.Fatalf("record %d reads %+v", i, *p)
		}
	}
}

// attemptID spells what fmt.Sprintf("%s/attempt/%d") spelled.
func TestAttemptIDMatchesSprintf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id := rapid.String().Draw(t, "intent")
		n := rapid.Int64().Draw(t, "n")
		if got, want := attemptID(id, n), fmt.Sprintf("%s/attempt/%d", id, n); got != want {
			t.Fatalf("attemptID %q, want %q", got, want)
		}
	})
}
