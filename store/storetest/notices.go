package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testNotices holds the store's notices to store.Noticeboard: written
// with their tick and only with it, under IDs that name the tick's place;
// claimed oldest first, by one holder at a time, again once a hold has
// passed; settled only by their holder; retried after a delay with the
// reason kept; and each claimed once among claimers racing.
func testNotices(t *testing.T, s store.Store, c *Clock) {
	nb, ok := store.NoticeboardOf(s)
	if !ok {
		t.Skip("the store keeps no notices")
	}
	backlog := func(want int64, oldest time.Time) store.Backlog {
		t.Helper()
		b, err := nb.NoticeBacklog(ctx)
		must(t, err)
		if b.Count != want || !b.Oldest.CreatedAt.Equal(oldest) || (want == 0) != (b.Oldest.ID == "") || b.Oldest.Body != nil {
			t.Fatalf("backlog = %+v, want %d since %v", b, want, oldest)
		}
		return b
	}
	claim := func(holder string, hold time.Duration, limit int) []store.Notice {
		t.Helper()
		got, err := nb.ClaimNotices(ctx, holder, hold, limit)
		must(t, err)
		return got
	}
	ids := func(ns []store.Notice) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.ID
		}
		return out
	}
	notice := func(kind, body string) store.Notice { return store.Notice{Kind: kind, Body: []byte(body)} }
	backlog(0, time.Time{})
	if got := claim("a", time.Minute, 10); len(got) != 0 {
		t.Fatalf("empty store gave notices %v", ids(got))
	}

	// Refused ticks write no notice: a bad notice, a lagging tick with
	// one, a stale head, a stale lease.
	newRun(t, s, "r")
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	ok1 := notice(store.NoticeApproval, `{"run_id":"r"}`)
	for name, tick := range map[string]store.Tick{
		"unknown kind":    {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{notice("lunch", `{}`)}},
		"not an object":   {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{notice(store.NoticeEnded, `[1]`)}},
		"not JSON":        {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{notice(store.NoticeEnded, `{`)}},
		"null":            {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{notice(store.NoticeEnded, `null`)}},
		"twice one kind":  {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{ok1, ok1}},
		"lagging":         {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{ok1}, MayLag: true},
		"too large":       {Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{notice(store.NoticeEnded, fmt.Sprintf(`{"x":%q}`, make([]byte, store.MaxNoticeBody)))}},
		"bad event first": {Events: []store.Event{{Kind: "E"}}, Notices: []store.Notice{ok1}},
	} {
		if err := s.Commit(ctx, l, tick); store.CodeOf(err) != store.CodeInvalidInput {
			t.Fatalf("%s: commit = %v, want %s", name, err, store.CodeInvalidInput)
		}
		backlog(0, time.Time{})
	}
	mustCode(t, s.Commit(ctx, l, store.Tick{ExpectHead: 3, Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{ok1}}), store.CodeHeadMismatch)
	stale := l
	stale.Generation--
	mustCode(t, s.Commit(ctx, stale, store.Tick{Events: []store.Event{Ev("E", `{}`)}, Notices: []store.Notice{ok1}}), store.CodeFenced)
	backlog(0, time.Time{})

	// Written with the tick: the run at 2 waits for an approval; a
	// tripwire's report moves the trace alone; the run ends at 3.
	t0 := c.Now()
	must(t, s.Commit(ctx, l, store.Tick{Events: []store.Event{Ev("E", `{}`), Ev("E", `{}`)}, State: "WAIT_APPROVAL",
		Notices: []store.Notice{notice(store.NoticeApproval, `{"requests":["q1"]}`)}}))
	c.Advance(time.Second)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Trace: []store.TraceRecord{{Kind: "tripwire.report", Body: []byte(`{}`)}},
		Notices: []store.Notice{notice(store.NoticeTripped, `{"wires":["w"]}`)}}))
	c.Advance(time.Second)
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 2, Events: []store.Event{Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Trace:   []store.TraceRecord{{Kind: "x", Body: []byte(`{}`)}, {Kind: "x", Body: []byte(`{}`)}},
		Notices: []store.Notice{notice(store.NoticeEnded, `{"outcome":"success"}`), notice(store.NoticeReconciliation, `{}`)}}))
	backlog(4, t0)
	want := []string{store.NoticeID("r", 2, 0, store.NoticeApproval), store.NoticeID("r", 2, 1, store.NoticeTripped),
		store.NoticeID("r", 3, 3, store.NoticeEnded), store.NoticeID("r", 3, 3, store.NoticeReconciliation)}

	// Oldest first, up to the limit; held, another holder gets the rest.
	c.Advance(time.Second)
	first := claim("a", time.Minute, 2)
	if !slices.Equal(ids(first), want[:2]) {
		t.Fatalf("claimed %v, want %v", ids(first), want[:2])
	}
	if n := first[0]; n.RunID != "r" || n.Seq != 2 || n.Kind != store.NoticeApproval || string(n.Body) != `{"requests":["q1"]}` ||
		!n.CreatedAt.Equal(t0) || n.Attempts != 1 || n.LastError != "" {
		t.Fatalf("claimed %+v", n)
	}
	second := claim("b", time.Minute, 10)
	if !slices.Equal(ids(second), want[2:]) {
		t.Fatalf("b claimed %v, want %v", ids(second), want[2:])
	}
	if got := claim("c", time.Minute, 10); len(got) != 0 {
		t.Fatalf("c claimed held notices %v", ids(got))
	}

	// Settled by its holder alone; once done, gone.
	mustCode(t, nb.NoticeDone(ctx, want[0], "b"), store.CodeFenced)
	mustCode(t, nb.NoticeDone(ctx, "r/9/9/run_ended", "a"), store.CodeFenced)
	must(t, nb.NoticeDone(ctx, want[0], "a"))
	mustCode(t, nb.NoticeDone(ctx, want[0], "a"), store.CodeFenced)
	backlog(3, t0.Add(time.Second))

	// A retry releases the notice until its delay has passed, and the
	// next claim sees why the last attempt failed.
	long := fmt.Sprintf("%0600d", 7)
	wait := func(route string, after time.Duration) []store.RouteWait {
		return []store.RouteWait{{Route: route, After: after, Failures: 1}}
	}
	// Routes named badly, and waits that are none or bad, change
	// nothing: the notice is still held.
	for _, sent := range [][]string{{""}, {"chat,pager"}, {"chat\npager"}, {"chat", "chat"}, {"\xff"},
		{strings.Repeat("r", store.MaxNoticeRouteName+1)}, make([]string, store.MaxNoticeRoutes+1)} {
		mustCode(t, nb.NoticeRetry(ctx, want[1], "a", "bad", sent, wait("audit", time.Second)), store.CodeInvalidInput)
	}
	for _, waits := range [][]store.RouteWait{nil, wait("", time.Second), wait("a,b", time.Second), wait("audit", -time.Second),
		wait("chat", time.Second), append(wait("audit", time.Second), wait("audit", 2*time.Second)...), {{Route: "audit", Failures: -1}},
		make([]store.RouteWait, store.MaxNoticeRoutes+1)} {
		mustCode(t, nb.NoticeRetry(ctx, want[1], "a", "bad", []string{"chat"}, waits), store.CodeInvalidInput)
	}
	must(t, nb.NoticeRetry(ctx, want[1], "a", "status 503 "+long, []string{"pager", "chat"}, wait("audit", 30*time.Second)))
	mustCode(t, nb.NoticeRetry(ctx, want[1], "a", "again", nil, wait("audit", time.Second)), store.CodeFenced)
	// The oldest left says why it waits.
	if o := backlog(3, t0.Add(time.Second)).Oldest; o.ID != want[1] || o.RunID != "r" || o.Seq != 2 || o.Kind != store.NoticeTripped ||
		o.Attempts != 1 || len(o.LastError) != store.MaxNoticeError || !slices.Equal(o.Sent, []string{"pager", "chat"}) ||
		!slices.Equal(o.Waits, []store.RouteWait{{Route: "audit", After: 30 * time.Second, Failures: 1}}) {
		t.Fatalf("the oldest notice %+v", o)
	}
	c.Advance(29 * time.Second)
	if o := backlog(3, t0.Add(time.Second)).Oldest; !slices.Equal(o.Waits, []store.RouteWait{{Route: "audit", After: time.Second, Failures: 1}}) {
		t.Fatalf("29 s later the oldest notice's routes wait %+v", o.Waits)
	}
	if got := claim("c", time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed %v before the retry was due", ids(got))
	}
	c.Advance(time.Second)
	again := claim("c", time.Minute, 10)
	if len(again) != 1 || again[0].ID != want[1] || again[0].Attempts != 2 || len(again[0].LastError) != store.MaxNoticeError ||
		again[0].LastError[:11] != "status 503 " || !slices.Equal(again[0].Sent, []string{"pager", "chat"}) ||
		!slices.Equal(again[0].Waits, []store.RouteWait{{Route: "audit", Failures: 1}}) {
		t.Fatalf("after the retry's delay claimed %+v", again)
	}

	// A hold that passes lets another claim; the first holder is then
	// fenced. The retried notice, due last, comes last.
	c.Advance(time.Minute)
	taken := claim("d", time.Minute, 10)
	if !slices.Equal(ids(taken), []string{want[2], want[3], want[1]}) || taken[0].Attempts != 2 || taken[2].Attempts != 3 {
		t.Fatalf("after the holds passed d claimed %+v", taken)
	}
	mustCode(t, nb.NoticeDone(ctx, want[2], "b"), store.CodeFenced)
	if taken[0].Sent != nil || taken[1].Sent != nil || !slices.Equal(taken[2].Sent, []string{"pager", "chat"}) {
		t.Fatalf("routes sent to, after the holds passed: %q %q %q", taken[0].Sent, taken[1].Sent, taken[2].Sent)
	}
	mustCode(t, nb.NoticeRetry(ctx, want[1], "c", "x", nil, wait("audit", 0)), store.CodeFenced)
	// A retry's routes replace those the notice held.
	must(t, nb.NoticeRetry(ctx, want[1], "d", "one more", []string{"audit"}, wait("chat", 0)))
	if got := claim("d", time.Minute, 10); len(got) != 1 || got[0].ID != want[1] || !slices.Equal(got[0].Sent, []string{"audit"}) {
		t.Fatalf("after a retry sent to audit claimed %+v", got)
	}
	for _, n := range taken[:2] {
		must(t, nb.NoticeDone(ctx, n.ID, "d"))
	}
	// Each route waits its own wait: the notice is due when the soonest
	// passes, and a claim then names every route that failed before, with
	// its failures and what is left of its wait (0: due), until it takes
	// the notice.
	rw := func(route string, after time.Duration, failures int) store.RouteWait {
		return store.RouteWait{Route: route, After: after, Failures: failures}
	}
	must(t, nb.NoticeRetry(ctx, want[1], "d", "three routes down", []string{"audit"},
		[]store.RouteWait{rw("pager", time.Hour, 1), rw("chat", 10*time.Second, 2), rw("mail", time.Minute, 1)}))
	c.Advance(9 * time.Second)
	if got := claim("e", time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed %v before any route's wait passed", ids(got))
	}
	c.Advance(3 * time.Second) // 2 s late
	got := claim("e", time.Minute, 10)
	if len(got) != 1 || got[0].ID != want[1] || !slices.Equal(got[0].Sent, []string{"audit"}) ||
		!slices.Equal(got[0].Waits, []store.RouteWait{rw("chat", 0, 2), rw("mail", 48*time.Second, 1), rw("pager", time.Hour-12*time.Second, 1)}) {
		t.Fatalf("after chat's wait claimed %+v", got)
	}
	// The notifier passes the others on with chat's new wait and failure;
	// a wait of zero is due at once.
	must(t, nb.NoticeRetry(ctx, want[1], "e", "chat down again", []string{"audit"},
		[]store.RouteWait{got[0].Waits[1], got[0].Waits[2], rw("chat", 0, 3)}))
	got = claim("e", time.Minute, 10)
	if len(got) != 1 || !slices.Equal(got[0].Waits, []store.RouteWait{rw("chat", 0, 3), rw("mail", 48*time.Second, 1), rw("pager", time.Hour-12*time.Second, 1)}) {
		t.Fatalf("after a wait of zero claimed %+v", got)
	}
	must(t, nb.NoticeRetry(ctx, want[1], "e", "chat took it", []string{"audit", "chat"}, got[0].Waits[1:]))
	c.Advance(48 * time.Second)
	if got = claim("e", time.Minute, 10); len(got) != 1 || !slices.Equal(got[0].Waits, []store.RouteWait{rw("mail", 0, 1), rw("pager", time.Hour-time.Minute, 1)}) {
		t.Fatalf("after mail's wait claimed %+v", got)
	}
	must(t, nb.NoticeRetry(ctx, want[1], "e", "pager waits", []string{"audit", "chat", "mail"}, got[0].Waits[1:]))
	c.Advance(time.Hour)
	if got = claim("e", time.Minute, 10); len(got) != 1 || !slices.Equal(got[0].Waits, []store.RouteWait{rw("pager", 0, 1)}) ||
		!slices.Equal(got[0].Sent, []string{"audit", "chat", "mail"}) {
		t.Fatalf("after every wait passed claimed %+v", got)
	}
	must(t, nb.NoticeDone(ctx, want[1], "e"))
	backlog(0, time.Time{})

	// A notice delivered to every route due, waiting without a failure
	// for a route told later (an escalation), is held: counted apart,
	// and not the oldest of the backlog, until its wait passes.
	held := func(count, heldN int64, oldest string) store.Backlog {
		t.Helper()
		b, err := nb.NoticeBacklog(ctx)
		must(t, err)
		if b.Count != count || b.Held != heldN || b.Oldest.ID != oldest {
			t.Fatalf("backlog = %+v, want %d notices, %d held, the oldest not held %q", b, count, heldN, oldest)
		}
		return b
	}
	var escalated []string
	for _, id := range []string{"waits-long", "fails"} {
		newRun(t, s, id)
		hl, err := s.AcquireLease(ctx, id, "w", time.Hour)
		must(t, err)
		must(t, s.Commit(ctx, hl, store.Tick{Events: []store.Event{Ev("E", `{}`)}, State: "WAIT_APPROVAL",
			Notices: []store.Notice{notice(store.NoticeApproval, `{}`)}}))
		escalated = append(escalated, store.NoticeID(id, 1, 0, store.NoticeApproval))
		c.Advance(time.Second)
	}
	held(2, 0, escalated[0])
	if got := claim("f", time.Minute, 10); !slices.Equal(ids(got), escalated) {
		t.Fatalf("claimed %v, want %v", ids(got), escalated)
	}
	must(t, nb.NoticeRetry(ctx, escalated[0], "f", "", []string{"chat"}, []store.RouteWait{rw("manager", time.Hour, 0)}))
	held(2, 1, escalated[1]) // the other, claimed, is due: not held
	must(t, nb.NoticeRetry(ctx, escalated[1], "f", "chat down", nil, []store.RouteWait{rw("chat", time.Minute, 1), rw("manager", time.Hour, 0)}))
	if o := held(2, 1, escalated[1]).Oldest; !slices.Equal(o.Waits, []store.RouteWait{rw("chat", time.Minute, 1), rw("manager", time.Hour, 0)}) {
		t.Fatalf("the oldest notice not held waits %+v", o.Waits)
	}
	c.Advance(time.Hour)
	if o := held(2, 0, escalated[0]).Oldest; !slices.Equal(o.Waits, []store.RouteWait{rw("manager", 0, 0)}) || !slices.Equal(o.Sent, []string{"chat"}) {
		t.Fatalf("its wait passed, the escalated notice %+v", o)
	}
	got = claim("f", time.Minute, 10)
	if len(got) != 2 || got[1].ID != escalated[0] || !slices.Equal(got[1].Waits, []store.RouteWait{rw("manager", 0, 0)}) {
		t.Fatalf("after the escalation's wait claimed %+v", got)
	}
	for _, n := range got {
		must(t, nb.NoticeDone(ctx, n.ID, "f"))
	}
	backlog(0, time.Time{})

	// A notice released is due at once to another holder, as it was
	// before its claim: the attempt uncounted, why it last failed and
	// where it went kept. Only its holder releases it, while it holds it.
	newRun(t, s, "released")
	rl, err := s.AcquireLease(ctx, "released", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, rl, store.Tick{Events: []store.Event{Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Notices: []store.Notice{notice(store.NoticeEnded, `{}`)}}))
	rid := store.NoticeID("released", 1, 0, store.NoticeEnded)
	if got = claim("g", time.Minute, 10); len(got) != 1 || got[0].ID != rid || got[0].Attempts != 1 {
		t.Fatalf("claimed %+v", got)
	}
	must(t, nb.NoticeRetry(ctx, rid, "g", "chat down", []string{"audit"}, []store.RouteWait{rw("chat", 0, 1)}))
	if got = claim("g", time.Minute, 10); len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("claimed again %+v", got)
	}
	mustCode(t, nb.NoticeRelease(ctx, rid, "h"), store.CodeFenced)
	must(t, nb.NoticeRelease(ctx, rid, "g"))
	mustCode(t, nb.NoticeRelease(ctx, rid, "g"), store.CodeFenced)
	mustCode(t, nb.NoticeDone(ctx, rid, "g"), store.CodeFenced)
	for range 2 {
		got = claim("h", time.Minute, 10)
		if len(got) != 1 || got[0].ID != rid || got[0].Attempts != 2 || got[0].LastError != "chat down" ||
			!slices.Equal(got[0].Sent, []string{"audit"}) || !slices.Equal(got[0].Waits, []store.RouteWait{rw("chat", 0, 1)}) {
			t.Fatalf("after a release claimed %+v", got)
		}
		must(t, nb.NoticeRelease(ctx, rid, "h"))
	}
	claim("h", time.Minute, 10)
	c.Advance(time.Minute)
	mustCode(t, nb.NoticeRelease(ctx, rid, "h"), store.CodeFenced) // its hold passed
	if got = claim("g", time.Minute, 10); len(got) != 1 || got[0].Attempts != 3 {
		t.Fatalf("after a hold passed claimed %+v", got)
	}
	must(t, nb.NoticeDone(ctx, rid, "g"))
	backlog(0, time.Time{})

	// Bad requests change nothing.
	mustCode(t, nb.NoticeRelease(ctx, "", "a"), store.CodeInvalidInput)
	mustCode(t, nb.NoticeRelease(ctx, "x", ""), store.CodeInvalidInput)
	for _, bad := range []struct {
		holder string
		hold   time.Duration
		limit  int
	}{{"", time.Minute, 1}, {"a", 0, 1}, {"a", time.Minute, 0}, {"a\xff", time.Minute, 1}, {string(make([]byte, 201)), time.Minute, 1}} {
		_, err := nb.ClaimNotices(ctx, bad.holder, bad.hold, bad.limit)
		mustCode(t, err, store.CodeInvalidInput)
	}
	mustCode(t, nb.NoticeDone(ctx, "", "a"), store.CodeInvalidInput)
	mustCode(t, nb.NoticeRetry(ctx, "x", "", "", nil, wait("chat", time.Second)), store.CodeInvalidInput)
	mustCode(t, nb.NoticeRetry(ctx, "x", "a", "", nil, wait("chat", -time.Second)), store.CodeInvalidInput)

	// Claimers racing share the notices: each is claimed once.
	const runs = 24
	for i := range runs {
		id := fmt.Sprintf("race-%02d", i)
		newRun(t, s, id)
		rl, err := s.AcquireLease(ctx, id, "w", time.Hour)
		must(t, err)
		must(t, s.Commit(ctx, rl, store.Tick{Events: []store.Event{Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
			Notices: []store.Notice{notice(store.NoticeEnded, `{}`)}}))
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		holder := fmt.Sprintf("h%d", w)
		wg.Go(func() {
			for {
				got, err := nb.ClaimNotices(ctx, holder, time.Hour, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				for _, n := range got {
					mu.Lock()
					if other, dup := seen[n.ID]; dup {
						mu.Unlock()
						errs <- fmt.Errorf("%s claimed by %s and %s", n.ID, other, holder)
						return
					}
					seen[n.ID] = holder
					mu.Unlock()
					if err := nb.NoticeDone(ctx, n.ID, holder); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != runs {
		t.Fatalf("racing claimers settled %d notices, want %d", len(seen), runs)
	}
	backlog(0, time.Time{})
}

// testNoticeReleaseWakes holds a store that wakes notifiers to a notice
// written to wake them to one released too, which another deliverer is
// then to take at once; a claim wakes none.
func testNoticeReleaseWakes(t *testing.T, s store.Store, c *Clock) {
	nb, ok := store.NoticeboardOf(s)
	nw, watches := store.As[store.NoticeWatcher](s)
	if !ok || !watches {
		t.Skip("the store wakes no notifier")
	}
	w := nw.WatchNotices(ctx)
	defer w.Close()
	quiet := func(what string) {
		t.Helper()
		if id, err := w.Wait(ctx, 300*time.Millisecond); id != "" || err != nil {
			t.Fatalf("%s: woke for %q (%v)", what, id, err)
		}
	}
	woken := func(what string) {
		t.Helper()
		if id, err := w.Wait(ctx, 5*time.Second); id != "told" || err != nil {
			t.Fatalf("%s: woke for %q (%v), want the run told", what, id, err)
		}
	}
	quiet("nothing written")
	newRun(t, s, "told")
	l, err := s.AcquireLease(ctx, "told", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{Events: []store.Event{Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Notices: []store.Notice{{Kind: store.NoticeEnded, Body: []byte(`{}`)}}}))
	woken("a notice written")
	for id, _ := w.Wait(ctx, 300*time.Millisecond); id != ""; id, _ = w.Wait(ctx, 300*time.Millisecond) {
	}
	got, err := nb.ClaimNotices(ctx, "a", time.Hour, 10)
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("claimed %d notices", len(got))
	}
	quiet("a notice claimed")
	must(t, nb.NoticeRelease(ctx, got[0].ID, "a"))
	woken("a notice released")
}

// testQuarantineNotices holds Quarantine's notices: written in its
// transaction under an ID naming the run's head and trace position, and
// only when the run is quarantined; a bad notice, or a run that does not
// exist, writes nothing; quarantining again at the same place tells once.
func testQuarantineNotices(t *testing.T, s store.Store, c *Clock) {
	nb, ok := store.NoticeboardOf(s)
	if !ok {
		t.Skip("the store keeps no notices")
	}
	count := func(want int64) { t.Helper(); noticeCount(t, nb, want) }
	told := store.Notice{Kind: store.NoticeQuarantined, Body: []byte(`{"kind":"run_quarantined","reason":"checkpoint digest mismatch"}`)}
	newRun(t, s, "q")
	l, err := s.AcquireLease(ctx, "q", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{Events: []store.Event{Ev("E", `{}`), Ev("E", `{}`)},
		Trace: []store.TraceRecord{{Kind: "x", Body: []byte(`{}`)}}}))

	for name, ns := range map[string][]store.Notice{
		"unknown kind":   {{Kind: "lunch", Body: []byte(`{}`)}},
		"not an object":  {{Kind: store.NoticeQuarantined, Body: []byte(`[1]`)}},
		"twice one kind": {told, told},
	} {
		mustCode(t, s.Quarantine(ctx, "q", "checkpoint digest mismatch", ns...), store.CodeInvalidInput)
		r, err := s.Run(ctx, "q")
		must(t, err)
		if r.Quarantine != "" {
			t.Fatalf("%s: a refused quarantine quarantined the run: %q", name, r.Quarantine)
		}
		count(0)
	}
	mustCode(t, s.Quarantine(ctx, "no-such-run", "checkpoint digest mismatch", told), store.CodeNotFound)
	count(0)

	t0 := c.Now()
	must(t, s.Quarantine(ctx, "q", "checkpoint digest mismatch", told))
	must(t, s.Quarantine(ctx, "q", "checkpoint digest mismatch", told)) // the same place: told once
	count(1)
	got, err := nb.ClaimNotices(ctx, "a", time.Minute, 10)
	must(t, err)
	if len(got) != 1 || got[0].ID != store.NoticeID("q", 2, 1, store.NoticeQuarantined) || got[0].RunID != "q" || got[0].Seq != 2 ||
		got[0].Kind != store.NoticeQuarantined || string(got[0].Body) != string(told.Body) || !got[0].CreatedAt.Equal(t0) {
		t.Fatalf("claimed %+v", got)
	}
	must(t, nb.NoticeDone(ctx, got[0].ID, "a"))
	// Without notices, as before: nothing told.
	newRun(t, s, "q2")
	must(t, s.Quarantine(ctx, "q2", "commit refused for good"))
	count(0)
}

// testTellRun holds TellRun: notices written for a run where it stands,
// under the IDs its tick's would have had; none once it has moved on, or
// for a run that is not there, or when badly made; told once at one
// place.
func testTellRun(t *testing.T, s store.Store, c *Clock) {
	nb, ok := store.NoticeboardOf(s)
	if !ok {
		t.Skip("the store keeps no notices")
	}
	count := func(want int64) { t.Helper(); noticeCount(t, nb, want) }
	told := store.Notice{Kind: store.NoticeApproval, Body: []byte(`{"kind":"approval_waiting","requests":["q"]}`)}
	newRun(t, s, "tell")
	l, err := s.AcquireLease(ctx, "tell", "w", time.Hour)
	must(t, err)
	must(t, s.Commit(ctx, l, store.Tick{Events: []store.Event{Ev("E", `{}`), Ev("E", `{}`)}, State: "WAIT_APPROVAL",
		Trace: []store.TraceRecord{{Kind: "x", Body: []byte(`{}`)}, {Kind: "x", Body: []byte(`{}`)}}}))

	for name, call := range map[string]func() (bool, error){
		"no run id":     func() (bool, error) { return nb.TellRun(ctx, "", 2, told) },
		"negative head": func() (bool, error) { return nb.TellRun(ctx, "tell", -1, told) },
		"no notices":    func() (bool, error) { return nb.TellRun(ctx, "tell", 2) },
		"unknown kind": func() (bool, error) {
			return nb.TellRun(ctx, "tell", 2, store.Notice{Kind: "lunch", Body: []byte(`{}`)})
		},
		"twice one kind": func() (bool, error) { return nb.TellRun(ctx, "tell", 2, told, told) },
	} {
		ok, err := call()
		if ok || store.CodeOf(err) != store.CodeInvalidInput {
			t.Fatalf("%s: TellRun = %v, %v; want %s", name, ok, err, store.CodeInvalidInput)
		}
	}
	if ok, err := nb.TellRun(ctx, "no-such-run", 0, told); ok || store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("a missing run: %v, %v", ok, err)
	}
	if ok, err := nb.TellRun(ctx, "tell", 1, told); ok || err != nil {
		t.Fatalf("a run moved on past head 1: %v, %v", ok, err)
	}
	count(0)

	t0 := c.Now()
	for range 2 { // told once at one place
		if ok, err := nb.TellRun(ctx, "tell", 2, told); !ok || err != nil {
			t.Fatalf("told at its head: %v, %v", ok, err)
		}
	}
	count(1)
	got, err := nb.ClaimNotices(ctx, "a", time.Minute, 10)
	must(t, err)
	if len(got) != 1 || got[0].ID != store.NoticeID("tell", 2, 2, store.NoticeApproval) || got[0].Seq != 2 || got[0].RunID != "tell" ||
		string(got[0].Body) != string(told.Body) || !got[0].CreatedAt.Equal(t0) {
		t.Fatalf("claimed %+v", got)
	}
	must(t, nb.NoticeDone(ctx, got[0].ID, "a"))
}

// noticeCount fails t unless nb holds want notices not yet delivered.
func noticeCount(t *testing.T, nb store.Noticeboard, want int64) {
	t.Helper()
	b, err := nb.NoticeBacklog(ctx)
	must(t, err)
	if b.Count != want {
		t.Fatalf("%d notices, want %d", b.Count, want)
	}
}
