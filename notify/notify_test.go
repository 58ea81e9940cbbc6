package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/store/storetest"
)

var ctx = context.Background()

var secret = []byte("a secret of 24 bytes....")

// delivery is one request a receiver took.
type delivery struct {
	raw               []byte
	id, kind, attempt string
	env               envelope
	verified          error
}

// receiver answers each request with the next status of its script (200
// once the script runs out) and records it.
type receiver struct {
	mu     sync.Mutex
	script []int
	retry  string // Retry-After on a failure
	got    []delivery
	clock  func() time.Time
	secret []byte // what it verifies with; the package's secret when nil
	stall  func() // when set, called before each answer
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := rc.secret
	if key == nil {
		key = secret
	}
	d := delivery{raw: body, id: r.Header.Get("Flrh-Notice-Id"), kind: r.Header.Get("Flrh-Notice-Kind"), attempt: r.Header.Get("Flrh-Notice-Attempt"),
		verified: Verify(key, body, r.Header.Get(SignatureHeader), rc.clock(), 5*time.Minute)}
	if err := json.Unmarshal(body, &d.env); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		d.verified = err
		if err == nil {
			d.verified = io.ErrUnexpectedEOF
		}
	}
	rc.mu.Lock()
	rc.got = append(rc.got, d)
	status := http.StatusOK
	if len(rc.script) > 0 {
		status, rc.script = rc.script[0], rc.script[1:]
	}
	rc.mu.Unlock()
	if rc.stall != nil {
		rc.stall()
	}
	if status >= 300 && rc.retry != "" {
		w.Header().Set("Retry-After", rc.retry)
	}
	if status >= 300 && status < 400 {
		w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
	}
	w.WriteHeader(status)
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

type fixture struct {
	t     *testing.T
	store *sqlite.Store
	clock *storetest.Clock
	rc    *receiver
	url   string
	seen  map[string]int // outcomes observed, and route/outcome
	mu    sync.Mutex
}

func newFixture(t *testing.T, script ...int) *fixture {
	t.Helper()
	c := storetest.NewClock()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rc := &receiver{script: script, clock: c.Now}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: s, clock: c, rc: rc, url: srv.URL + "/hooks/flrh", seen: map[string]int{}}
}

// ended commits run id's end with its notice.
func (f *fixture) ended(id string) string {
	f.t.Helper()
	if err := f.store.CreateRun(ctx, store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		f.t.Fatal(err)
	}
	l, err := f.store.AcquireLease(ctx, id, "w", time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	body := `{"kind":"run_ended","run_id":"` + id + `","outcome":"success"}`
	if err := f.store.Commit(ctx, l, store.Tick{Events: []store.Event{storetest.Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Notices: []store.Notice{{Kind: store.NoticeEnded, Body: []byte(body)}}}); err != nil {
		f.t.Fatal(err)
	}
	return store.NoticeID(id, 1, 0, store.NoticeEnded)
}

func (f *fixture) notifier(holder string, mod func(*Config)) *Notifier {
	f.t.Helper()
	cfg := Config{Board: f.store, URL: f.url, Secret: secret, Holder: holder, Clock: f.clock.Now, Timeout: 5 * time.Second,
		Observe: func(route, kind, outcome string) {
			f.mu.Lock()
			f.seen[outcome]++
			f.seen[route+"/"+outcome]++
			f.mu.Unlock()
		}}
	if mod != nil {
		mod(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) pass(n *Notifier, want int) {
	f.t.Helper()
	got, err := n.Pass(ctx)
	if err != nil || got != want {
		f.t.Fatalf("pass claimed %d (%v), want %d", got, err, want)
	}
}

// giveUpSoon has a notifier try again a minute after each failure and
// give up 90 s after a notice was written.
func giveUpSoon(c *Config) {
	c.MinDelay, c.MaxDelay, c.GiveUp = time.Minute, time.Minute, 90*time.Second
}

// passUntilGivenUp runs three passes of n (giveUpSoon), a minute apart,
// over one notice failing at each: the second leaves it waiting, the
// third drops it.
func (f *fixture) passUntilGivenUp(n *Notifier) {
	f.t.Helper()
	f.pass(n, 1)
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
	if f.backlog() != 1 {
		f.t.Fatalf("dropped too soon: backlog %d", f.backlog())
	}
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
}

func (f *fixture) backlog() int64 {
	f.t.Helper()
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return b.Count
}

// A notice is posted once, signed, with its id, kind and attempt in the
// headers and the runner's body inside the envelope, and deleted when the
// receiver takes it.
func TestDelivered(t *testing.T) {
	f := newFixture(t)
	id := f.ended("r1")
	n := f.notifier("a", nil)
	f.pass(n, 1)
	got := f.rc.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	d := got[0]
	if d.verified != nil || d.id != id || d.kind != store.NoticeEnded || d.attempt != "1" || d.env.ID != id || d.env.Attempt != 1 ||
		d.env.CreatedAt != f.clock.Now().UTC().Format(time.RFC3339Nano) || string(d.env.Notice) != `{"kind":"run_ended","run_id":"r1","outcome":"success"}` {
		t.Fatalf("delivery %+v (%s)", d, d.env.Notice)
	}
	if f.backlog() != 0 || f.seen["delivered"] != 1 {
		t.Fatalf("backlog %d, outcomes %v", f.backlog(), f.seen)
	}
	f.pass(n, 0)
}

// A refusal, a redirect or no answer is tried again after a delay that
// doubles with each attempt up to MaxDelay, or the receiver's
// Retry-After if longer, under the same id; the notice waits in the store
// meanwhile, and is delivered once the receiver takes it.
func TestRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, 503, 500, 302, 500, 500)
	id := f.ended("r1")
	n := f.notifier("a", func(c *Config) { c.MinDelay, c.MaxDelay = time.Second, 5*time.Second })
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		f.pass(n, 1)
		f.clock.Advance(wait - time.Millisecond)
		f.pass(n, 0) // not yet
		f.clock.Advance(time.Millisecond)
		if f.backlog() != 1 {
			t.Fatalf("after failure %d the backlog is %d", i+1, f.backlog())
		}
	}
	f.pass(n, 1)
	got := f.rc.deliveries()
	if len(got) != 6 || f.backlog() != 0 || f.seen["failed"] != 5 || f.seen["delivered"] != 1 {
		t.Fatalf("%d deliveries, backlog %d, outcomes %v", len(got), f.backlog(), f.seen)
	}
	for i, d := range got {
		if d.id != id || d.attempt != strconv.Itoa(i+1) || d.env.Attempt != i+1 || d.verified != nil {
			t.Fatalf("delivery %d: %+v", i, d)
		}
	}

	// A receiver's Retry-After longer than the backoff is heeded, up to
	// MaxDelay.
	f = newFixture(t, 429, 429)
	f.rc.retry = "3"
	f.ended("r2")
	n = f.notifier("a", func(c *Config) { c.MinDelay, c.MaxDelay = time.Second, 10*time.Second })
	f.pass(n, 1)
	f.clock.Advance(3*time.Second - time.Millisecond)
	f.pass(n, 0)
	f.clock.Advance(time.Millisecond)
	f.rc.retry = "3600"
	f.pass(n, 1)
	f.clock.Advance(10*time.Second - time.Millisecond)
	f.pass(n, 0)
	f.clock.Advance(time.Millisecond)
	f.pass(n, 1)
	if f.backlog() != 0 || len(f.rc.deliveries()) != 3 {
		t.Fatalf("backlog %d after %d deliveries", f.backlog(), len(f.rc.deliveries()))
	}
}

// A notice that could not be delivered before GiveUp is dropped at its
// next failure, and counted.
func TestDroppedWhenTooOld(t *testing.T) {
	f := newFixture(t, 500, 500, 500)
	f.ended("r1")
	f.passUntilGivenUp(f.notifier("a", giveUpSoon))
	if f.backlog() != 0 || f.seen["dropped"] != 1 || f.seen["failed"] != 2 {
		t.Fatalf("backlog %d, outcomes %v", f.backlog(), f.seen)
	}
}

// A deliverer that dies after the receiver took a notice and before it
// could delete it leaves it held; once the hold passes another delivers
// it again, under the same id, as its next attempt; the dead one can no
// longer settle it. Two deliverers sharing a store deliver each notice
// once.
func TestRedeliveredAfterACrash(t *testing.T) {
	f := newFixture(t)
	id := f.ended("r1")
	crashed := &deadAfterSend{Noticeboard: f.store}
	dead := f.notifier("dead", func(c *Config) { c.Board = crashed })
	if _, err := dead.Pass(ctx); err == nil {
		t.Fatal("the crash was not simulated")
	}
	live := f.notifier("live", nil)
	f.pass(live, 0) // held
	f.clock.Advance((DefaultBatch + 1) * 5 * time.Second)
	f.pass(live, 1)
	got := f.rc.deliveries()
	if len(got) != 2 || got[0].id != id || got[1].id != id || got[0].attempt != "1" || got[1].attempt != "2" || f.backlog() != 0 {
		t.Fatalf("deliveries %+v, backlog %d", got, f.backlog())
	}
	if err := f.store.NoticeDone(ctx, id, "dead"); store.CodeOf(err) != store.CodeFenced {
		t.Fatalf("the dead deliverer settled: %v", err)
	}

	// Two at once.
	f = newFixture(t)
	const runs = 40
	for i := range runs {
		f.ended("run-" + strconv.Itoa(i))
	}
	a, b := f.notifier("a", func(c *Config) { c.Batch = 3 }), f.notifier("b", func(c *Config) { c.Batch = 3 })
	var wg sync.WaitGroup
	for _, n := range []*Notifier{a, b} {
		wg.Go(func() {
			for {
				if k, err := n.Pass(ctx); err != nil || k == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	ids := map[string]int{}
	for _, d := range f.rc.deliveries() {
		ids[d.id]++
	}
	if len(ids) != runs || f.backlog() != 0 {
		t.Fatalf("%d notices delivered, backlog %d", len(ids), f.backlog())
	}
	for id, k := range ids {
		if k != 1 {
			t.Fatalf("%s delivered %d times", id, k)
		}
	}
}

// deadAfterSend is a store whose deliverer dies once its receiver took a
// notice: nothing it would settle reaches the store.
type deadAfterSend struct{ store.Noticeboard }

func (d *deadAfterSend) NoticeDone(context.Context, string, string) error {
	return store.Errorf(store.CodeUnavailable, "notice done", "", nil, "the process died")
}

// New refuses a configuration that could not deliver, or would deliver
// unsigned or with credentials in the URL.
func TestNewRefuses(t *testing.T) {
	f := newFixture(t)
	for name, mod := range map[string]func(*Config){
		"no store":           func(c *Config) { c.Board = nil },
		"no URL":             func(c *Config) { c.URL = "" },
		"not http":           func(c *Config) { c.URL = "ftp://example.com/x" },
		"no host":            func(c *Config) { c.URL = "http:///x" },
		"credentials in URL": func(c *Config) { c.URL = "https://user:pass@example.com/x" },
		"short secret":       func(c *Config) { c.Secret = []byte("fifteen bytes..") },
		"no holder":          func(c *Config) { c.Holder = "" },
		"unknown format":     func(c *Config) { c.Format = "teams" },
		"link not http":      func(c *Config) { c.Link = "ftp://flrh.example.com" },
		"link with a query":  func(c *Config) { c.Link = "https://flrh.example.com/?x=1" },
		"link with a user":   func(c *Config) { c.Link = "https://u:p@flrh.example.com" },
		"unknown kind":       func(c *Config) { c.Kinds = []string{store.NoticeEnded, "run_started"} },
	} {
		cfg := Config{Board: f.store, URL: f.url, Secret: secret, Holder: "a"}
		mod(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A receiver that cannot be reached is retried, and the reason kept and
// logged names no part of the URL, whose path may be its credential.
func TestUnreachableReasonHidesTheURL(t *testing.T) {
	f := newFixture(t)
	id := f.ended("r1")
	var logs strings.Builder
	n := f.notifier("a", func(c *Config) {
		c.URL = "http://127.0.0.1:1/services/T0AB/B0CD/s3cr3tt0k3n"
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	f.pass(n, 1)
	f.clock.Advance(time.Hour)
	got, err := f.store.ClaimNotices(ctx, "b", time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != id {
		t.Fatalf("claimed %+v, %v", got, err)
	}
	if !strings.HasPrefix(got[0].LastError, "POST to the webhook: ") || strings.Contains(got[0].LastError, "s3cr3t") ||
		strings.Contains(got[0].LastError, "127.0.0.1:1/") || strings.Contains(logs.String(), "s3cr3t") {
		t.Fatalf("the reason %q or the logs name the URL:\n%s", got[0].LastError, logs.String())
	}
}

func TestSlackText(t *testing.T) {
	b := store.NoticeBody{RunID: "refund-7", WorkflowID: "refund-agent", WorkflowVersion: "1"}
	with := func(mod func(*store.NoticeBody)) store.NoticeBody { c := b; mod(&c); return c }
	const base = "https://flrh.example.com/"
	for _, tc := range []struct {
		b          store.NoticeBody
		base, want string
	}{
		{with(func(c *store.NoticeBody) { c.Kind, c.Requests = store.NoticeApproval, []string{"q1"} }), base,
			"flrh: Run *refund-7* (refund-agent@1) waits for an approval (1 request). <https://flrh.example.com/ui/#/inbox|Open the approvals inbox>"},
		{with(func(c *store.NoticeBody) { c.Kind, c.Requests = store.NoticeApproval, []string{"q1", "q2"} }), "",
			"flrh: Run *refund-7* (refund-agent@1) waits for an approval (2 requests)."},
		{with(func(c *store.NoticeBody) {
			c.Kind, c.Requests, c.Approvers = store.NoticeApproval, []string{"q1"}, "2 of alice, bob & <carol> (members of leads), each approving"
		}), "",
			"flrh: Run *refund-7* (refund-agent@1) waits for an approval (1 request) from 2 of alice, bob &amp; &lt;carol&gt; (members of leads), each approving."},
		{with(func(c *store.NoticeBody) { c.Kind, c.Proposals = store.NoticeChoice, []string{"p"} }), base,
			"flrh: Run *refund-7* (refund-agent@1) waits for a person to choose among options (1 proposal). <https://flrh.example.com/ui/#/run/refund-7|Open the run>"},
		{with(func(c *store.NoticeBody) { c.Kind, c.Effects = store.NoticeReconciliation, []string{"i1", "i2"} }), base,
			"flrh: Run *refund-7* (refund-agent@1) waits for a person to reconcile 2 effects whose outcome is unknown. <https://flrh.example.com/ui/#/run/refund-7|Open the run>"},
		{with(func(c *store.NoticeBody) {
			c.Kind, c.Park, c.Wires = store.NoticeTripped, "degraded_safe_mode", []string{"W1", "W2"}
		}), "", "flrh: Run *refund-7* (refund-agent@1) was frozen by a tripwire (W1, W2; degraded_safe_mode): a person must release it."},
		{with(func(c *store.NoticeBody) {
			c.Kind, c.Reason = store.NoticeQuarantined, "checkpoint format 99 is newer than <this build>"
		}), base,
			"flrh: Run *refund-7* (refund-agent@1) was quarantined and cannot go on until a person mends it: checkpoint format 99 is newer than &lt;this build&gt;. <https://flrh.example.com/ui/#/run/refund-7|Open the run>"},
		{with(func(c *store.NoticeBody) { c.Kind, c.Outcome = store.NoticeEnded, "success" }), "", "flrh: Run *refund-7* (refund-agent@1) ended: success."},
		// Markup in a name is text, and a run id in a link is escaped.
		{with(func(c *store.NoticeBody) { c.Kind, c.Outcome, c.RunID = store.NoticeEnded, "success", "a<b>&c d" }), base,
			"flrh: Run *a&lt;b&gt;&amp;c d* (refund-agent@1) ended: success. <https://flrh.example.com/ui/#/run/a%3Cb%3E&amp;c%20d|Open the run>"},
	} {
		if got := SlackText(tc.b, tc.base); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.b.Kind, got, tc.want)
		}
	}
}

// FormatSlack posts {"text": ...}, signed as any delivery; the flrh
// format links the run's page when Link is set.
func TestFormats(t *testing.T) {
	f := newFixture(t)
	f.ended("r1")
	f.pass(f.notifier("a", func(c *Config) { c.Format, c.Link = FormatSlack, "https://flrh.example.com" }), 1)
	f.ended("r2")
	f.pass(f.notifier("a", func(c *Config) { c.Link = "https://flrh.example.com" }), 1)
	got := f.rc.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries", len(got))
	}
	var slack map[string]string
	if err := json.Unmarshal(got[0].raw, &slack); err != nil || len(slack) != 1 ||
		slack["text"] != "flrh: Run *r1* (@) ended: success. <https://flrh.example.com/ui/#/run/r1|Open the run>" {
		t.Fatalf("slack body %s (%v)", got[0].raw, err)
	}
	if got[0].verified != nil || got[0].id != store.NoticeID("r1", 1, 0, store.NoticeEnded) {
		t.Fatalf("slack delivery %+v", got[0])
	}
	if got[1].env.Link != "https://flrh.example.com/ui/#/run/r2" || got[1].verified != nil {
		t.Fatalf("flrh body %s", got[1].raw)
	}
}

// A kind not delivered is deleted unsent and counted skipped.
func TestKindsSkipped(t *testing.T) {
	f := newFixture(t)
	f.ended("r1")
	n := f.notifier("a", func(c *Config) { c.Kinds = []string{store.NoticeApproval} })
	f.pass(n, 1)
	if len(f.rc.deliveries()) != 0 || f.backlog() != 0 || f.seen["skipped"] != 1 {
		t.Fatalf("%d deliveries, backlog %d, outcomes %v", len(f.rc.deliveries()), f.backlog(), f.seen)
	}
}

// A notifier holds the store's notify duty from its first pass, renews it
// at most every minute, and a second notifier finds it held.
func TestNotifyDutyHeld(t *testing.T) {
	f := newFixture(t)
	n := f.notifier("a", nil)
	duty := func() store.Duty {
		t.Helper()
		d, err := f.store.Duty(ctx, store.NotifyDuty)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	t0 := f.clock.Now()
	f.pass(n, 0)
	if d := duty(); d.Holder != "a" || !d.ExpiresAt.Equal(t0.Add(store.NotifyDutyTTL)) {
		t.Fatalf("after the first pass: %+v", d)
	}
	f.clock.Advance(30 * time.Second)
	f.pass(n, 0)
	if d := duty(); !d.ExpiresAt.Equal(t0.Add(store.NotifyDutyTTL)) {
		t.Fatalf("renewed within the minute: %+v", d)
	}
	f.clock.Advance(30 * time.Second)
	f.pass(n, 0)
	if d := duty(); !d.ExpiresAt.Equal(f.clock.Now().Add(store.NotifyDutyTTL)) {
		t.Fatalf("not renewed after the minute: %+v", d)
	}
	f.pass(f.notifier("b", nil), 0)
	if d := duty(); d.Holder != "a" {
		t.Fatalf("another notifier took the held duty: %+v", d)
	}
}

// A notice already older than GiveUp when claimed, written while no one
// delivered, is dropped unsent.
func TestStaleNoticeDroppedUnsent(t *testing.T) {
	f := newFixture(t)
	f.ended("r1")
	f.clock.Advance(DefaultGiveUp)
	f.pass(f.notifier("a", nil), 1)
	if len(f.rc.deliveries()) != 0 || f.backlog() != 0 || f.seen["dropped"] != 1 {
		t.Fatalf("%d deliveries, backlog %d, outcomes %v", len(f.rc.deliveries()), f.backlog(), f.seen)
	}
}

// Whatever a run's id, workflow, outcome or wires hold, SlackText's only
// markup is its own: no '<' or '>' but the link's, and every '&' begins
// an escape, so a run named "<!channel>" mentions no one.
func TestSlackTextEscapesEverything(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		text := rapid.StringOf(rapid.SampledFrom([]rune("<>&!@#|* abcé\n"))).Draw(rt, "text")
		b := store.NoticeBody{Kind: rapid.SampledFrom(append([]string{"other"}, Kinds...)).Draw(rt, "kind"), RunID: text, WorkflowID: text,
			WorkflowVersion: text, Outcome: text, Park: text, Wires: []string{text}}
		base := rapid.SampledFrom([]string{"", "https://flrh.example.com"}).Draw(rt, "base")
		s := SlackText(b, base)
		if base != "" {
			i := strings.LastIndex(s, " <https://flrh.example.com/ui/#/")
			if i < 0 || !strings.HasSuffix(s, ">") {
				rt.Fatalf("no link at the end of %q", s)
			}
			link, label, _ := strings.Cut(s[i+2:len(s)-1], "|")
			if strings.ContainsAny(link, "<> |\n") || strings.Contains(strings.ReplaceAll(link, "&amp;", ""), "&") ||
				(label != "Open the run" && label != "Open the approvals inbox") {
				rt.Fatalf("the link %q (%q) holds markup", link, label)
			}
			s = s[:i]
		}
		if strings.ContainsAny(s, "<>") {
			rt.Fatalf("markup in %q", s)
		}
		for i := range len(s) {
			if s[i] == '&' && !strings.HasPrefix(s[i:], "&amp;") && !strings.HasPrefix(s[i:], "&lt;") && !strings.HasPrefix(s[i:], "&gt;") {
				rt.Fatalf("a bare & in %q", s)
			}
		}
	})
}

// Test posts one signed notice of kind test, needing no store, and says
// whether the receiver took it, naming no part of the URL when not.
func TestTestPosts(t *testing.T) {
	f := newFixture(t, 503)
	cfg := Config{URL: f.url, Secret: secret, Clock: f.clock.Now}
	err := Test(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "/hooks/flrh") {
		t.Fatalf("a refusal: %v", err)
	}
	if err := Test(ctx, cfg); err != nil {
		t.Fatalf("taken: %v", err)
	}
	cfg.Format = FormatSlack
	if err := Test(ctx, cfg); err != nil {
		t.Fatalf("taken: %v", err)
	}
	got := f.rc.deliveries()
	if len(got) != 3 || got[1].kind != TestKind || got[1].verified != nil || !strings.HasPrefix(got[1].id, "test/") ||
		string(got[2].raw) != `{"text":"flrh: a test notice: notices reach you here."}` {
		t.Fatalf("deliveries %+v", got)
	}
	if Test(ctx, Config{URL: f.url, Secret: []byte("short")}) == nil {
		t.Fatal("a short secret accepted")
	}
}

// OnTaken is called once a notifier took the notify duty no one held,
// at the pass that took it: never held (since zero), or lapsed (since its
// expiry), until when it took it; again at later passes while it fails;
// never for a notifier renewing its own hold, nor for one that finds the
// duty held.
func TestOnTakenWhenNoOneDelivered(t *testing.T) {
	f := newFixture(t)
	type call struct{ since, until time.Time }
	var calls []call
	var fail error
	taking := func(holder string) *Notifier {
		return f.notifier(holder, func(c *Config) {
			c.OnTaken = func(_ context.Context, since, until time.Time) error {
				calls = append(calls, call{since, until})
				return fail
			}
		})
	}
	a := taking("a")
	t0 := f.clock.Now()
	fail = errors.New("the store is busy")
	f.pass(a, 0)
	fail = nil
	f.clock.Advance(time.Second)
	f.pass(a, 0)
	if len(calls) != 2 || !calls[0].since.IsZero() || !calls[0].until.Equal(t0) || calls[1] != calls[0] {
		t.Fatalf("calls %v, want two (one failed) since the zero time until %v", calls, t0)
	}
	for range 3 { // renewing its own hold tells nothing more
		f.clock.Advance(time.Minute)
		f.pass(a, 0)
	}
	f.pass(taking("b"), 0) // held by a
	if len(calls) != 2 {
		t.Fatalf("calls %v after renewals and a second notifier", calls)
	}

	// a stops; the duty lapses; c takes it and is told since when.
	d, err := f.store.Duty(ctx, store.NotifyDuty)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(store.NotifyDutyTTL + time.Hour)
	f.pass(taking("c"), 0)
	if len(calls) != 3 || !calls[2].since.Equal(d.ExpiresAt) || !calls[2].until.Equal(f.clock.Now()) {
		t.Fatalf("after the lapse: calls %v, want the last since %v", calls, d.ExpiresAt)
	}
}

// OnTaken's bounds are on the store's clock, which runs' times are
// written on, not the notifier's: a notifier whose clock runs half an
// hour ahead is told the take at the store's time.
func TestOnTakenOnTheStoresClock(t *testing.T) {
	f := newFixture(t)
	var until time.Time
	n := f.notifier("a", func(c *Config) {
		c.Clock = func() time.Time { return f.clock.Now().Add(30 * time.Minute) }
		c.OnTaken = func(_ context.Context, _, u time.Time) error { until = u; return nil }
	})
	f.pass(n, 0)
	if !until.Equal(f.clock.Now()) {
		t.Fatalf("told the take at %v, the store's clock reads %v", until, f.clock.Now())
	}
}
