package sharedlimit

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/internal/pgtest"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// twoSQLite opens one embedded store file twice: two handles, each with
// its own writer, as two processes would.
func twoSQLite(t testing.TB) (store.Store, store.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flrh.db")
	var out [2]store.Store
	for i := range out {
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out[0], out[1]
}

// twoPostgres opens one fresh schema twice; it skips without a database.
func twoPostgres(t testing.TB) (store.Store, store.Store) {
	t.Helper()
	h := pgtest.Handles(t, 2, "flrh_test_limits_", "run the shared limits over PostgreSQL")
	return h[0], h[1]
}

// waiting waits up to 10 s for s to count n requests waiting for a slot
// of limit name, and fails t if it does not.
func waiting(t *testing.T, s store.Store, name string, n int) {
	t.Helper()
	sl, ok := store.As[store.SharedLimits](s)
	if !ok {
		t.Fatal("the store holds no shared limits")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		uses, err := sl.LimitsInUse(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range uses {
			if u.Name == name && u.Waiting == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests never waited for %s: %+v", n, name, uses)
		}
	}
}

func boards(t *testing.T, a, b store.Store) [2]*Board {
	t.Helper()
	out := [2]*Board{New("one"), New("two")}
	if !out[0].Bind(a) || !out[1].Bind(b) {
		t.Fatal("a store that holds shared limits was not bound")
	}
	return out
}

func TestSlotsAcrossStoresSQLite(t *testing.T)   { testSlotsAcross(t, twoSQLite) }
func TestSlotsAcrossStoresPostgres(t *testing.T) { testSlotsAcross(t, twoPostgres) }
func TestRateAcrossStoresSQLite(t *testing.T)    { testRateAcross(t, twoSQLite) }
func TestRateAcrossStoresPostgres(t *testing.T)  { testRateAcross(t, twoPostgres) }

// testSlotsAcross: requests through two boards on two handles of one
// store, limited to two in flight: never more than two open at once
// across both, exactly two at the peak (the first two admitted hold
// their slots until both are open, however slowly the machine runs),
// every request admitted once.
func testSlotsAcross(t *testing.T, open func(testing.TB) (store.Store, store.Store)) {
	a, b := open(t)
	bs := boards(t, a, b)
	var openNow, peak, done atomic.Int64
	var admitted atomic.Int64
	both := make(chan struct{}) // closed when two are open at once
	var bothOnce sync.Once
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			release, err := bs[i%2].Admit(ctx, "payments", 2, 0, 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			n := openNow.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == 2 {
				bothOnce.Do(func() { close(both) })
			}
			if admitted.Add(1) <= 2 {
				select {
				case <-both:
				case <-ctx.Done():
				}
			}
			time.Sleep(30 * time.Millisecond)
			openNow.Add(-1)
			release()
			done.Add(1)
		})
	}
	wg.Wait()
	if peak.Load() != 2 || done.Load() != 12 {
		t.Fatalf("peak %d open at once (want 2), %d of 12 done", peak.Load(), done.Load())
	}
}

// testRateAcross: twelve requests through two boards at five a second
// between them: a burst of five, then one each 200 ms, so the last starts
// no sooner than 1.4 s after the first.
func testRateAcross(t *testing.T, open func(testing.TB) (store.Store, store.Store)) {
	a, b := open(t)
	bs := boards(t, a, b)
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			release, err := bs[i%2].Admit(ctx, "lookups", 0, 5, time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			release()
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(starts) != 12 {
		t.Fatalf("%d of 12 admitted", len(starts))
	}
	first, last := starts[0], starts[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	if span := last.Sub(first); span < 1300*time.Millisecond {
		t.Fatalf("twelve requests at five a second spread over %s", span)
	}
}

func TestWaitRunsOut(t *testing.T) {
	a, b := twoSQLite(t)
	bs := boards(t, a, b)
	ctx := context.Background()
	held, err := bs[0].Admit(ctx, "deploy", 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The only slot is held in the other "process": a waiter gives up
	// when its context is done, and holds nothing.
	wctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	start := time.Now()
	_, err = bs[1].Admit(wctx, "deploy", 1, 0, time.Minute)
	cancel()
	if !errors.Is(err, ErrNoRoom) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("Admit with the only slot held: %v after %s", err, time.Since(start))
	}
	held()
	// Given back, the slot is free at once.
	qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	again, err := bs[1].Admit(qctx, "deploy", 1, 0, time.Minute)
	if err != nil {
		t.Fatalf("the slot given back is not free: %v", err)
	}
	again()

	// A rate wait the deadline cannot cover is refused at once.
	if r, err := bs[0].Admit(ctx, "slow", 0, 1, time.Second); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
	rctx, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	start = time.Now()
	_, err = bs[1].Admit(rctx, "slow", 0, 1, time.Second)
	if !errors.Is(err, ErrNoRoom) || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("a rate wait of a second within 300ms: %v after %s", err, time.Since(start))
	}

	// With both limits, a slot taken and then refused room under the
	// rate is given back.
	if r, err := bs[0].Admit(ctx, "both", 1, 1, time.Minute); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
	bctx, cancel3 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel3()
	if _, err := bs[1].Admit(bctx, "both", 1, 1, time.Minute); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("no room under the rate: %v", err)
	}
	l, _ := store.SharedLimitsOf(a)
	if _, ok, err := l.TakeSlot(ctx, "both", 1, "check", time.Minute, 0); err != nil || !ok {
		t.Fatalf("the slot of a request refused under the rate is still held (%v)", err)
	}
}

// TestStoppedHolderPasses: a slot whose holder stopped without giving it
// back (a process killed mid-request) is free once its hold passes.
func TestStoppedHolderPasses(t *testing.T) {
	a, b := twoSQLite(t)
	l, _ := store.SharedLimitsOf(a)
	// The hold runs from when the slot was taken, no earlier than this:
	// measured from here, the wait covers the hold however long taking
	// the slot and binding the board took on a loaded machine.
	start := time.Now()
	if _, ok, err := l.TakeSlot(context.Background(), "deploy", 1, "killed#1", 300*time.Millisecond, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	bd := New("live")
	bd.Bind(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := bd.Admit(ctx, "deploy", 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if waited := time.Since(start); waited < 290*time.Millisecond {
		t.Fatalf("admitted %s after the slot was taken, before the stopped holder's hold of 300ms passed", waited)
	}
}

// TestReleaseOutlivesTheRequest: the slot is given back even when the
// request's context is done by then (a request cut short by its timeout).
func TestReleaseOutlivesTheRequest(t *testing.T) {
	a, _ := twoSQLite(t)
	bd := New("p")
	bd.Bind(a)
	ctx, cancel := context.WithCancel(context.Background())
	release, err := bd.Admit(ctx, "deploy", 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	release()
	qctx, qcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer qcancel()
	if r, err := bd.Admit(qctx, "deploy", 1, 0, time.Minute); err != nil {
		t.Fatalf("the slot of a cancelled request was not given back: %v", err)
	} else {
		r()
	}
}

type noLimits struct{ store.Store }

func TestUnbound(t *testing.T) {
	var zero Board
	if _, err := zero.Admit(context.Background(), "x", 1, 0, time.Second); !errors.Is(err, ErrUnbound) {
		t.Fatalf("the zero board: %v", err)
	}
	bd := New("p")
	if bd.Bind(noLimits{}) {
		t.Fatal("a store without shared limits was bound")
	}
	if _, err := bd.Admit(context.Background(), "x", 0, 1, time.Second); !errors.Is(err, ErrUnbound) {
		t.Fatalf("bound to a store without them: %v", err)
	}
}

// BenchmarkAdmit: what one request's room costs, asked of the store: a
// slot taken and given back, room under a rate, or both.
func BenchmarkAdmit(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(testing.TB) (store.Store, store.Store)
	}{{"sqlite", twoSQLite}, {"postgres", twoPostgres}} {
		for _, lim := range []struct {
			name      string
			max, rate int
		}{{"slot", 4, 0}, {"rate", 0, 100_000}, {"both", 4, 100_000}} {
			b.Run(backend.name+"/"+lim.name, func(b *testing.B) {
				s, _ := backend.open(b)
				bd := New("bench")
				bd.Bind(s)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					release, err := bd.Admit(ctx, "bench-"+lim.name, lim.max, lim.rate, time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					release()
				}
			})
		}
	}
}

// TestObserve: each Admit is told, with its outcome and how long it
// waited.
func TestObserve(t *testing.T) {
	type seen struct {
		limit, outcome string
		waited         time.Duration
	}
	var got []seen
	bd := New("p")
	bd.Observe = func(limit, outcome string, waited time.Duration) { got = append(got, seen{limit, outcome, waited}) }
	ctx := context.Background()
	if _, err := bd.Admit(ctx, "payments", 1, 0, time.Minute); !errors.Is(err, ErrUnbound) {
		t.Fatal(err)
	}
	a, _ := twoSQLite(t)
	bd.Bind(a)
	release, err := bd.Admit(ctx, "payments", 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := bd.Admit(wctx, "payments", 1, 0, time.Minute); !errors.Is(err, ErrNoRoom) {
		t.Fatal(err)
	}
	release()
	if len(got) != 3 || got[0].outcome != Failed || got[1].outcome != Admitted || got[2].outcome != NoRoom ||
		got[2].waited < 100*time.Millisecond || got[0].limit != "payments" {
		t.Fatalf("observed %+v", got)
	}
}

func TestSlotsLongestWaitingFirstSQLite(t *testing.T)   { testLongestWaitingFirst(t, twoSQLite) }
func TestSlotsLongestWaitingFirstPostgres(t *testing.T) { testLongestWaitingFirst(t, twoPostgres) }

// testLongestWaitingFirst: with the only slot held, five requests begin
// waiting one after another, alternately in two "processes"; as the slot
// is given back and taken again, they are admitted in the order they
// began to wait, whatever their polling.
func testLongestWaitingFirst(t *testing.T, open func(testing.TB) (store.Store, store.Store)) {
	a, b := open(t)
	bs := boards(t, a, b)
	ctx := context.Background()
	first, err := bs[0].Admit(ctx, "deploy", 1, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			release, err := bs[i%2].Admit(wctx, "deploy", 1, 0, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			release()
		})
		// Each is in the queue before the next begins, however slowly
		// the machine runs it.
		waiting(t, a, "deploy", i+1)
	}
	// Let every waiter's polling slow to its longest, so that order comes
	// from the queue and not from who asks first.
	time.Sleep(500 * time.Millisecond)
	first()
	wg.Wait()
	if !slices.Equal(order, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("admitted in the order %v, not the order they began to wait", order)
	}
}
