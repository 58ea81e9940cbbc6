package store

import (
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
		next, wait := NextArrival(tat, now, 5)
		if wait != 0 {
			t.Fatalf("request %d of the burst waits %s", i, wait)
		}
		tat = next
	}
	next, wait := NextArrival(tat, now, 5)
	if wait != 200*time.Millisecond || !next.Equal(tat) {
		t.Fatalf("the sixth: next %s wait %s, want tat unchanged and 200ms", next, wait)
	}
	if _, wait := NextArrival(tat, now.Add(wait-time.Nanosecond), 5); wait != time.Nanosecond {
		t.Fatalf("a nanosecond early waits %s", wait)
	}
	if _, wait := NextArrival(tat, now.Add(200*time.Millisecond), 5); wait != 0 {
		t.Fatalf("on time waits %s", wait)
	}
}

// TestNextArrivalHoldsTheRate: whatever the requests' times, a limit of
// p a second admits at most p + p·w requests in any window of w seconds,
// admits a request whenever it said the wait had passed, and never says to
// wait when it admits.
func TestNextArrivalHoldsTheRate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.IntRange(1, 50).Draw(t, "perSecond")
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var tat time.Time
		var admitted []time.Time
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(300*time.Millisecond)).Draw(t, "gap")))
			next, wait := NextArrival(tat, now, p)
			if wait < 0 {
				t.Fatalf("negative wait %s", wait)
			}
			if wait > 0 {
				if !next.Equal(tat) {
					t.Fatalf("a refusal moved the arrival time")
				}
				// After the wait it is admitted.
				if _, again := NextArrival(tat, now.Add(wait), p); again != 0 {
					t.Fatalf("step %d: told to wait %s, then told %s more", i, wait, again)
				}
				continue
			}
			tat = next
			admitted = append(admitted, now)
		}
		for i, start := range admitted {
			for _, w := range []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 3 * time.Second} {
				n := 0
				for _, a := range admitted[i:] {
					if a.Sub(start) < w {
						n++
					}
				}
				if limit := float64(p) + float64(p)*w.Seconds(); float64(n) > limit {
					t.Fatalf("%d admitted in %s from %s at %d a second (limit %.1f)", n, w, start, p, limit)
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
		if err := ValidateSlot(tc.take, tc.name, tc.slot, tc.max, tc.holder, tc.hold); CodeOf(err) != CodeInvalidInput {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	if err := ValidateSlot(true, "n", 0, MaxSharedSlots, "h", time.Second); err != nil {
		t.Error(err)
	}
	for _, p := range []int{0, -1, MaxSharedPerSecond + 1} {
		if err := ValidateToken("n", p); CodeOf(err) != CodeInvalidInput {
			t.Errorf("per second %d: %v", p, err)
		}
	}
	if err := ValidateToken("", 1); CodeOf(err) != CodeInvalidInput {
		t.Errorf("no name: %v", err)
	}
}

func TestLimitUsesGathered(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b LimitUses
	b.Held("pay", SlotHold{Slot: 2, Holder: "c", Until: at})
	b.Booked("rate", at)
	b.Held("deploy", SlotHold{Slot: 0, Holder: "a", Until: at})
	b.Held("pay", SlotHold{Slot: 0, Holder: "b", Until: at})
	b.Booked("pay", at.Add(time.Second))
	got := b.List()
	if len(got) != 3 || got[0].Name != "deploy" || got[1].Name != "pay" || got[2].Name != "rate" {
		t.Fatalf("limits not sorted by name: %+v", got)
	}
	if p := got[1]; len(p.Held) != 2 || p.Held[0].Slot != 0 || p.Held[1].Slot != 2 || !p.BookedUntil.Equal(at.Add(time.Second)) {
		t.Fatalf("pay: %+v", p)
	}
	if r := got[2]; len(r.Held) != 0 || !r.BookedUntil.Equal(at) {
		t.Fatalf("rate: %+v", r)
	}
}
