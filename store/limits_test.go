package store

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestNextArrivalBurstThenSpacing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var tat time.Time
	// A fresh limit of 5 a second lets five start at once, then one each
	// 200 ms.
	for i := range 5 {
		next, wait, booked := NextArrival(tat, now, 5, 0)
		if wait != 0 || !booked {
			t.Fatalf("request %d of the burst waits %s (booked %v)", i, wait, booked)
		}
		tat = next
	}
	next, wait, booked := NextArrival(tat, now, 5, 0)
	if wait != 200*time.Millisecond || booked || !next.Equal(tat) {
		t.Fatalf("the sixth: next %s wait %s booked %v, want tat unchanged, 200ms, not booked", next, wait, booked)
	}
	if _, wait, _ := NextArrival(tat, now.Add(wait-time.Nanosecond), 5, 0); wait != time.Nanosecond {
		t.Fatalf("a nanosecond early waits %s", wait)
	}
	if _, wait, booked := NextArrival(tat, now.Add(200*time.Millisecond), 5, 0); wait != 0 || !booked {
		t.Fatalf("on time waits %s (booked %v)", wait, booked)
	}
	// Booked ahead: the sixth and seventh wait their turns.
	for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond} {
		next, wait, booked := NextArrival(tat, now, 5, 400*time.Millisecond)
		if wait != want || !booked {
			t.Fatalf("booking %d waits %s (booked %v), want %s", i, wait, booked, want)
		}
		tat = next
	}
	if _, wait, booked := NextArrival(tat, now, 5, 400*time.Millisecond); wait != 600*time.Millisecond || booked {
		t.Fatalf("a booking beyond the wait: %s booked %v", wait, booked)
	}
}

// TestNextArrivalHoldsTheRate: whatever the requests' times and how long
// each may wait, a limit of p a second starts at most p + p·w requests in
// any window of w seconds (each starting when its booking says), never
// books a wait longer than allowed, and has room, unbooked, once the wait
// it told a refused request has passed.
func TestNextArrivalHoldsTheRate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.IntRange(1, 50).Draw(t, "perSecond")
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var tat time.Time
		var starts []time.Time
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(300*time.Millisecond)).Draw(t, "gap")))
			maxWait := time.Duration(rapid.Int64Range(0, int64(2*time.Second)).Draw(t, "maxWait"))
			next, wait, booked := NextArrival(tat, now, p, maxWait)
			if wait < 0 {
				t.Fatalf("negative wait %s", wait)
			}
			if !booked {
				if !next.Equal(tat) || wait <= maxWait {
					t.Fatalf("step %d: refused with wait %s (at most %s) and the arrival time moved %v", i, wait, maxWait, !next.Equal(tat))
				}
				// After the wait it has room now.
				if _, again, ok := NextArrival(tat, now.Add(wait), p, 0); again != 0 || !ok {
					t.Fatalf("step %d: told to wait %s, then told %s more", i, wait, again)
				}
				continue
			}
			if wait > maxWait {
				t.Fatalf("step %d: booked a wait of %s, over %s", i, wait, maxWait)
			}
			tat = next
			starts = append(starts, now.Add(wait))
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		for i, start := range starts {
			for _, w := range []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 3 * time.Second} {
				n := 0
				for _, a := range starts[i:] {
					if a.Sub(start) < w {
						n++
					}
				}
				if limit := float64(p) + float64(p)*w.Seconds(); float64(n) > limit {
					t.Fatalf("%d started in %s from %s at %d a second (limit %.1f)", n, w, start, p, limit)
				}
			}
		}
	})
}

func TestSharedLimitArgumentsChecked(t *testing.T) {
	long := string(make([]byte, 201))
	for _, tc := range []struct {
		take         bool
		name, holder string
		slot, max    int
		hold         time.Duration
	}{
		{true, "", "h", 0, 1, time.Second},
		{true, "n", "", 0, 1, time.Second},
		{true, long, "h", 0, 1, time.Second},
		{true, "n\xff", "h", 0, 1, time.Second},
		{true, "n", "h", 0, 0, time.Second},
		{true, "n", "h", 0, MaxSharedSlots + 1, time.Second},
		{true, "n", "h", 0, 1, 0},
		{false, "n", "h", -1, 0, 0},
		{false, "n", "h", MaxSharedSlots, 0, 0},
		{false, "n", "", 0, 0, 0},
	} {
		if err := ValidateSlot(tc.take, tc.name, tc.slot, tc.max, tc.holder, tc.hold, 0); CodeOf(err) != CodeInvalidInput {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	if err := ValidateSlot(true, "n", 0, MaxSharedSlots, "h", time.Second, time.Second); err != nil {
		t.Error(err)
	}
	if err := ValidateSlot(true, "n", 0, 1, "h", time.Second, -time.Second); CodeOf(err) != CodeInvalidInput {
		t.Errorf("a negative time in the queue: %v", err)
	}
	for _, p := range []int{0, -1, MaxSharedPerSecond + 1} {
		if err := ValidateToken("n", p, 0); CodeOf(err) != CodeInvalidInput {
			t.Errorf("per second %d: %v", p, err)
		}
	}
	if err := ValidateToken("", 1, 0); CodeOf(err) != CodeInvalidInput {
		t.Errorf("no name: %v", err)
	}
	if err := ValidateToken("n", 1, -time.Nanosecond); CodeOf(err) != CodeInvalidInput {
		t.Errorf("a negative wait: %v", err)
	}
}

func TestLimitUsesGathered(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b LimitUses
	b.Held("pay", SlotHold{Slot: 2, Holder: "c", Until: at, Bound: 4})
	b.Booked("rate", at, 5)
	b.Held("deploy", SlotHold{Slot: 0, Holder: "a", Until: at})
	b.Row("pay", 0, "b", at, 2)
	b.Row("pay", -1, "", at.Add(time.Second), 3)
	b.Waiting("pay", 3, 4, 0, 1)
	got := b.List()
	if len(got) != 3 || got[0].Name != "deploy" || got[1].Name != "pay" || got[2].Name != "rate" {
		t.Fatalf("limits not sorted by name: %+v", got)
	}
	if p := got[1]; len(p.Held) != 2 || p.Held[0].Slot != 0 || p.Held[0].Bound != 2 || p.Held[1].Slot != 2 || !p.BookedUntil.Equal(at.Add(time.Second)) ||
		p.PerSecond != 3 || p.Waiting != 3 || !slices.Equal(p.Bounds, []int{1, 2, 4}) {
		t.Fatalf("pay: %+v", p)
	}
	if d := got[0]; d.Bounds != nil {
		t.Fatalf("deploy, held with no bound recorded: %+v", d)
	}
	if r := got[2]; len(r.Held) != 0 || !r.BookedUntil.Equal(at) || r.PerSecond != 5 {
		t.Fatalf("rate: %+v", r)
	}
	if got := SplitBounds("2,x,,10"); !slices.Equal(got, []int{2, 10}) {
		t.Fatalf("SplitBounds: %v", got)
	}
}

// The strictest bound declared holds, whoever declares it; none
// recorded (0) binds nothing.
func TestSlotBound(t *testing.T) {
	for _, tc := range []struct{ max, strictest, want int }{
		{4, 0, 4}, {4, 2, 2}, {2, 4, 2}, {3, 3, 3}, {1, 1024, 1},
	} {
		if got := SlotBound(tc.max, tc.strictest); got != tc.want {
			t.Errorf("SlotBound(%d, %d) = %d, want %d", tc.max, tc.strictest, got, tc.want)
		}
	}
}

// A slower rate binds faster declarations until it lapses; a faster one
// never binds a slower; a request's own rate binds for RateBoundFor.
func TestRateBound(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(30 * time.Second)
	for _, tc := range []struct {
		name      string
		perSecond int
		kept      int
		keptUntil time.Time
		want      int
		wantUntil time.Time
	}{
		{"never booked", 5, 0, time.Time{}, 5, now.Add(RateBoundFor)},
		{"a slower rate binding", 5, 2, later, 2, later},
		{"a slower rate lapsed", 5, 2, now, 5, now.Add(RateBoundFor)},
		{"a faster rate binding", 2, 5, later, 2, now.Add(RateBoundFor)},
		{"the same rate renewed", 5, 5, later, 5, now.Add(RateBoundFor)},
	} {
		got, until := RateBound(tc.perSecond, tc.kept, tc.keptUntil, now)
		if got != tc.want || !until.Equal(tc.wantUntil) {
			t.Errorf("%s: %d until %v, want %d until %v", tc.name, got, until, tc.want, tc.wantUntil)
		}
	}
}

func TestMayTakeSlot(t *testing.T) {
	for _, tc := range []struct {
		max, held, ahead, lowest int
		want                     bool
	}{
		{1, 0, 0, 0, true},   // free, no one waiting
		{1, 0, 1, 0, false},  // free, but one waits before
		{2, 0, 1, 0, true},   // two free, one waits before: room for both
		{2, 1, 1, 1, false},  // one free, one waits before
		{3, 3, 0, -1, false}, // none free
		{2, 0, 0, -1, false}, // none below max though none counted held
	} {
		if got := MayTakeSlot(tc.max, tc.held, tc.ahead, tc.lowest); got != tc.want {
			t.Errorf("%+v: %v", tc, got)
		}
	}
}
