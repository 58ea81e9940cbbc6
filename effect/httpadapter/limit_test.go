package httpadapter_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// concurrency serves the sandbox behind a handler that counts the
// requests it is handling at once and keeps the most it saw.
type concurrency struct {
	now, most atomic.Int64
}

func (c *concurrency) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := c.now.Add(1)
		for {
			m := c.most.Load()
			if n <= m || c.most.CompareAndSwap(m, n) {
				break
			}
		}
		defer c.now.Add(-1)
		h.ServeHTTP(w, r)
	})
}

func limitedAdapter(t *testing.T, url string, cfg httpadapter.Config) *httpadapter.Adapter {
	t.Helper()
	cfg.URL, cfg.Timeout = url, 10*time.Second
	a, err := httpadapter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// At most MaxInFlight requests are open at once, and every one of many
// concurrent effects is still applied exactly once.
func TestMaxInFlight(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Every request takes long enough that all sixteen are waiting for a
	// slot before the first is done, however loaded the machine.
	if err := sb.Inject(sandbox.Fault{DelayMillis: 200}); err != nil {
		t.Fatal(err)
	}
	var c concurrency
	srv := httptest.NewServer(c.wrap(sb))
	t.Cleanup(srv.Close)
	a := limitedAdapter(t, srv.URL+sandbox.EffectsPath, httpadapter.Config{MaxInFlight: 3})
	var wg sync.WaitGroup
	outcomes := make([]effect.Outcome, 16)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := a.Execute(context.Background(), fixture.Intent("effect:limit-"+strconv.Itoa(i), payload))
			if err != nil {
				t.Error(err)
			}
			outcomes[i] = r.Outcome
		}()
	}
	wg.Wait()
	for i, o := range outcomes {
		if o != effect.Succeeded {
			t.Errorf("effect %d: %v", i, o)
		}
	}
	if most := c.most.Load(); most != 3 {
		t.Fatalf("at most %d requests were open at once, want exactly the bound 3", most)
	}
	if n := len(sb.Mutations()); n != 16 {
		t.Fatalf("%d mutations, want 16", n)
	}
}

// A request that finds no room within QueueWait is not sent: a mutation
// is a transient failure, DESTINATION_BUSY, and a lookup still unknown.
func TestQueueWaitRunsOut(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Inject(sandbox.Fault{Key: "effect:slow", DelayMillis: 3000}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	a := limitedAdapter(t, srv.URL+sandbox.EffectsPath, httpadapter.Config{MaxInFlight: 1, QueueWait: 50 * time.Millisecond})
	slow := make(chan effect.Receipt)
	go func() {
		r, _ := a.Execute(context.Background(), fixture.Intent("effect:slow", payload))
		slow <- r
	}()
	time.Sleep(100 * time.Millisecond) // the slow one holds the only slot
	in := fixture.Intent("effect:queued", payload)
	r := execute(t, a, in)
	select {
	case <-slow:
		t.Fatal("the queued request waited for the slot to come free")
	default:
	}
	if r.Outcome != effect.FailedTransient || r.Code != "DESTINATION_BUSY" {
		t.Fatalf("queued: %+v", r)
	}
	if l := lookup(t, a, "effect:queued", digestOf(t, in)); l.Status != effect.StillUnknown || l.Code != "LOOKUP_BUSY" {
		t.Fatalf("queued lookup: %+v", l)
	}
	if r := <-slow; r.Outcome != effect.Succeeded {
		t.Fatalf("slow: %+v", r)
	}
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("%d mutations: a busy request was sent", n)
	}
	// Room again: the retry goes through.
	if r := execute(t, a, in); r.Outcome != effect.Succeeded {
		t.Fatalf("retry: %+v", r)
	}
}

// PerSecond lets a second's worth through at once, then one each
// 1/PerSecond: ten lookups at five a second take about a second.
func TestPerSecond(t *testing.T) {
	s := startSandbox(t)
	a := limitedAdapter(t, s.EffectsURL, httpadapter.Config{PerSecond: 5, QueueWait: 5 * time.Second})
	began := time.Now()
	for i := 0; i < 10; i++ {
		if l := lookup(t, a, "effect:rate-"+strconv.Itoa(i), digestOf(t, fixture.Intent("effect:x", payload))); l.Status != effect.ConfirmedFailure {
			t.Fatalf("lookup %d: %+v", i, l)
		}
	}
	if took := time.Since(began); took < 900*time.Millisecond {
		t.Fatalf("ten lookups at five a second took %v", took)
	}
	// A wait the queue cannot cover is refused at once.
	b := limitedAdapter(t, s.EffectsURL, httpadapter.Config{PerSecond: 1, QueueWait: 100 * time.Millisecond})
	lookup(t, b, "effect:rate-a", digestOf(t, fixture.Intent("effect:x", payload)))
	began = time.Now()
	if l := lookup(t, b, "effect:rate-b", digestOf(t, fixture.Intent("effect:x", payload))); l.Code != "LOOKUP_BUSY" || time.Since(began) > 500*time.Millisecond {
		t.Fatalf("second lookup at one a second: %+v after %v", l, time.Since(began))
	}
}

func TestLimitsRefused(t *testing.T) {
	for _, c := range []httpadapter.Config{
		{MaxInFlight: -1}, {MaxInFlight: 1025}, {PerSecond: -1}, {PerSecond: 100_001},
		{MaxInFlight: 1, QueueWait: -time.Second}, {MaxInFlight: 1, QueueWait: 2 * time.Minute},
	} {
		c.URL = "http://127.0.0.1:1/v1/effects"
		if _, err := httpadapter.New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// sharer is an httpadapter.Sharer that admits or refuses as told and
// records what it was asked.
type sharer struct {
	refuse             error
	asked, given       atomic.Int64
	name               string
	max, perSec        int
	hold               time.Duration
	openAtRelease      atomic.Int64 // requests the destination held when a slot was given back
	destinationHolding *concurrency
}

func (s *sharer) Admit(ctx context.Context, name string, maxInFlight, perSecond int, hold time.Duration) (func(), error) {
	s.asked.Add(1)
	s.name, s.max, s.perSec, s.hold = name, maxInFlight, perSecond, hold
	if s.refuse != nil {
		return nil, s.refuse
	}
	return func() {
		s.openAtRelease.Add(s.destinationHolding.now.Load())
		s.given.Add(1)
	}, nil
}

// A shared limit is asked after this process's own, with the adapter's
// limits and a hold past its timeout; its room is given back once the
// request is done; a refusal sends nothing and is DESTINATION_BUSY or
// LOOKUP_BUSY, with the Sharer's reason.
func TestSharedLimits(t *testing.T) {
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &concurrency{}
	srv := httptest.NewServer(c.wrap(sb))
	t.Cleanup(srv.Close)
	sh := &sharer{destinationHolding: c}
	a := limitedAdapter(t, srv.URL+sandbox.EffectsPath, httpadapter.Config{MaxInFlight: 3, PerSecond: 50, Shared: sh, SharedName: "payments"})
	in := fixture.Intent("effect:shared", payload)
	if r := execute(t, a, in); r.Outcome != effect.Succeeded {
		t.Fatalf("admitted: %+v", r)
	}
	if sh.asked.Load() != 1 || sh.given.Load() != 1 || sh.openAtRelease.Load() != 0 {
		t.Fatalf("asked %d, given back %d, with %d still open at the destination", sh.asked.Load(), sh.given.Load(), sh.openAtRelease.Load())
	}
	if sh.name != "payments" || sh.max != 3 || sh.perSec != 50 || sh.hold != 10*time.Second+5*time.Second {
		t.Fatalf("asked for %q, %d in flight, %d a second, hold %s", sh.name, sh.max, sh.perSec, sh.hold)
	}
	sh.refuse = errors.New(`shared limit "payments" (3 in flight): no room`)
	busy := fixture.Intent("effect:shared-busy", payload)
	r := execute(t, a, busy)
	if r.Outcome != effect.FailedTransient || r.Code != "DESTINATION_BUSY" || !strings.Contains(r.Detail, `shared limit "payments"`) {
		t.Fatalf("refused: %+v", r)
	}
	if l := lookup(t, a, "effect:shared-busy", digestOf(t, busy)); l.Status != effect.StillUnknown || l.Code != "LOOKUP_BUSY" {
		t.Fatalf("refused lookup: %+v", l)
	}
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("%d mutations: a refused request was sent", n)
	}
	// This process's own room, taken before the shared limit refused, is
	// given back: three more refusals at one in flight would otherwise
	// find none.
	one := limitedAdapter(t, srv.URL+sandbox.EffectsPath, httpadapter.Config{MaxInFlight: 1, QueueWait: 50 * time.Millisecond, Shared: sh, SharedName: "payments"})
	for i := range 3 {
		if r := execute(t, one, busy); !strings.Contains(r.Detail, "shared limit") {
			t.Fatalf("refusal %d not the shared limit's: %+v", i, r)
		}
	}
}

func TestSharedLimitsRefused(t *testing.T) {
	sh := &sharer{}
	for _, c := range []httpadapter.Config{
		{MaxInFlight: 1, Shared: sh},
		{MaxInFlight: 1, SharedName: "payments"},
		{Shared: sh, SharedName: "payments"},
	} {
		c.URL = "http://127.0.0.1:1/v1/effects"
		if _, err := httpadapter.New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
