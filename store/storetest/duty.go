package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testDuties holds the store's duty leases to store.Duties: one holder at a
// time, renewals that keep the generation, a lapsed lease taken over with
// it raised, releases that only the current holder makes, refusals that
// write nothing, and one winner among holders racing for a free duty.
func testDuties(t *testing.T, s store.Store, c *Clock) {
	d, ok := store.DutiesOf(s)
	if !ok {
		t.Skip("the store has no duties")
	}
	const ttl = time.Minute
	hold := func(name, holder string) store.Duty {
		t.Helper()
		got, err := d.HoldDuty(ctx, name, holder, ttl)
		must(t, err)
		return got
	}
	want := func(got store.Duty, holder string, gen int64, held bool, expires time.Time) {
		t.Helper()
		if got.Holder != holder || got.Generation != gen || got.Held != held || !got.ExpiresAt.Equal(expires) {
			t.Fatalf("duty = %+v, want holder %q generation %d held %v expiring %s", got, holder, gen, held, expires)
		}
	}
	stored := func(name, holder string, gen int64, expires time.Time) {
		t.Helper()
		got, err := d.Duty(ctx, name)
		must(t, err)
		if got.Name != name || got.Held {
			t.Fatalf("Duty(%q) = %+v", name, got)
		}
		want(got, holder, gen, false, expires)
	}

	// Refusals write nothing.
	long := strings.Repeat("x", 201)
	for _, bad := range []struct {
		name, holder string
		ttl          time.Duration
	}{
		{"", "a", ttl}, {"prune", "", ttl}, {long, "a", ttl}, {"prune", long, ttl},
		{"prune\xff", "a", ttl}, {"prune", "a\xfe", ttl}, {"prune", "a", 0}, {"prune", "a", -time.Second},
	} {
		_, err := d.HoldDuty(ctx, bad.name, bad.holder, bad.ttl)
		mustCode(t, err, store.CodeInvalidInput)
	}
	mustCode(t, d.ReleaseDuty(ctx, store.Duty{Name: "prune"}), store.CodeInvalidInput)
	_, err := d.Duty(ctx, "prune")
	mustCode(t, err, store.CodeNotFound)

	t0 := c.Now()
	want(hold("prune", "a"), "a", 1, true, t0.Add(ttl))
	stored("prune", "a", 1, t0.Add(ttl))
	// Another holder is told who holds it, and writes nothing.
	c.Advance(10 * time.Second)
	want(hold("prune", "b"), "a", 1, false, t0.Add(ttl))
	stored("prune", "a", 1, t0.Add(ttl))
	// A renewal moves the expiry, not the generation.
	want(hold("prune", "a"), "a", 1, true, c.Now().Add(ttl))
	// Duties are independent by name.
	want(hold("backup", "b"), "b", 1, true, c.Now().Add(ttl))
	stored("prune", "a", 1, c.Now().Add(ttl))

	// Lapsed, the duty passes to the next holder with a new generation;
	// the old holder is told so, and its release changes nothing.
	old := hold("prune", "a")
	c.Advance(ttl)
	want(hold("prune", "b"), "b", 2, true, c.Now().Add(ttl))
	want(hold("prune", "a"), "b", 2, false, c.Now().Add(ttl))
	must(t, d.ReleaseDuty(ctx, old))
	stored("prune", "b", 2, c.Now().Add(ttl))
	// A release by a holder of the right name at another generation
	// changes nothing either.
	must(t, d.ReleaseDuty(ctx, store.Duty{Name: "prune", Holder: "b", Generation: 1}))
	stored("prune", "b", 2, c.Now().Add(ttl))

	// A holder that let its lease lapse, with no one taking it, takes it
	// back in the same generation.
	c.Advance(2 * ttl)
	want(hold("prune", "b"), "b", 2, true, c.Now().Add(ttl))

	// Released, the duty is free at once, and the next taker raises the
	// generation, even the holder that released it.
	cur := hold("prune", "b")
	must(t, d.ReleaseDuty(ctx, cur))
	stored("prune", "", 2, time.Time{})
	want(hold("prune", "b"), "b", 3, true, c.Now().Add(ttl))
	must(t, d.ReleaseDuty(ctx, store.Duty{Name: "prune", Holder: "b", Generation: 3}))
	want(hold("prune", "a"), "a", 4, true, c.Now().Add(ttl))
	stored("backup", "b", 1, t0.Add(10*time.Second).Add(ttl))

	// Holders racing for a free duty: exactly one holds it, and every
	// other is told the same holder and generation.
	const racers = 8
	results := make([]store.Duty, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { results[i], errs[i] = d.HoldDuty(ctx, "race", fmt.Sprintf("holder-%d", i), ttl) })
	}
	wg.Wait()
	winner := ""
	for i, r := range results {
		must(t, errs[i])
		if r.Held {
			if winner != "" {
				t.Fatalf("both %s and %s hold the duty", winner, r.Holder)
			}
			winner = r.Holder
		}
	}
	if winner == "" {
		t.Fatalf("no racer holds the duty: %+v", results)
	}
	for _, r := range results {
		if r.Holder != winner || r.Generation != 1 {
			t.Fatalf("a racer was told %+v, the winner is %s at generation 1", r, winner)
		}
	}
	stored("race", winner, 1, c.Now().Add(ttl))

	dutiesAgainstAModel(t, d, c)
}

// dutiesAgainstAModel walks a seeded random sequence of holds, releases
// (current and stale) and clock moves by three holders over one duty, and
// checks every answer and every stored lease against a model of the
// contract kept apart from store.NextDuty.
func dutiesAgainstAModel(t *testing.T, d store.Duties, c *Clock) {
	const name = "model"
	rng := rand.New(rand.NewPCG(1913, 5))
	var holder string
	var gen int64
	var expires time.Time
	last := map[string]store.Duty{} // each holder's last lease held
	for step := range 600 {
		h := fmt.Sprintf("h%d", rng.IntN(3))
		switch op := rng.IntN(10); {
		case op < 5:
			ttl := time.Duration(1+rng.IntN(180)) * time.Second
			got, err := d.HoldDuty(ctx, name, h, ttl)
			must(t, err)
			now := c.Now()
			switch {
			case holder == h:
			case holder == "" || !expires.After(now):
				holder, gen = h, gen+1
			default:
				if got.Held || got.Holder != holder || got.Generation != gen || !got.ExpiresAt.Equal(expires) {
					t.Fatalf("step %d: %s asked for the duty %s holds until %s (generation %d), and got %+v", step, h, holder, expires, gen, got)
				}
				continue
			}
			expires = now.Add(ttl)
			if !got.Held || got.Holder != h || got.Generation != gen || !got.ExpiresAt.Equal(expires) {
				t.Fatalf("step %d: %s should hold the duty at generation %d until %s, got %+v", step, h, gen, expires, got)
			}
			last[h] = got
		case op < 7:
			l, ok := last[h]
			if !ok {
				continue
			}
			must(t, d.ReleaseDuty(ctx, l))
			if holder == l.Holder && gen == l.Generation {
				holder, expires = "", time.Time{}
			}
		default:
			c.Advance(time.Duration(rng.IntN(120)) * time.Second)
		}
		if gen == 0 {
			continue
		}
		got, err := d.Duty(ctx, name)
		must(t, err)
		if got.Holder != holder || got.Generation != gen || !got.ExpiresAt.Equal(expires) || got.Held {
			t.Fatalf("step %d: the store holds %+v, the model %s at generation %d until %s", step, got, holder, gen, expires)
		}
	}
	if gen < 10 {
		t.Fatalf("the walk passed the duty on only %d times", gen)
	}
}
