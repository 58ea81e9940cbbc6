package store

import (
	"testing"
	"time"
)

func TestMovedAwayKeepsWhereAndTheQuarantineBefore(t *testing.T) {
	for _, tc := range []struct{ to, prev string }{
		{"postgres://db/flrh", ""},
		{"postgres://db/flrh", "tripwire: budget overrun"},
		{"sqlite:/srv/a (b).db", "checkpoint (format 9) is newer\nquarantined before: x"},
		{"", "moved to another store: elsewhere"},
	} {
		to, prev, moved := MovedFrom(MovedAway(tc.to, tc.prev))
		if !moved || to != tc.to || prev != tc.prev {
			t.Errorf("MovedFrom(MovedAway(%q, %q)) = %q, %q, %v", tc.to, tc.prev, to, prev, moved)
		}
	}
	if to, _, _ := MovedFrom(MovedAway("a\nquarantined before: b", "")); to != "a quarantined before: b" {
		t.Errorf("a destination's line break was kept: %q", to)
	}
	for _, q := range []string{"", "tripwire: budget overrun", "moved to another store", "Moved to another store: x"} {
		if to, prev, moved := MovedFrom(q); moved {
			t.Errorf("MovedFrom(%q) = %q, %q, moved", q, to, prev)
		}
	}
}

func TestMoveOutOf(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	leased := Lease{Owner: "w", Generation: 3, ExpiresAt: now.Add(time.Second)}
	for _, tc := range []struct {
		name string
		run  Run
		want string
		code Code
	}{
		{"unleased", Run{ID: "r"}, MovedAway("there", ""), ""},
		{"lease ran out", Run{ID: "r", Lease: Lease{Owner: "w", ExpiresAt: now}}, MovedAway("there", ""), ""},
		{"lease live", Run{ID: "r", Lease: leased}, "", CodeLeaseHeld},
		{"parked", Run{ID: "r", Quarantine: "tripwire: x"}, MovedAway("there", "tripwire: x"), ""},
		{"moved already, leased since", Run{ID: "r", Quarantine: MovedAway("elsewhere", "q"), Lease: leased}, MovedAway("elsewhere", "q"), ""},
		{"ended", Run{ID: "r", Outcome: "success"}, "", CodeInvalidTransition},
	} {
		got, err := MoveOutOf("move out", tc.run, "there", now)
		if got != tc.want || CodeOf(err) != tc.code {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.code)
		}
	}
}
