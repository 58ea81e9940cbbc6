package store

import (
	"testing"
	"time"
)

func TestMovedAwayKeepsTheQuarantineBefore(t *testing.T) {
	for _, prev := range []string{"", "tripwire: budget overrun", "checkpoint (format 9) is newer", "moved to another store", ")", "a (b) c)"} {
		q := MovedAway(prev)
		got, moved := MovedFrom(q)
		if !moved || got != prev {
			t.Errorf("MovedFrom(MovedAway(%q)) = %q, %v", prev, got, moved)
		}
	}
	for _, q := range []string{"", "tripwire: budget overrun", "moved to another store!", "moved to another store (it was: x)", "moved to another store (it was quarantined: x"} {
		if prev, moved := MovedFrom(q); moved {
			t.Errorf("MovedFrom(%q) = %q, moved", q, prev)
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
		{"unleased", Run{ID: "r"}, MovedAway(""), ""},
		{"lease ran out", Run{ID: "r", Lease: Lease{Owner: "w", ExpiresAt: now}}, MovedAway(""), ""},
		{"lease live", Run{ID: "r", Lease: leased}, "", CodeLeaseHeld},
		{"parked", Run{ID: "r", Quarantine: "tripwire: x"}, MovedAway("tripwire: x"), ""},
		{"moved already, leased since", Run{ID: "r", Quarantine: MovedAway("q"), Lease: leased}, MovedAway("q"), ""},
		{"ended", Run{ID: "r", Outcome: "success"}, "", CodeInvalidTransition},
	} {
		got, err := MoveOutOf("move out", tc.run, now)
		if got != tc.want || CodeOf(err) != tc.code {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.code)
		}
	}
}
