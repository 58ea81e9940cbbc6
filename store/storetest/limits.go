package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testSharedLimits holds the store's shared limits to store.SharedLimits:
// the lowest free slot taken, none past max, slots freed by their holder
// alone or when their hold passes, limits independent by name, arguments
// refused before anything is written, racing takers never sharing a slot
// or a rate's room.
func testSharedLimits(t *testing.T, s store.Store, c *Clock) {
	l, ok := store.SharedLimitsOf(s)
	if !ok {
		t.Skip("the store holds no shared limits")
	}
	const hold = 30 * time.Second
	take := func(name string, max int, holder string) (int, bool) {
		t.Helper()
		slot, ok, err := l.TakeSlot(ctx, name, max, holder, hold, 0)
		must(t, err)
		return slot, ok
	}
	wantSlot := func(name string, max int, holder string, want int) {
		t.Helper()
		if got, ok := take(name, max, holder); !ok || got != want {
			t.Fatalf("%s takes slot %d (ok %v) of %s, want %d", holder, got, ok, name, want)
		}
	}
	wantNone := func(name string, max int, holder string) {
		t.Helper()
		if got, ok := take(name, max, holder); ok {
			t.Fatalf("%s takes slot %d of %s, all of its %d held", holder, got, name, max)
		}
	}

	// Refusals.
	for _, bad := range []func() error{
		func() error { _, _, err := l.TakeSlot(ctx, "", 1, "a", hold, 0); return err },
		func() error { _, _, err := l.TakeSlot(ctx, "pay", 0, "a", hold, 0); return err },
		func() error { _, _, err := l.TakeSlot(ctx, "pay", store.MaxSharedSlots+1, "a", hold, 0); return err },
		func() error { _, _, err := l.TakeSlot(ctx, "pay", 1, "", hold, 0); return err },
		func() error { _, _, err := l.TakeSlot(ctx, "pay", 1, "a", 0, 0); return err },
		func() error { _, _, err := l.TakeSlot(ctx, "pay", 1, "a", hold, -time.Second); return err },
		func() error { return l.LeaveQueue(ctx, "", "a") },
		func() error { return l.GiveSlot(ctx, "pay", -1, "a") },
		func() error { return l.GiveSlot(ctx, "pay", 0, "") },
		func() error { _, _, err := l.TakeToken(ctx, "pay", 0, 0); return err },
		func() error { _, _, err := l.TakeToken(ctx, "", 1, 0); return err },
		func() error { _, _, err := l.TakeToken(ctx, "pay", 1, -time.Second); return err },
	} {
		mustCode(t, bad(), store.CodeInvalidInput)
	}
	// The refusals wrote nothing: a limit of one is free.
	wantSlot("pay", 1, "a", 0)
	must(t, l.GiveSlot(ctx, "pay", 0, "a"))

	// Slots: the lowest free one, none past max.
	wantSlot("pay", 2, "a", 0)
	wantSlot("pay", 2, "b", 1)
	wantNone("pay", 2, "c")
	// Given back by its holder, the slot is free again; given back by
	// another, it stays held.
	must(t, l.GiveSlot(ctx, "pay", 0, "a"))
	wantSlot("pay", 2, "c", 0)
	must(t, l.GiveSlot(ctx, "pay", 0, "a"))
	must(t, l.GiveSlot(ctx, "pay", 1, "c"))
	wantNone("pay", 2, "d")
	// Declared with another bound (a second bundle, a rolling deploy),
	// the strictest bound of the requests holding a slot holds, and
	// every slot held counts against it: a limit grows once no request
	// under the smaller bound holds, and shrinks at once.
	wantNone("pay", 3, "d") // b and c hold under 2
	must(t, l.GiveSlot(ctx, "pay", 0, "c"))
	wantSlot("pay", 3, "d", 0)
	wantNone("pay", 3, "e") // b holds under 2: two open
	must(t, l.GiveSlot(ctx, "pay", 1, "b"))
	wantSlot("pay", 3, "e", 1)
	wantSlot("pay", 3, "f", 2)
	wantNone("pay", 4, "g")
	wantNone("pay", 2, "g") // three open under a bound of two: none more
	must(t, l.GiveSlot(ctx, "pay", 0, "d"))
	must(t, l.GiveSlot(ctx, "pay", 1, "e"))
	wantNone("pay", 1, "g") // f holds slot 2: one open
	must(t, l.GiveSlot(ctx, "pay", 2, "f"))
	wantSlot("pay", 1, "g", 0)
	wantNone("pay", 3, "h") // g holds under 1
	// Names are independent.
	wantSlot("deploy", 1, "a", 0)
	wantSlot("pay-2", 2, "a", 0)
	wantSlot("pay-2", 5, "b", 1)
	// In use: every slot held, by whom and until when and under which
	// bound, limit by limit, and the bounds declared.
	held := func(slot int, holder string, bound int) store.SlotHold {
		return store.SlotHold{Slot: slot, Holder: holder, Until: c.Now().Add(hold), Bound: bound}
	}
	inUse(t, l, []store.LimitUse{
		{Name: "deploy", Held: []store.SlotHold{held(0, "a", 1)}, Bounds: []int{1}},
		{Name: "pay", Held: []store.SlotHold{held(0, "g", 1)}, Bounds: []int{1}},
		{Name: "pay-2", Held: []store.SlotHold{held(0, "a", 2), held(1, "b", 5)}, Bounds: []int{2, 5}},
	})
	// A hold that passed frees the slot (its holder stopped); the old
	// holder's give then changes nothing.
	c.Advance(hold - time.Nanosecond)
	wantNone("deploy", 1, "b")
	c.Advance(time.Nanosecond)
	wantSlot("deploy", 1, "b", 0)
	must(t, l.GiveSlot(ctx, "deploy", 0, "a"))
	wantNone("deploy", 1, "c")
	must(t, l.GiveSlot(ctx, "deploy", 0, "b"))
	wantSlot("deploy", 1, "c", 0)

	// Racing takers of a fresh limit of three: distinct slots, none
	// past three; once they are done, exactly three are held.
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			slot, ok, err := l.TakeSlot(ctx, "race", 3, fmt.Sprintf("r%d", i), hold, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				got = append(got, slot)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	if len(got) == 0 || len(slices.Compact(slices.Clone(got))) != len(got) || got[len(got)-1] > 2 {
		t.Fatalf("racing takers of three slots got %v", got)
	}
	for i := len(got); i < 3; i++ {
		take("race", 3, fmt.Sprintf("late%d", i))
	}
	wantNone("race", 3, "last")

	// The queue: a free slot goes to the longest waiting.
	const queue = time.Second
	queued := func(name string, max int, holder string) (int, bool) {
		t.Helper()
		slot, ok, err := l.TakeSlot(ctx, name, max, holder, hold, queue)
		must(t, err)
		return slot, ok
	}
	wantSlot("fifo", 1, "owner", 0)
	for _, w := range []string{"w1", "w2"} {
		if _, ok := queued("fifo", 1, w); ok {
			t.Fatalf("%s took the only slot, held", w)
		}
		c.Advance(time.Millisecond)
	}
	must(t, l.GiveSlot(ctx, "fifo", 0, "owner"))
	// w2 asks first, but w1 waited longer: the slot is w1's.
	if _, ok := queued("fifo", 1, "w2"); ok {
		t.Fatal("a later waiter took the slot ahead of an earlier one")
	}
	// Nor does a newcomer that does not wait pass them.
	wantNone("fifo", 1, "newcomer")
	if slot, ok := queued("fifo", 1, "w1"); !ok || slot != 0 {
		t.Fatal("the longest waiting did not get the free slot")
	}
	must(t, l.GiveSlot(ctx, "fifo", 0, "w1"))
	if slot, ok := queued("fifo", 1, "w2"); !ok || slot != 0 {
		t.Fatal("the next waiter did not get the slot given back")
	}
	must(t, l.GiveSlot(ctx, "fifo", 0, "w2"))
	// Two free slots go to the two longest waiting, and a third waiter
	// is passed by neither.
	wantSlot("pair", 2, "o1", 0)
	wantSlot("pair", 2, "o2", 1)
	for _, w := range []string{"p1", "p2", "p3"} {
		queued("pair", 2, w)
		c.Advance(time.Millisecond)
	}
	must(t, l.GiveSlot(ctx, "pair", 0, "o1"))
	must(t, l.GiveSlot(ctx, "pair", 1, "o2"))
	if _, ok := queued("pair", 2, "p3"); ok {
		t.Fatal("the third waiter took a slot ahead of the first two")
	}
	for _, w := range []string{"p2", "p1"} {
		if _, ok := queued("pair", 2, w); !ok {
			t.Fatalf("%s, among the two longest waiting, got no slot", w)
		}
	}
	// A waiter that stops asking loses its place once its time in the
	// queue passes; one that keeps asking keeps its place.
	wantSlot("lapse", 1, "owner", 0)
	queued("lapse", 1, "gone")
	c.Advance(time.Millisecond)
	queued("lapse", 1, "kept")
	for range 3 {
		c.Advance(queue / 2)
		queued("lapse", 1, "kept")
	}
	must(t, l.GiveSlot(ctx, "lapse", 0, "owner"))
	if _, ok := queued("lapse", 1, "kept"); !ok {
		t.Fatal("a waiter that stopped asking kept its place ahead of one that kept asking")
	}
	// One that gives up leaves at once.
	wantSlot("leave", 1, "owner", 0)
	queued("leave", 1, "quitter")
	c.Advance(time.Millisecond)
	queued("leave", 3, "stayer")
	// In use: one slot held, two waiting, each bound declared once.
	uses, err := l.LimitsInUse(ctx)
	must(t, err)
	i := slices.IndexFunc(uses, func(u store.LimitUse) bool { return u.Name == "leave" })
	if i < 0 || uses[i].Waiting != 2 || len(uses[i].Held) != 1 || uses[i].Held[0].Holder != "owner" || !slices.Equal(uses[i].Bounds, []int{1, 3}) {
		t.Fatalf("limits in use: %+v, want leave held by owner with two waiting, bounds 1 and 3", uses)
	}
	must(t, l.LeaveQueue(ctx, "leave", "quitter"))
	must(t, l.LeaveQueue(ctx, "leave", "not-there"))
	must(t, l.GiveSlot(ctx, "leave", 0, "owner"))
	if _, ok := queued("leave", 1, "stayer"); !ok {
		t.Fatal("a waiter that left still held its place")
	}
	// A waiter's bound binds as a holder's does: with one waiting under
	// a bound of one, a request declaring three takes no second slot.
	wantSlot("strict", 3, "o", 0)
	queued("strict", 1, "w")
	wantNone("strict", 3, "x")
	must(t, l.LeaveQueue(ctx, "strict", "w"))
	wantSlot("strict", 3, "x", 1)

	// Rates: a burst of per second, then one each 1/per second.
	token := func(name string, perSecond int, maxWait, wantWait time.Duration, wantBooked bool) {
		t.Helper()
		wait, booked, err := l.TakeToken(ctx, name, perSecond, maxWait)
		must(t, err)
		if wait != wantWait || booked != wantBooked {
			t.Fatalf("%s at %d a second, waiting at most %s: wait %s booked %v, want %s %v", name, perSecond, maxWait, wait, booked, wantWait, wantBooked)
		}
	}
	token("lookups", 2, 0, 0, true)
	token("lookups", 2, 0, 0, true)
	// No room now, and no wait allowed: nothing booked, told how long.
	token("lookups", 2, 0, 500*time.Millisecond, false)
	token("lookups", 2, 499*time.Millisecond, 500*time.Millisecond, false)
	// The refusals booked nothing: after the wait there is room, once.
	c.Advance(500 * time.Millisecond)
	token("lookups", 2, 0, 0, true)
	token("lookups", 2, 0, 500*time.Millisecond, false)
	// Booked ahead: each request waits its turn, in the order booked, as
	// far as it may wait.
	token("lookups", 2, time.Second, 500*time.Millisecond, true)
	token("lookups", 2, time.Second, time.Second, true)
	token("lookups", 2, time.Second, 1500*time.Millisecond, false)
	// Names are independent.
	token("payments", 1, 0, 0, true)
	// Racing takers of a fresh limit of four a second: four have room
	// now.
	var admitted sync.Map
	n := 0
	for i := range 10 {
		wg.Go(func() {
			_, booked, err := l.TakeToken(ctx, "racing-rate", 4, 0)
			if err != nil {
				t.Error(err)
				return
			}
			if booked {
				admitted.Store(i, true)
			}
		})
	}
	wg.Wait()
	admitted.Range(func(any, any) bool { n++; return true })
	if n != 4 {
		t.Fatalf("%d of ten racing takers had room in a limit of four a second", n)
	}
	// Racing takers that may wait a second: each books its own turn, four
	// at once and one each 250 ms after, none twice; the two beyond the
	// second are refused.
	var waitsMu sync.Mutex
	var waits []time.Duration
	refused := 0
	for range 10 {
		wg.Go(func() {
			wait, booked, err := l.TakeToken(ctx, "booking-rate", 4, time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			waitsMu.Lock()
			defer waitsMu.Unlock()
			if booked {
				waits = append(waits, wait)
			} else {
				refused++
			}
		})
	}
	wg.Wait()
	slices.Sort(waits)
	q := 250 * time.Millisecond
	if want := []time.Duration{0, 0, 0, 0, q, 2 * q, 3 * q, 4 * q}; !slices.Equal(waits, want) || refused != 2 {
		t.Fatalf("racing bookings waited %v with %d refused, want %v and 2", waits, refused, want)
	}
	// The rates booked past now are in use, each until its arrival time.
	uses, err = l.LimitsInUse(ctx)
	must(t, err)
	booked := map[string]time.Time{}
	for _, u := range uses {
		if !u.BookedUntil.IsZero() {
			booked[u.Name] = u.BookedUntil
		}
	}
	now := c.Now()
	if len(booked) != 4 || !booked["lookups"].Equal(now.Add(2*time.Second)) || !booked["payments"].Equal(now.Add(time.Second)) ||
		!booked["racing-rate"].Equal(now.Add(time.Second)) || !booked["booking-rate"].Equal(now.Add(2*time.Second)) {
		t.Fatalf("rates in use at %s: %v", now, booked)
	}
	// A slower rate booked binds a faster declaration of the same limit
	// for store.RateBoundFor: one declared ten a second is spaced 500 ms
	// after two declared two a second, then the next at 100 ms.
	c.Advance(time.Hour)
	token("mixed", 2, 0, 0, true)
	token("mixed", 2, 0, 0, true)
	token("mixed", 10, time.Second, 500*time.Millisecond, true)
	token("mixed", 10, 0, time.Second, false)
	c.Advance(store.RateBoundFor)
	token("mixed", 10, 0, 0, true)
	token("mixed", 10, 0, 0, true)
	inUse(t, l, []store.LimitUse{{Name: "mixed", BookedUntil: c.Now().Add(200 * time.Millisecond), PerSecond: 10}})
	// Once every hold has passed and every rate caught up, none is.
	c.Advance(time.Hour)
	inUse(t, l, nil)
}

func inUse(t *testing.T, l store.SharedLimits, want []store.LimitUse) {
	t.Helper()
	got, err := l.LimitsInUse(ctx)
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("limits in use: %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || !g.BookedUntil.Equal(w.BookedUntil) || len(g.Held) != len(w.Held) || g.Waiting != w.Waiting || !slices.Equal(g.Bounds, w.Bounds) ||
			g.PerSecond != w.PerSecond && !w.BookedUntil.IsZero() {
			t.Fatalf("limit in use %d: %+v, want %+v", i, g, w)
		}
		for j := range w.Held {
			if g.Held[j].Slot != w.Held[j].Slot || g.Held[j].Holder != w.Held[j].Holder || !g.Held[j].Until.Equal(w.Held[j].Until) || g.Held[j].Bound != w.Held[j].Bound {
				t.Fatalf("%s slot %d: %+v, want %+v", w.Name, j, g.Held[j], w.Held[j])
			}
		}
	}
}
