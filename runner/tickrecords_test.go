package runner

import (
	"fmt"
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
