package notify

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// stillWaits is Config.StillWaits over f's store, as flrh serve's: the
// run live and at the notice's event; counted in asked.
func (f *fixture) stillWaits(asked *atomic.Int32) func(context.Context, string, int64) (bool, error) {
	return func(ctx context.Context, runID string, seq int64) (bool, error) {
		asked.Add(1)
		r, err := f.store.Run(ctx, runID)
		if store.CodeOf(err) == store.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return r.Outcome == "" && r.Head == seq, nil
	}
}

// move commits one more event to run id: it no longer stands where its
// notice found it.
func (f *fixture) move(id string) {
	f.t.Helper()
	l, err := f.store.AcquireLease(ctx, id, "w", time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("APPROVED", `{}`)}, State: "EXECUTING"}); err != nil {
		f.t.Fatal(err)
	}
}

// heldBacklog is f's store's backlog: notices, and those held.
func (f *fixture) heldBacklog() (count, held int64) {
	f.t.Helper()
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return b.Count, b.Held
}

// An escalation route is told of a run waiting for a person only once
// the run has waited its After, and only if the run still waits then:
// the chat hears of every notice at once, the manager an hour later of
// the run still waiting alone, the director (in Slack's format) two
// hours later; a run approved meanwhile, or ended, is never escalated.
// Until then the notice is held: no failure, not the backlog's oldest.
func TestEscalationTellsOfRunsStillWaiting(t *testing.T) {
	f := newFixture(t)
	chat, chatRoute := f.route("chat", secret)
	manager, managerRoute := f.route("manager", secret)
	director, directorRoute := f.route("director", secret)
	managerRoute.After = time.Hour
	directorRoute.After, directorRoute.Format = 2*time.Hour, FormatSlack
	var asked atomic.Int32
	n := f.routed("a", []Route{chatRoute, managerRoute, directorRoute}, func(c *Config) { c.StillWaits = f.stillWaits(&asked) })

	waits := f.commit("waits", "wf", store.NoticeApproval)
	f.commit("moves", "wf", store.NoticeApproval)
	f.ended("ends")
	f.pass(n, 3)
	if got := ids(chat.deliveries()); len(got) != 3 || len(manager.deliveries())+len(director.deliveries()) != 0 {
		t.Fatalf("at once the chat took %v, the manager %d, the director %d", got, len(manager.deliveries()), len(director.deliveries()))
	}
	if count, held := f.heldBacklog(); count != 2 || held != 2 {
		t.Fatalf("backlog %d, held %d; want 2 held", count, held)
	}
	if asked.Load() != 0 {
		t.Fatalf("asked whether runs wait %d times before any escalation was due", asked.Load())
	}

	f.clock.Advance(time.Hour - time.Millisecond)
	f.pass(n, 0)
	f.move("moves") // approved meanwhile
	f.clock.Advance(time.Millisecond)
	f.pass(n, 2)
	if got := manager.deliveries(); len(got) != 1 || got[0].id != waits || got[0].verified != nil || got[0].env.EscalatedAfter != 3600 {
		t.Fatalf("after an hour the manager took %+v", got)
	}
	if f.seen["manager/moot"] != 1 || f.seen["manager/delivered"] != 1 || f.seen["manager/failed"] != 0 || asked.Load() != 2 {
		t.Fatalf("outcomes %v, asked %d", f.seen, asked.Load())
	}
	if count, held := f.heldBacklog(); count != 2 || held != 2 {
		t.Fatalf("backlog %d, held %d after the manager's hour; want both, for the director", count, held)
	}

	f.clock.Advance(time.Hour)
	f.pass(n, 2)
	got := director.deliveries()
	if len(got) != 1 || got[0].id != waits || f.seen["director/moot"] != 1 || asked.Load() != 4 {
		t.Fatalf("after two hours the director took %+v; outcomes %v, asked %d", got, f.seen, asked.Load())
	}
	var body struct{ Text string }
	if err := json.Unmarshal(got[0].raw, &body); err != nil || !strings.HasPrefix(body.Text, "flrh: Still waiting after 2h. Run *waits* (wf@1) waits for an approval") {
		t.Fatalf("the director read %q (%v)", body.Text, err)
	}
	if count, _ := f.heldBacklog(); count != 0 || len(chat.deliveries()) != 3 || len(manager.deliveries()) != 1 {
		t.Fatalf("backlog %d; the chat took %d, the manager %d", count, len(chat.deliveries()), len(manager.deliveries()))
	}
}

// Whether the run still waits not read is a failed delivery to the
// escalation route, tried again after its backoff; the notice is then
// late, not held.
func TestEscalationRetriedWhenTheRunIsNotRead(t *testing.T) {
	f := newFixture(t)
	_, chatRoute := f.route("chat", secret)
	manager, managerRoute := f.route("manager", secret)
	managerRoute.After = time.Minute
	var asked atomic.Int32
	read := f.stillWaits(&asked)
	n := f.routed("a", []Route{chatRoute, managerRoute}, func(c *Config) {
		c.MinDelay = time.Second
		c.StillWaits = func(ctx context.Context, runID string, seq int64) (bool, error) {
			if asked.Load() == 0 {
				asked.Add(1)
				return false, errors.New("the store is away")
			}
			return read(ctx, runID, seq)
		}
	})
	f.commit("waits", "wf", store.NoticeApproval)
	f.pass(n, 1)
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
	if len(manager.deliveries()) != 0 || f.seen["manager/failed"] != 1 {
		t.Fatalf("the manager took %d, outcomes %v", len(manager.deliveries()), f.seen)
	}
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil || b.Held != 0 || !strings.Contains(b.Oldest.LastError, "route manager: whether the run still waits was not read: the store is away") ||
		len(b.Oldest.Waits) != 1 || b.Oldest.Waits[0].Failures != 1 {
		t.Fatalf("backlog %+v (%v)", b, err)
	}
	f.clock.Advance(time.Second)
	f.pass(n, 1)
	if len(manager.deliveries()) != 1 || f.seen["manager/delivered"] != 1 {
		t.Fatalf("the manager took %d, outcomes %v", len(manager.deliveries()), f.seen)
	}
}

// A route turned into an escalation while a notice waits holds it from
// the notice's age, and one that is no longer an escalation takes it at
// once; a test notice to an escalation route says no wait.
func TestEscalationRoutesChanged(t *testing.T) {
	f := newFixture(t)
	_, chatRoute := f.route("chat", secret)
	manager, managerRoute := f.route("manager", secret, 503)
	var asked atomic.Int32
	n := f.routed("a", []Route{chatRoute, managerRoute}, func(c *Config) { c.MinDelay = time.Second; c.StillWaits = f.stillWaits(&asked) })
	f.commit("waits", "wf", store.NoticeApproval)
	f.pass(n, 1) // the manager fails: it waits a second
	escalating := managerRoute
	escalating.After = 10 * time.Minute
	if err := n.SetRoutes([]Route{chatRoute, escalating}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	f.pass(n, 1) // its failure's wait passed; the escalation's has not
	if len(manager.deliveries()) != 1 {
		t.Fatalf("the manager took %d", len(manager.deliveries()))
	}
	// Its failure is behind it: held for the escalation, the reason gone.
	if count, held := f.heldBacklog(); count != 1 || held != 1 {
		t.Fatalf("backlog %d, held %d; want it held", count, held)
	}
	f.clock.Advance(10*time.Minute - time.Second)
	f.pass(n, 1)
	if got := manager.deliveries(); len(got) != 2 || got[1].env.EscalatedAfter != 600 {
		t.Fatalf("the manager took %+v", got)
	}
	escalating.After = DefaultGiveUp
	if err := n.SetRoutes([]Route{chatRoute, escalating}); err == nil || !strings.Contains(err.Error(), "give-up age") {
		t.Fatalf("SetRoutes with an escalation past the give-up age: %v", err)
	}

	probe, probeRoute := f.route("probe", secret)
	probeRoute.After, probeRoute.Format = time.Hour, FormatSlack
	if err := Test(ctx, Config{Routes: []Route{probeRoute}}); err != nil {
		t.Fatal(err)
	}
	var body struct{ Text string }
	if d := probe.deliveries(); len(d) != 1 || json.Unmarshal(d[0].raw, &body) != nil || strings.Contains(body.Text, "Still waiting") {
		t.Fatalf("the test notice read %q", body.Text)
	}
}

// Span writes durations as people say them.
func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{4 * time.Hour: "4h", 90 * time.Minute: "1h30m", 30 * time.Minute: "30m",
		45 * time.Second: "45s", time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "2s", 72 * time.Hour: "72h"} {
		if got := Span(d); got != want {
			t.Errorf("Span(%v) = %q, want %q", d, got, want)
		}
	}
}
