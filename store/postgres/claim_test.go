package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// Several runner processes (separate pools) claim ready runs concurrently,
// several goroutines each, in small batches until none is left: every ready
// run is claimed exactly once per round. After the leases lapse, a second
// round claims each again exactly once, with a higher generation.
func TestClaimReadyExactlyOncePerRound(t *testing.T) {
	schema := freshSchema(t)
	clock := storetest.NewClock()
	const procs, perProc, runs = 3, 3, 60
	stores := make([]*Store, procs)
	for i := range stores {
		stores[i] = openNamed(t, schema, fmt.Sprintf("flrh-claim-%d", i), Options{Clock: clock.Now, MaxConns: 4})
	}
	s := stores[0]
	for i := 0; i < runs; i++ {
		must(t, s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("run-%03d", i), WorkflowID: "wf", State: "S"}))
	}
	// Runs that are not ready: ended, quarantined, leased.
	must(t, s.CreateRun(ctx, store.Run{ID: "ended", WorkflowID: "wf", State: "S"}))
	le, err := s.AcquireLease(ctx, "ended", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, le, store.Tick{State: "DONE", Outcome: "success"}))
	must(t, s.CreateRun(ctx, store.Run{ID: "parked", WorkflowID: "wf", State: "S"}))
	must(t, s.Quarantine(ctx, "parked", "test"))
	must(t, s.CreateRun(ctx, store.Run{ID: "held", WorkflowID: "wf", State: "S"}))
	_, err = s.AcquireLease(ctx, "held", "someone", 10*time.Minute)
	must(t, err)

	round := func(wantGen int64) {
		t.Helper()
		var mu sync.Mutex
		claims := map[string][]store.Lease{}
		var wg sync.WaitGroup
		for p, st := range stores {
			for g := 0; g < perProc; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					owner := fmt.Sprintf("runner-%d-%d", p, g)
					for {
						got, err := st.ClaimReady(ctx, owner, time.Minute, 3, nil, time.Time{})
						if err != nil {
							t.Error(err)
							return
						}
						if len(got) == 0 {
							return
						}
						mu.Lock()
						for _, l := range got {
							claims[l.RunID] = append(claims[l.RunID], l)
						}
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		if len(claims) != runs {
			t.Fatalf("%d runs claimed, want %d", len(claims), runs)
		}
		for id, ls := range claims {
			if len(ls) != 1 {
				t.Fatalf("run %s claimed %d times: %+v", id, len(ls), ls)
			}
			if ls[0].Generation != wantGen {
				t.Fatalf("run %s claimed at generation %d, want %d", id, ls[0].Generation, wantGen)
			}
			// The claim is a real lease: its holder can commit under it.
			if err := s.Commit(ctx, ls[0], store.Tick{ExpectHead: wantGen - 1, Events: []store.Event{storetest.Ev("E", `{}`)}}); err != nil {
				t.Fatalf("commit under claimed lease: %v", err)
			}
		}
	}
	round(1)
	// Nothing is ready while the leases are live.
	if got, err := s.ClaimReady(ctx, "late", time.Minute, 100, nil, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("claimed %v (%v) while every lease is live", got, err)
	}
	clock.Advance(2 * time.Minute)
	round(2)
	// The held run's ten-minute lease outlives both rounds; once it lapses
	// it is claimable like the rest. The ended and parked runs never are.
	if got, err := s.ClaimReady(ctx, "late", time.Minute, 100, nil, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("claimed %v (%v) while every lease is live", got, err)
	}
	clock.Advance(10 * time.Minute)
	got, err := s.ClaimReady(ctx, "late", time.Minute, 1000, nil, time.Time{})
	must(t, err)
	gens := map[string]int64{}
	for _, l := range got {
		gens[l.RunID] = l.Generation
	}
	if len(got) != runs+1 || gens["held"] != 2 || gens["run-000"] != 3 {
		t.Fatalf("late claim got %d leases, held at %d, run-000 at %d", len(got), gens["held"], gens["run-000"])
	}
}

// A batch claim hands runs out oldest first.
func TestClaimReadyOrder(t *testing.T) {
	s := openTest(t, Options{})
	var want []string
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("r%d", 9-i) // creation order differs from id order
		want = append(want, id)
		must(t, s.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", State: "S"}))
	}
	got, err := s.ClaimReady(ctx, "w", time.Minute, 4, nil, time.Time{})
	must(t, err)
	var ids []string
	for _, l := range got {
		ids = append(ids, l.RunID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(want[:4]) {
		t.Fatalf("claimed %v, want %v", ids, want[:4])
	}
	_, err = s.ClaimReady(ctx, "", time.Minute, 4, nil, time.Time{})
	mustCode(t, err, store.CodeInvalidInput)
	_, err = s.ClaimReady(ctx, "w", 0, 4, nil, time.Time{})
	mustCode(t, err, store.CodeInvalidInput)
	_, err = s.ClaimReady(ctx, "w", time.Minute, 0, nil, time.Time{})
	mustCode(t, err, store.CodeInvalidInput)
}

// With resting states given, a claim takes exactly the runs Ready lists
// (minus those leased): a resting run only once an input is pending, a
// run mid-work always, and never a resting run whose inbox is consumed.
func TestClaimReadySkipsRestingRuns(t *testing.T) {
	s := openTest(t, Options{})
	resting := []string{"INGEST", "WAIT_APPROVAL"}
	in := func(run, id string) store.Inbound {
		return store.Inbound{ID: id, RunID: run, Kind: "input", ActorRole: "agent", Actor: "a", Capability: "c", Body: []byte(`{}`), Digest: store.BodyDigest([]byte(`{}`))}
	}
	for _, r := range []struct{ id, state string }{{"idle", "INGEST"}, {"fed", "INGEST"}, {"busy", "EXECUTE"}, {"waiting", "WAIT_APPROVAL"}, {"taken", "EXECUTE"}} {
		must(t, s.CreateRun(ctx, store.Run{ID: r.id, WorkflowID: "wf", State: r.state}))
	}
	must(t, s.Submit(ctx, in("fed", "i1")))
	// "waiting" had an input, consumed by a tick that left it resting.
	must(t, s.Submit(ctx, in("waiting", "i1")))
	l, err := s.AcquireLease(ctx, "waiting", "w", time.Minute)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{State: "WAIT_APPROVAL", Consume: []string{"i1"}, Events: []store.Event{storetest.Ev("E", `{}`)}}))
	must(t, s.ReleaseLease(ctx, l))
	_, err = s.AcquireLease(ctx, "taken", "other", time.Minute)
	must(t, err)

	ready, err := s.Ready(ctx, resting, time.Time{})
	must(t, err)
	got, err := s.ClaimReady(ctx, "w", time.Minute, 100, resting, time.Time{})
	must(t, err)
	var ids []string
	for _, l := range got {
		ids = append(ids, l.RunID)
	}
	if fmt.Sprint(ids) != "[fed busy]" || fmt.Sprint(ready) != "[fed busy taken]" {
		t.Fatalf("claimed %v, ready %v; want [fed busy] of [fed busy taken]", ids, ready)
	}
	// An input makes the idle run claimable; nothing else changed.
	must(t, s.Submit(ctx, in("idle", "i1")))
	got, err = s.ClaimReady(ctx, "w", time.Minute, 100, resting, time.Time{})
	must(t, err)
	if len(got) != 1 || got[0].RunID != "idle" || got[0].Generation != 1 {
		t.Fatalf("after an input claimed %+v, want idle at generation 1", got)
	}
}

// A submitted event wakes a watcher; after its connection is killed the
// watcher falls back to polling and then listens again.
func TestWatcherNotifyAndFallback(t *testing.T) {
	schema := freshSchema(t)
	app := "flrh-watch-" + schema
	s := openNamed(t, schema, app, Options{})
	other := openNamed(t, schema, "flrh-submitter-"+schema, Options{})
	w := s.Watch(ctx)
	defer w.Close()
	if !w.Listening() {
		t.Fatal("watcher is not listening")
	}
	must(t, other.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	must(t, other.Submit(ctx, storetest.Inb("r", "a", "INPUT", `{}`)))
	var woke []string
	for len(woke) < 2 {
		id, err := w.Wait(ctx, 5*time.Second)
		must(t, err)
		if id == "" {
			t.Fatalf("no notification within 5s; woke for %v", woke)
		}
		woke = append(woke, id)
	}
	if fmt.Sprint(woke) != "[r r]" {
		t.Fatalf("woke for %v", woke)
	}
	// A store in another schema does not wake this one.
	elsewhere := openTest(t, Options{})
	must(t, elsewhere.CreateRun(ctx, store.Run{ID: "x", WorkflowID: "wf", State: "S"}))
	if id, err := w.Wait(ctx, 300*time.Millisecond); err != nil || id != "" {
		t.Fatalf("woke for %q (%v) from another schema", id, err)
	}

	// Kill the listening connection: the next waits poll, then listen again.
	adm := admin(t)
	var n int
	must(t, adm.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = $1 AND query LIKE 'LISTEN%') k`, app).Scan(&n))
	if n != 1 {
		t.Fatalf("killed %d listeners", n)
	}
	start := time.Now()
	id, err := w.Wait(ctx, 200*time.Millisecond)
	must(t, err)
	if id != "" {
		t.Fatalf("woke for %q on a dead connection", id)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("wait on a dead connection did not fall back to polling")
	}
	// The next wait reconnects; a new submission wakes it.
	waitFor(t, func() bool { w.Wait(ctx, 10*time.Millisecond); return w.Listening() })
	must(t, other.Submit(ctx, storetest.Inb("r", "b", "INPUT", `{}`)))
	for {
		id, err := w.Wait(ctx, 5*time.Second)
		must(t, err)
		if id == "" {
			t.Fatal("no notification after reconnecting")
		}
		if id == "r" {
			break
		}
	}
}
