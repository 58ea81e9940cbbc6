package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/workflow"
)

// The approver the refund bundle's approval policy names; its token also
// reconciles and operates, so one browser session does every act.
const (
	tokLead   = "tok-finance-lead-8f3a1c9e5b7d"
	tokViewer = "tok-viewer-2b6e0d4f8a1c"
	tokOps    = "tok-ops-team-9d2c4e6a0b1f"
	tokens    = `{"tokens":[
 {"actor":"finance-lead","roles":["approver","operator","reconciler"],"token":"` + tokLead + `"},
 {"actor":"vera","roles":["viewer"],"token":"` + tokViewer + `"},
 {"actor":"otto","roles":["viewer","approver"],"token":"` + tokOps + `","workflows":["ops-agent"],"rate":"600/m"}
]}`
)

// browserPath finds the browser: FLRH_CHROMIUM, else chromium on PATH.
// Without one the tests skip, unless FLRH_REQUIRE_BROWSER is set (CI).
func browserPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FLRH_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("FLRH_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FLRH_REQUIRE_BROWSER") != "" {
		t.Fatal("FLRH_REQUIRE_BROWSER is set but no browser was found: set FLRH_CHROMIUM or install chromium")
	}
	t.Skip("no browser: set FLRH_CHROMIUM or install chromium to run the browser tests")
	return ""
}

// blindLookups wraps the destination's adapter: while blind is set, a
// lookup cannot tell whether a request was applied, so an answer the
// sandbox dropped stays unknown until a person reconciles it.
type blindLookups struct {
	effect.Adapter
	blind *atomic.Bool
}

func (b blindLookups) Lookup(ctx context.Context, key, digest string) (effect.LookupResult, error) {
	if b.blind.Load() {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "UNREACHABLE"}, nil
	}
	return b.Adapter.Lookup(ctx, key, digest)
}

func (b blindLookups) ContentDigest(in effect.Intent) (string, error) {
	return b.Adapter.(effect.ContentDigester).ContentDigest(in)
}

type world struct {
	t      testing.TB
	ctx    context.Context // the browser tab
	st     store.Store
	r      *runner.Runner
	sb     *sandbox.Sandbox
	blind  *atomic.Bool
	ts     *httptest.Server                     // with tokens
	open   *httptest.Server                     // the same runs, no tokens (loopback only)
	serve  func(server.Config) *httptest.Server // another server of the same runs, configured further
	shots  string
	mu     sync.Mutex
	errors []string // exceptions and console errors the pages raised
}

// newWorld serves the refund example over a temporary SQLite store, its
// payments going over HTTP to a sandbox destination, and opens a headless
// browser at a laptop's 1366×768.
func newWorld(t testing.TB) *world { return newWorldWith(t, nil) }

// newWorldWith is newWorld with the store wrapped (nil: as it is) under
// the runner and the servers.
func newWorldWith(t testing.TB, wrap func(store.Store) store.Store) *world {
	exe := browserPath(t)
	w := &world{t: t, blind: &atomic.Bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var base store.Store = st
	if wrap != nil {
		base = wrap(st)
	}
	wrapped, notifier := server.NotifyCommits(base)
	w.st = wrapped

	w.sb, err = sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sbDone := make(chan struct{})
	go func() { defer close(sbDone); w.sb.Serve(ctx, ln, time.Second) }()
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath

	// The refund example, the support example (the same refunds with an
	// AIF controller scoring the options), and the operations example
	// (restarts H may escalate); all act through the sandbox.
	var wfs []runner.Workflow
	reg := &effect.Registry{}
	for _, name := range []string{"refund-agent", "support-agent", "ops-agent"} {
		wf, ads, err := bundle.LoadExample(name)
		if err != nil {
			t.Fatal(err)
		}
		wfs = append(wfs, wf)
		httpReg, err := ads.Registry(func(string) string { return url })
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range httpReg.Entries() {
			if _, dup := reg.Adapter(e[0], e[1]); dup {
				continue // the same destination, already wired
			}
			a, _ := httpReg.Adapter(e[0], e[1])
			if err := reg.Register(e[0], e[1], blindLookups{a, w.blind}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.r, err = runner.New(runner.Config{Store: wrapped, Workflows: wfs, Adapters: reg, Owner: "browser-test",
		Poll: 20 * time.Millisecond, Parallelism: 4, Logger: slog.New(slog.DiscardHandler),
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); w.r.Run(ctx) }()

	tk, err := server.ParseTokens([]byte(tokens))
	if err != nil {
		t.Fatal(err)
	}
	mk := func(tk *server.Tokens) (*server.Server, *httptest.Server) {
		srv, err := server.New(server.Config{Store: wrapped, Runner: w.r, Catalog: server.Static(wfs), Tokens: tk, Notifier: notifier,
			StreamPoll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return srv, httptest.NewServer(srv)
	}
	srv, ts := mk(tk)
	openSrv, open := mk(nil)
	w.ts, w.open = ts, open
	w.serve = func(cfg server.Config) *httptest.Server {
		cfg.Store, cfg.Runner, cfg.Catalog, cfg.Notifier, cfg.StreamPoll = wrapped, w.r, server.Static(wfs), notifier, 50*time.Millisecond
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(func() { srv.Shutdown(); ts.Close() })
		return ts
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1366, 768),
		chromedp.NoSandbox, chromedp.DisableGPU)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	// Exceptions, console errors and policy violations the pages raise;
	// network errors the test provokes (a 409, a 404) are the app's own
	// business and shown to the person.
	go func() {
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				w.note(m.String())
			}
		}
	}()
	w.ctx = bctx

	w.shots = os.Getenv("FLRH_ARTIFACTS")
	if w.shots == "" {
		w.shots = t.TempDir()
	} else if err := os.MkdirAll(w.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", w.shots)

	t.Cleanup(func() {
		bcancel()
		acancel()
		srv.Shutdown()
		openSrv.Shutdown()
		ts.Close()
		open.Close()
		cancel()
		<-runDone
		<-sbDone
		w.sb.Close()
	})
	return w
}

// serveWith is another server of the world's runs, with the world's
// tokens and cfg's further configuration.
func (w *world) serveWith(cfg server.Config) *httptest.Server {
	w.t.Helper()
	tk, err := server.ParseTokens([]byte(tokens))
	if err != nil {
		w.t.Fatal(err)
	}
	cfg.Tokens = tk
	return w.serve(cfg)
}

// noPageErrors fails t if the pages raised exceptions or console errors.
func (w *world) noPageErrors(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	errs := slices.Clone(w.errors)
	w.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("the pages raised errors:\n%s", strings.Join(errs, "\n"))
	}
}

func (w *world) note(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errors = append(w.errors, s)
}

// run drives the browser, failing the test on error; every step is
// bounded so a missing element fails in seconds, not at the test timeout.
func (w *world) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		w.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		w.t.Fatalf("%s: %v", what, err)
	}
}

// shot saves a PNG of the viewport (what a 1366×768 screen shows).
func (w *world) shot(name string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		w.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(w.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// fullShot saves a PNG of the whole page, below the fold too.
func (w *world) fullShot(name string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		w.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(w.shots, name+".png"), png, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// a11yScript lists what a page gets wrong for keyboard and screen-reader
// users and for contrast: a form control without a label, a button or
// link without a name, a focusable element hidden from the keyboard, and
// text whose contrast with its background is under WCAG AA (4.5:1, or 3:1
// for large text).
const a11yScript = `(() => {
  const out = [];
  const name = (el) => (el.getAttribute('aria-label') || el.textContent || el.title || el.value || '').trim();
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (el.type === 'hidden') continue;
    const labelled = (el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]')) || el.closest('label') || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    if (!labelled) out.push('unlabelled ' + el.tagName.toLowerCase() + (el.id ? '#' + el.id : ''));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    if (!name(el)) out.push('nameless ' + el.tagName.toLowerCase() + ' ' + el.outerHTML.slice(0, 80));
    if (el.tabIndex < 0) out.push('not keyboard reachable: ' + name(el));
  }
  const rgb = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(',').map(Number); return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 }; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bg = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c && c.a > 0.5) return c; } return { r: 255, g: 255, b: 255, a: 1 }; };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || seen.has(el)) continue;
    seen.add(el);
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none' || !el.getClientRects().length) continue;
    if (el.closest('button:disabled')) continue; // WCAG exempts inactive controls
    const fg = rgb(st.color);
    const b = bg(el);
    if (!fg) continue;
    const l1 = lum(fg), l2 = lum(b);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) out.push('contrast ' + ratio.toFixed(2) + ' < ' + need + ': "' + n.textContent.trim().slice(0, 40) + '"');
  }
  return out;
})()`

// checkA11y fails the test on any finding of a11yScript on the page shown.
func (w *world) checkA11y(page string) {
	w.t.Helper()
	if bad := value(w, "accessibility of "+page, chromedp.Evaluate[[]string](a11yScript)); len(bad) > 0 {
		w.t.Fatalf("%s: %s", page, strings.Join(bad, "; "))
	}
}

// api calls the JSON API directly, as the test's own hands.
func (w *world) api(method, path, token string, body any) (int, map[string]any) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, w.ts.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.ts.Client().Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (w *world) start(id string, amount int, payee, reason string) {
	w.t.Helper()
	w.startIn("refund-agent", id, amount, payee, reason)
}

func (w *world) startIn(workflow, id string, amount int, payee, reason string) {
	w.t.Helper()
	in := map[string]any{"type": "refund.requested/1", "payload": map[string]any{"refund_id": "r-" + id, "amount": amount, "payee": payee, "reason": reason}}
	if code, out := w.api("POST", "/v1/runs", tokLead, map[string]any{"workflow": workflow, "run_id": id, "input": in}); code != 201 {
		w.t.Fatalf("start %s: %d %v", id, code, out)
	}
}

// status reads a run as the runner sees it (not through the UI).
func (w *world) status(id string) runner.Status {
	w.t.Helper()
	st, err := w.r.Inspect(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// value runs one action that returns a value, bounded like run.
func value[T any](w *world, what string, a chromedp.Action[T]) T {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		w.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		w.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var last string
		for {
			nodes, err := chromedp.Evaluate[[]string](fmt.Sprintf(`(()=>{const e=document.querySelector(%q);return e?[e.textContent]:[]})()`, sel))(ctx, t)
			if err == nil && len(nodes) == 1 {
				last = nodes[0]
				if strings.Contains(last, want) {
					return nil
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s never showed %q (last %q)", sel, want, last)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// press clicks a button the page may be redrawing as the run moves (the
// acts section is rebuilt when what it shows changes): a click that meets
// a node just replaced is tried again on the new one.
// typeInto types text into the field sel selects, again while the page
// redrew the field under the keys (a list refreshed): until the field on
// the page holds exactly text.
func typeInto(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for range 5 {
			if _, err := chromedp.Evaluate[bool](fmt.Sprintf(`(()=>{const e=document.querySelector(%q);if(e)e.value='';return !!e})()`, sel))(ctx, t); err != nil {
				return err
			}
			if _, err := chromedp.SendKeys(chromedp.CSS(sel), text)(ctx, t); err != nil {
				return err
			}
			got, err := chromedp.Evaluate[string](fmt.Sprintf(`(()=>{const e=document.querySelector(%q);return e?e.value:''})()`, sel))(ctx, t)
			if err != nil || got == text || ctx.Err() != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("%s never held %q", sel, text)
	})
}

func press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		var err error
		for range 5 {
			if _, err = chromedp.Click(chromedp.CSS(sel))(ctx, t); err == nil || ctx.Err() != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	})
}

// stripCells reads the Journey Strip as drawn: for each step, the state
// whose cell is lit.
func (w *world) stripCells() []string {
	w.t.Helper()
	return value(w, "read the strip", chromedp.Evaluate[[]string](`(()=>{const out=[];for(const td of document.querySelectorAll('#strip td.on')){out[Number(td.dataset.step)-1]=td.dataset.state}return out})()`))
}

// checkStrip compares the drawn strip with the workflow's own view of the
// run, read from the runner: same states, same order, one cell lit per
// step, the same state now. The run may still be moving, and the page
// follows it through its event stream, so they must agree within seconds.
func (w *world) checkStrip(id string) []string {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		view, ok := w.status(id).View.(workflow.View)
		if !ok {
			w.t.Fatalf("run %s: the workflow reports no view", id)
		}
		lit := value(w, "count lit cells", chromedp.Evaluate[int](`document.querySelectorAll('#strip td.on').length`))
		got := w.stripCells()
		current := value(w, "read the current state", chromedp.AttributeValue(chromedp.CSS("#mrp-state"), "data-internal")).Value
		if slices.Equal(got, view.Strip) && lit == len(view.Strip) && len(got) > 0 && current == view.MRPState {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s: strip drawn %v (%d lit, now %q); the workflow says %v, now %q", id, got, lit, current, view.Strip, view.MRPState)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) page(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Navigate(w.ts.URL + "/ui/" + hash)
}

func TestBrowser(t *testing.T) {
	w := newWorld(t)
	began := time.Now()

	// The UI loads, takes a token and knows who it speaks for.
	w.run("sign in",
		chromedp.Navigate(w.ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		waitText("#whoami", "token needed"),
		chromedp.SendKeys(chromedp.CSS("#token-input"), tokLead),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		waitText("#whoami", "finance-lead"))
	loc := value(w, "location", chromedp.Location())
	if !strings.HasPrefix(loc, w.ts.URL+"/ui/") {
		t.Fatalf("/ did not lead to the UI: %s", loc)
	}

	t.Run("approve", func(t *testing.T) {
		w.t = t
		w.start("big-refund", 900, "bob", "cancelled order")
		w.run("watch it wait", w.page("#/run/big-refund"), waitText("#run-state", "WAIT_APPROVAL"),
			chromedp.WaitVisible(chromedp.CSS(`#acts article.approval`)))
		w.checkStrip("big-refund")
		w.checkA11y("run page")
		w.shot("1-run-waiting-approval")
		w.fullShot("1-run-waiting-approval-full")

		need := w.status("big-refund").Waiting[0]
		// An input handed to the run while it waits for the approval stays
		// unread: the run completes with its one payment.
		more := []byte(`{"type":"refund.requested/1","payload":{"refund_id":"r-more","amount":5,"payee":"bob","reason":"again"}}`)
		if err := w.r.Submit(context.Background(), "big-refund", more, runner.Actor{Name: "bot", Role: "agent", Capability: "input.propose"}); err != nil {
			t.Fatal(err)
		}
		w.run("inbox", chromedp.Navigate(w.ts.URL+"/ui/#/inbox"),
			chromedp.WaitVisible(chromedp.CSS(`article.approval[data-run="big-refund"]`)))
		preview := value(w, "preview", chromedp.TextContent(chromedp.CSS(`article.approval[data-run="big-refund"] pre.preview`)))
		digest := value(w, "digest", chromedp.TextContent(chromedp.CSS(`article.approval[data-run="big-refund"] code.digest`)))
		if preview != need.Preview || digest != need.RequestDigest {
			t.Fatalf("inbox shows preview %q digest %q; the run waits on %q %q", preview, digest, need.Preview, need.RequestDigest)
		}
		// Who may approve, in the workflow's words.
		who := value(w, "who may approve", chromedp.Evaluate[string](`(() => {
			const dt = [...document.querySelectorAll('article.approval[data-run="big-refund"] dt')].find((d) => d.textContent === 'Who may approve');
			return dt ? dt.nextElementSibling.textContent : '';
		})()`))
		refunds, _, err := bundle.LoadExample("refund-agent")
		if err != nil {
			t.Fatal(err)
		}
		if want := refunds.WhoMayApprove(); who != want || want == "" {
			t.Fatalf("the inbox says %q may approve; the workflow says %q", who, want)
		}
		// Whether the signed-in person may approve it, by the checks an
		// approval makes; the list narrowed to theirs keeps it.
		w.run("for you", chromedp.WaitVisible(chromedp.CSS(`article.approval[data-run="big-refund"][data-you="may"]`)))
		forYou := value(w, "for you", chromedp.Evaluate[string](`(() => {
			const dt = [...document.querySelectorAll('article.approval[data-run="big-refund"] dt')].find((d) => d.textContent === 'For you');
			return dt ? dt.nextElementSibling.textContent : '';
		})()`))
		if forYou != "You may approve this now." {
			t.Fatalf("the inbox tells finance-lead %q", forYou)
		}
		w.run("only mine", chromedp.Click(chromedp.CSS("#inbox-mine")), waitText("#inbox-info", "1 approval waiting for you."),
			chromedp.WaitVisible(chromedp.CSS(`article.approval[data-run="big-refund"]`)))
		w.run("inbox count", waitText("#inbox-count", "1"))
		w.checkA11y("inbox")
		w.shot("2-inbox")
		w.fullShot("2-inbox-full")
		// Keyboard: the approve button is reachable and works with Enter.
		w.run("approve", chromedp.Focus(chromedp.CSS(`article.approval[data-run="big-refund"] button[data-act="approve"]`)),
			chromedp.KeyEvent("\r"),
			waitText("#status", "Approved"),
			chromedp.WaitNotPresent(chromedp.CSS(`article.approval[data-run="big-refund"]`)))
		w.run("see it complete", w.page("#/run/big-refund"), waitText("#run-state", "SUCCEEDED"), waitText("#live", "ended"),
			waitText("#run-inbox", "1 the run ended before it took them"))
		run, err := w.st.Run(context.Background(), "big-refund")
		if err != nil {
			t.Fatal(err)
		}
		rcs, err := w.st.Receipts(context.Background(), "big-refund")
		if err != nil || len(rcs) != 1 {
			t.Fatalf("receipts %v %v", rcs, err)
		}
		outcome := value(w, "outcome", chromedp.TextContent(chromedp.CSS("#run-outcome")))
		receipt := value(w, "receipt", chromedp.TextContent(chromedp.CSS("#effects-table td.receipt")))
		if outcome != run.Outcome || !strings.HasPrefix(receipt, rcs[0].Outcome+" ") {
			t.Fatalf("page shows outcome %q receipt %q; the store has %q and %q", outcome, receipt, run.Outcome, rcs[0].Outcome)
		}
		strip := w.checkStrip("big-refund")
		if strip[len(strip)-1] != "DECIDE" {
			t.Fatalf("a completed refund's strip ends %v", strip)
		}
		ms := w.sb.Mutations()
		if len(ms) != 1 || !strings.Contains(string(ms[0].Body), "900") {
			t.Fatalf("the destination applied %+v", ms)
		}
		// The timeline holds every stored event, in order.
		seqs := value(w, "timeline", chromedp.Evaluate[[]int](`[...document.querySelectorAll('#timeline li')].map(li=>Number(li.dataset.seq))`))
		evs, err := w.st.Events(context.Background(), "big-refund", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) != len(evs) || seqs[0] != 1 || !slices.IsSorted(seqs) {
			t.Fatalf("timeline shows %v; the run has %d events", seqs, len(evs))
		}
		w.shot("3-run-succeeded")
		w.fullShot("3-run-succeeded-full")
	})

	t.Run("deny", func(t *testing.T) {
		w.t = t
		before := len(w.sb.Mutations())
		w.start("denied-refund", 500, "carol", "late delivery")
		w.run("deny", w.page("#/inbox"),
			chromedp.WaitVisible(chromedp.CSS(`article.approval[data-run="denied-refund"]`)),
			chromedp.SendKeys(chromedp.CSS(`article.approval[data-run="denied-refund"] input[type=text]`), "not our error"),
			chromedp.Click(chromedp.CSS(`article.approval[data-run="denied-refund"] button[data-act="deny"]`)),
			waitText("#status", "Denied"))
		w.run("see it fail", w.page("#/run/denied-refund"), waitText("#run-state", "FAILED_PERMANENT"))
		if got := len(w.sb.Mutations()); got != before {
			t.Fatalf("a denied refund reached the destination: %d mutations, was %d", got, before)
		}
		in, err := w.st.Inbox(context.Background(), "denied-refund", false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(in, func(e store.Inbound) bool {
			return e.Kind == runner.KindDeny && e.Actor == "finance-lead" && strings.Contains(string(e.Body), "not our error")
		}) {
			t.Fatalf("no denial by finance-lead with the reason in the inbox: %+v", in)
		}
		w.shot("4-run-denied")
	})

	t.Run("reconcile", func(t *testing.T) {
		w.t = t
		// The destination applies the next payment and drops its answer;
		// lookups cannot tell what happened.
		w.blind.Store(true)
		defer w.blind.Store(false)
		if err := w.sb.Inject(sandbox.Fault{Times: 1, Drop: true}); err != nil {
			t.Fatal(err)
		}
		before := len(w.sb.Mutations())
		w.start("lost-answer", 40, "alice", "damaged item")
		w.run("see it unknown", w.page("#/run/lost-answer"),
			chromedp.WaitVisible(chromedp.CSS(`article.reconcile`)))
		unknown := w.status("lost-answer").Unknown
		shown := value(w, "intent", chromedp.AttributeValue(chromedp.CSS(`article.reconcile`), "data-intent")).Value
		if len(unknown) != 1 || shown != unknown[0] {
			t.Fatalf("reconcile card for %q; the run has unknown %v", shown, unknown)
		}
		if got := len(w.sb.Mutations()); got != before+1 {
			t.Fatalf("the sandbox applied %d mutations, want %d", got, before+1)
		}
		w.checkA11y("reconciliation")
		w.shot("5-outcome-unknown")
		// The person checked the destination: it took effect.
		w.run("reconcile", press(`article.reconcile button[data-resolution="confirmed_success"]`),
			waitText("#status", "Reconciled"), waitText("#run-state", "SUCCEEDED"))
		if got := len(w.sb.Mutations()); got != before+1 {
			t.Fatalf("reconciling sent the payment again: %d mutations", got)
		}
		w.shot("6-reconciled")
	})

	t.Run("options", func(t *testing.T) {
		w.t = t
		w.start("goodwill", 30, "dave", "goodwill")
		w.run("see the options", w.page("#/run/goodwill"), waitText("#mrp-state", "OPTIONS"),
			chromedp.WaitVisible(chromedp.CSS(`article.offer button[data-act="choose"]`)))
		w.checkStrip("goodwill")
		view := w.status("goodwill").View.(workflow.View)
		shown := value(w, "options shown", chromedp.Evaluate[[]string](`[...document.querySelectorAll('article.offer button[data-act="choose"]')].map(b=>b.dataset.option)`))
		if len(view.Offers) != 1 || !slices.Equal(shown, view.Offers[0].Options) {
			t.Fatalf("options shown %v; the run offers %+v", shown, view.Offers)
		}
		w.checkA11y("options")
		w.shot("7-options")
		w.fullShot("7-options-full")
		// A person picks the first option: the deliberation machine records
		// the choice under the token's actor (row H03, OPTIONS → DECIDE) and
		// the page draws the strip the workflow reports afterwards.
		pick := shown[0]
		w.run("choose", press(`article.offer button[data-act="choose"]`), waitText("#status", "Chose "+pick))
		deadline := time.Now().Add(30 * time.Second)
		var chosen *mrp.Entry
		for chosen == nil {
			v := w.status("goodwill").View.(workflow.View)
			if k := slices.IndexFunc(v.Journey, func(e mrp.Entry) bool { return e.Trigger == mrp.ChooseOption }); k >= 0 {
				chosen = &v.Journey[k]
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the choice never reached the journey: %+v", v.Journey)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if chosen.ActorID != "finance-lead" || chosen.Row != "H03" || chosen.From != mrp.Options || chosen.To != mrp.Decide || !strings.Contains(chosen.Cause, pick) {
			t.Fatalf("the choice was recorded as %+v", *chosen)
		}
		// Wait until the page shows at least the chosen step, then compare.
		w.run("strip after the choice", waitText("#strip-text", "OPTIONS → DECIDE"),
			waitText("#journey details table", "CHOOSE_OPTION"))
		w.checkStrip("goodwill")
		w.shot("8-chosen")
		// The chosen path settles the contest: the refund is decided again,
		// paid once, and the run ends.
		deadline = time.Now().Add(30 * time.Second)
		for w.status("goodwill").Run.State != "SUCCEEDED" {
			if time.Now().After(deadline) {
				t.Fatalf("the chosen refund did not complete: %s", w.status("goodwill").Run.State)
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.run("settled", waitText("#run-state", "SUCCEEDED"))

		// A person steers another goodwill case left in OPTIONS. A pause:
		// HOLD, recorded under their name.
		w.start("goodwill-steered", 30, "dave", "goodwill")
		w.run("see the second contest", w.page("#/run/goodwill-steered"), waitText("#mrp-state", "OPTIONS"))
		w.run("pause", chromedp.WaitVisible(chromedp.CSS(`details.mrp-controls summary`)), chromedp.Click(chromedp.CSS(`details.mrp-controls summary`)),
			chromedp.WaitVisible(chromedp.CSS(`details.mrp-controls button[data-trigger="pause"]`)),
			press(`details.mrp-controls button[data-trigger="pause"]`), waitText("#status", "Asked for pause"))
		deadline = time.Now().Add(30 * time.Second)
		for {
			v := w.status("goodwill-steered").View.(workflow.View)
			k := slices.IndexFunc(v.Journey, func(e mrp.Entry) bool { return e.Trigger == mrp.Pause })
			if k >= 0 {
				if e := v.Journey[k]; e.ActorID != "finance-lead" || e.To != mrp.Hold || e.Rejected != "" {
					t.Fatalf("the pause was recorded as %+v", e)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pause never reached the journey: %+v", v.Journey)
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.checkStrip("goodwill-steered")

		// ESCALATE and EXIT are drawn as HOLD and DECIDE on the strip, and
		// named in an alarm beside it.
		steer := func(trigger, state, alarm string) {
			w.t.Helper()
			w.run(trigger, chromedp.WaitVisible(chromedp.CSS(`details.mrp-controls button[data-trigger="`+trigger+`"]`)),
				press(`details.mrp-controls button[data-trigger="`+trigger+`"]`),
				waitText("#mrp-state", state), waitText("#mrp-alarm", alarm))
			w.checkStrip("goodwill-steered")
		}
		steer("escalate", "ESCALATE", "ESCALATE: handed to a person")
		strip := w.stripCells()
		if strip[len(strip)-1] != "HOLD" {
			t.Fatalf("ESCALATE drawn as %s", strip[len(strip)-1])
		}
		w.shot("8-escalated")
		// The options were kept through the pause and the escalation, so a
		// person's resume goes back to choosing among them (row H11).
		w.run("resume", press(`details.mrp-controls button[data-trigger="resume"]`), waitText("#mrp-state", "OPTIONS"),
			chromedp.WaitNotPresent(chromedp.CSS("#mrp-alarm")))
		w.checkStrip("goodwill-steered")
		steer("exit", "EXIT", "EXIT: the turn closed")
		if strip := w.stripCells(); strip[len(strip)-1] != "DECIDE" {
			t.Fatalf("EXIT drawn as %s", strip[len(strip)-1])
		}
	})

	t.Run("strip alarms", func(t *testing.T) {
		w.t = t
		// FAILSAFE and Degraded Safe Mode come from the runtime only (a
		// tier-0 signal, a tripwire); the page's own drawing of them is
		// checked with a view as the server would send it.
		got := value(w, "draw", chromedp.Evaluate[map[string]string](`import('/ui/js/widgets.js').then((m) => {
  const el = m.journeyStrip({mrp_state: 'FAILSAFE', strip: ['HOLD', 'TEST', 'HOLD'], safe_mode: true, safe_mode_cause: 'tripwire'});
  const lit = [...el.querySelectorAll('#strip td.on')].sort((a, b) => a.dataset.step - b.dataset.step).map((td) => td.dataset.state).join(',');
  return {lit, now: el.querySelector('#mrp-state').dataset.state, alarm: el.querySelector('#mrp-alarm').textContent, safe: el.querySelector('#safe-mode').textContent};
})`, chromedp.EvalAwaitPromise))
		if got["lit"] != "HOLD,TEST,HOLD" || got["now"] != "HOLD" || !strings.HasPrefix(got["alarm"], "FAILSAFE") ||
			!strings.Contains(got["safe"], "Degraded Safe Mode") || !strings.Contains(got["safe"], "tripwire") {
			t.Fatalf("FAILSAFE in safe mode drawn as %v", got)
		}
	})

	t.Run("panel card", func(t *testing.T) {
		w.t = t
		// A request naming a panel: the card says whom it still waits
		// for; one that names none says nothing of it. Drawn from a need
		// as the server sends it.
		got := value(w, "card", chromedp.Evaluate[map[string]string](`import('/ui/js/widgets.js').then((m) => {
  const field = (el, name) => { const dt = [...el.querySelectorAll('dt')].find((d) => d.textContent === name); return dt ? dt.nextElementSibling.textContent : '(none)'; };
  const need = {request_id: 'approval-request:p', request_digest: 'sha256:p', intent_id: 'intent:p', preview: 'pay', quorum: 2, approved_by: ['carol']};
  const panel = m.approvalCard('r', {...need, awaiting: 'a member of legal'}, null, [], null);
  const plain = m.approvalCard('r', need, null, [], null);
  return {still: field(panel, 'Still to approve'), so: field(panel, 'Approved so far'), plain: field(plain, 'Still to approve')};
})`, chromedp.EvalAwaitPromise))
		if got["still"] != "a member of legal" || got["so"] != "carol (1 of 2)" || got["plain"] != "(none)" {
			t.Fatalf("a panel's approval card: %v", got)
		}
	})

	t.Run("held", func(t *testing.T) {
		w.t = t
		// An unexplained restart is escalated and kept: the run page says
		// so while the run lives, and says nothing of deciding it again
		// once the run has ended (a cancel ends it; nothing is decided).
		in := map[string]any{"type": "restart.requested/1", "payload": map[string]any{"restart_id": "rst-ui", "service": "api", "target": "dest:ops-api", "reason": "unknown"}}
		if code, out := w.api("POST", "/v1/runs", tokLead, map[string]any{"workflow": "ops-agent", "run_id": "held-restart", "input": in}); code != 201 {
			t.Fatalf("start: %d %v", code, out)
		}
		w.run("kept", w.page("#/run/held-restart"), waitText("#run-state", "INGEST"),
			chromedp.WaitVisible(chromedp.CSS(`#acts article.held`)))
		card := value(w, "card", chromedp.TextContent(chromedp.CSS(`#acts article.held`)))
		pid := value(w, "proposal", chromedp.AttributeValue(chromedp.CSS(`#acts article.held`), "data-proposal")).Value
		held := w.status("held-restart").View
		if !strings.HasPrefix(card, "Escalated proposal") || !strings.Contains(fmt.Sprint(held), pid) {
			t.Fatalf("held card %q for %q; the run keeps %v", card, pid, held)
		}
		if code, out := w.api("POST", "/v1/runs/held-restart/cancel", tokLead, map[string]any{"reason": "not today"}); code != 202 {
			t.Fatalf("cancel: %d %v", code, out)
		}
		w.run("ended", waitText("#run-state", "CANCELED"), chromedp.WaitNotPresent(chromedp.CSS(`#acts article.held`)))
		if len(w.sb.Mutations()) != 0 && strings.Contains(string(w.sb.Mutations()[len(w.sb.Mutations())-1].Body), "rst-ui") {
			t.Fatal("the kept restart ran")
		}
	})

	t.Run("offers on an ended run", func(t *testing.T) {
		w.t = t
		// A contest opens options; canceled before anyone chooses, the
		// run's page offers no choice any more.
		w.start("goodwill-canceled", 30, "erin", "goodwill")
		w.run("options", w.page("#/run/goodwill-canceled"), waitText("#mrp-state", "OPTIONS"),
			chromedp.WaitVisible(chromedp.CSS(`#acts article.offer`)))
		if code, out := w.api("POST", "/v1/runs/goodwill-canceled/cancel", tokLead, map[string]any{"reason": "customer withdrew"}); code != 202 {
			t.Fatalf("cancel: %d %v", code, out)
		}
		w.run("ended", waitText("#run-state", "CANCELED"), chromedp.WaitNotPresent(chromedp.CSS(`#acts article.offer`)))
	})

	t.Run("why", func(t *testing.T) {
		w.t = t
		// A refund to a blocked payee is refused; the page explains why
		// from the proofs the server re-derives.
		w.start("blocked-payee", 20, "mallory", "damaged item")
		var proposal string
		deadline := time.Now().Add(30 * time.Second)
		for proposal == "" {
			_, out := w.api("GET", "/v1/runs/blocked-payee/tickets", tokLead, nil)
			if tks, _ := out["tickets"].([]any); len(tks) > 0 {
				proposal, _ = tks[0].(map[string]any)["proposal_id"].(string)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no ticket for the blocked refund: %v", out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		code, want := w.api("GET", "/v1/runs/blocked-payee/why?proposal="+proposal, tokLead, nil)
		decisions, _ := want["decisions"].([]any)
		if code != 200 || len(decisions) == 0 {
			t.Fatalf("why: %d %v", code, want)
		}
		var outcomes []string
		for _, d := range decisions {
			outcomes = append(outcomes, d.(map[string]any)["outcome"].(string))
		}
		w.run("explain", w.page("#/run/blocked-payee"), chromedp.WaitReady(chromedp.CSS(`#why-proposal option[value="`+proposal+`"]`)),
			chromedp.SetValue(chromedp.CSS("#why-proposal"), proposal),
			chromedp.Click(chromedp.CSS(`#why button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#why-decisions article`)))
		shown := value(w, "outcomes", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#why-decisions article')].map(a=>a.dataset.outcome)`))
		if !slices.Equal(shown, outcomes) {
			t.Fatalf("the page explains outcomes %v; the server gives %v", shown, outcomes)
		}
		text := value(w, "why text", chromedp.TextContent(chromedp.CSS("#why-decisions")))
		if !strings.Contains(text, "mallory") || !strings.Contains(text, "payee:not-blocked") {
			t.Fatalf("the explanation does not name the blocked payee's precondition: %q", text)
		}
		unmet := value(w, "unmet", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#why-decisions [data-met="not met"]')].map(e=>e.dataset.precondition)`))
		if !slices.Equal(unmet, []string{"payee:not-blocked"}) {
			t.Fatalf("preconditions shown as not met: %v", unmet)
		}
		w.checkA11y("why")
		// The run as a policy test case: the server's answer, offered to
		// save under the run's name.
		w.run("case", chromedp.Click(chromedp.CSS("#case-make")), chromedp.WaitVisible(chromedp.CSS("#case-json")))
		caseText := value(w, "case", chromedp.TextContent(chromedp.CSS("#case-json")))
		if !strings.Contains(caseText, `"run": "blocked-payee"`) || !strings.Contains(caseText, `"payee": "mallory"`) {
			t.Fatalf("the case shown: %q", caseText)
		}
		if file := value(w, "case file", chromedp.Evaluate[string](`document.querySelector('#case-download').getAttribute('download')`)); file != "blocked-payee.test.json" {
			t.Fatalf("the case is offered as %q", file)
		}
		w.checkA11y("case")
		w.run("scroll", chromedp.ScrollIntoView(chromedp.CSS("#why")))
		w.shot("9-why-refused")
		w.fullShot("9-why-refused-full")
	})

	t.Run("scorecard", func(t *testing.T) {
		w.t = t
		// The support example's controller scores the two options; the
		// page shows each candidate's core and augmentations apart, with
		// the numbers the server recorded.
		w.startIn("support-agent", "scored", 60, "carol", "goodwill")
		w.run("scored", w.page("#/run/scored"), waitText("#mrp-state", "OPTIONS"),
			chromedp.WaitVisible(chromedp.CSS(`#scorecards article.scorecard`)))
		_, out := w.api("GET", "/v1/runs/scored/scorecard", tokLead, nil)
		cards, _ := out["scorecards"].([]any)
		if len(cards) != 1 {
			t.Fatalf("scorecards: %v", out)
		}
		sc := cards[0].(map[string]any)["scorecard"].(map[string]any)
		scale := sc["scale"].(float64)
		dec := func(v any) string { return fmt.Sprintf("%.4f", v.(float64)/scale) }
		cands := sc["candidates"].([]any)
		if nothing, ok := sc["do_nothing"].(map[string]any); ok && nothing["id"] != "" {
			cands = append(cands, nothing)
		}
		type row struct{ Core, Aug []string }
		shown := value(w, "scorecard rows", chromedp.Evaluate[map[string]row](`(() => {
  const out = {};
  const cells = (tr) => [...tr.querySelectorAll('td')].map(td => td.textContent);
  for (const tr of document.querySelectorAll('#scorecards [data-part="core"] tbody tr')) out[tr.dataset.candidate] = { Core: cells(tr), Aug: [] };
  for (const tr of document.querySelectorAll('#scorecards [data-part="augmentation"] tbody tr')) out[tr.dataset.candidate].Aug = cells(tr);
  return out;
})()`))
		if len(shown) != len(cands) {
			t.Fatalf("the page shows %d candidates, the scorecard has %d: %v", len(shown), len(cands), shown)
		}
		for _, c := range cands {
			c := c.(map[string]any)
			core := c["core"].(map[string]any)
			r, ok := shown[c["id"].(string)]
			want := []string{dec(core["risk"]), dec(core["ambiguity"]), dec(core["efe"])}
			if !ok || !slices.Equal(r.Core, want) {
				t.Fatalf("candidate %s: core shown %v, recorded %v", c["id"], r.Core, want)
			}
			if n := len(r.Aug); n < 2 || r.Aug[n-2] != dec(c["total"]) || r.Aug[n-1] != dec(c["probability"]) {
				t.Fatalf("candidate %s: augmentation row %v, total %s probability %s", c["id"], r.Aug, dec(c["total"]), dec(c["probability"]))
			}
		}
		w.checkA11y("scorecard")
		w.run("scroll", chromedp.ScrollIntoView(chromedp.CSS("#scorecards")))
		w.shot("10-scorecard")
		w.fullShot("10-scorecard-full")
	})

	t.Run("runs list and loopback", func(t *testing.T) {
		w.t = t
		// Without tokens, a loopback browser acts as local and sees the runs.
		w.run("list", chromedp.Navigate(w.open.URL+"/ui/#/runs"), waitText("#whoami", "local"),
			chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="big-refund"]`)))
		ids := value(w, "rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr[data-run]')].map(r=>r.dataset.run)`))
		for _, id := range []string{"big-refund", "denied-refund", "lost-answer", "goodwill", "blocked-payee", "scored"} {
			if !slices.Contains(ids, id) {
				t.Fatalf("runs list %v lacks %s", ids, id)
			}
		}
		w.checkA11y("runs list")
		// The list follows the store: a run started elsewhere appears
		// without a reload.
		w.start("appears-live", 10, "gina", "damaged item")
		w.run("live row", chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="appears-live"]`)))
		// The checker is not vacuous: planted faults are found, then removed.
		planted := value(w, "plant faults", chromedp.Evaluate[[]string](`(() => {
  const m = document.querySelector('main');
  const a = document.createElement('span'); a.id = 'planted-grey'; a.textContent = 'faint text'; a.className = 'planted';
  const b = document.createElement('input'); b.id = 'planted-input'; b.className = 'planted';
  const c = document.createElement('button'); c.className = 'planted';
  m.append(a, b, c);
  a.style.color = '#aaaaaa';
  const r = `+a11yScript+`;
  for (const e of document.querySelectorAll('.planted')) e.remove();
  return r;
})()`))
		if !slices.ContainsFunc(planted, func(s string) bool { return strings.HasPrefix(s, "unlabelled input#planted-input") }) ||
			!slices.ContainsFunc(planted, func(s string) bool { return strings.HasPrefix(s, "nameless button") }) ||
			!slices.ContainsFunc(planted, func(s string) bool { return strings.HasPrefix(s, "contrast 2.3") && strings.Contains(s, "faint text") }) {
			t.Fatalf("the accessibility check missed planted faults: %v", planted)
		}
		w.shot("11-runs")
		w.run("filter", chromedp.SetValue(chromedp.CSS("#f-state"), "SUCCEEDED"), chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`#runs tr[data-run="denied-refund"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="lost-answer"]`)))
	})

	t.Run("labels", func(t *testing.T) {
		w.t = t
		// A run started from the form with labels shows them; a label
		// lists the runs bearing it; a filter by labels no run bears
		// lists none.
		input := `{"type":"refund.requested/1","payload":{"refund_id":"r-labelled-ui","amount":12,"payee":"hal","reason":"damaged item"}}`
		w.start("other-team", 11, "ida", "damaged item")
		w.run("start with labels", chromedp.Navigate(w.open.URL+"/ui/#/runs"), chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="other-team"]`)),
			chromedp.Click(chromedp.CSS("details.start summary")),
			chromedp.SetValue(chromedp.CSS("#s-workflow"), `["refund-agent","1"]`),
			chromedp.SetValue(chromedp.CSS("#s-id"), "labelled-ui"),
			chromedp.SetValue(chromedp.CSS("#s-input"), input),
			chromedp.SetValue(chromedp.CSS("#s-labels"), "order=A-77, note=damaged, boxed, team=payments"),
			chromedp.Click(chromedp.CSS(`details.start button[type="submit"]`)),
			waitText("#run-labels", "note=damaged, boxed"))
		shown := value(w, "labels shown", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#run-labels a.label')].map(a=>a.dataset.label)`))
		if !slices.Equal(shown, []string{"note=damaged, boxed", "order=A-77", "team=payments"}) {
			t.Fatalf("the run page shows labels %v", shown)
		}
		w.checkA11y("run page with labels")
		w.run("follow a label", chromedp.Click(chromedp.CSS(`#run-labels a.label[data-label="team=payments"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="labelled-ui"]`)))
		rows := func() []string {
			return value(w, "rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr[data-run]')].map(r=>r.dataset.run)`))
		}
		if got := rows(); !slices.Equal(got, []string{"labelled-ui"}) {
			t.Fatalf("the runs labelled team=payments: %v", got)
		}
		if v := value(w, "filter", chromedp.Evaluate[string](`document.querySelector('#f-labels').value`)); v != "team=payments" {
			t.Fatalf("the labels filter reads %q", v)
		}
		w.checkA11y("runs list by label")
		w.shot("11b-runs-by-label")
		w.run("no run bears it", chromedp.SetValue(chromedp.CSS("#f-labels"), "team=payments, order=A-78"),
			chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)), waitText("#runs tbody", "No runs match."))
		w.run("cleared", chromedp.Click(chromedp.CSS(`form.filters button[type="button"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#runs tr[data-run="other-team"]`)))
		if got, err := w.st.Run(context.Background(), "labelled-ui"); err != nil || len(got.Labels) != 3 || got.Labels["note"] != "damaged, boxed" {
			t.Fatalf("the store holds %v, %v", got.Labels, err)
		}
		// An approval waiting in the inbox says its run's labels.
		big := map[string]any{"type": "refund.requested/1", "payload": map[string]any{"refund_id": "r-labelled-big", "amount": 700, "payee": "ivy", "reason": "wrong size"}}
		if code, out := w.api("POST", "/v1/runs", tokLead, map[string]any{"workflow": "refund-agent", "run_id": "labelled-big", "input": big,
			"labels": map[string]string{"order": "A-99", "team": "payments"}}); code != 201 {
			t.Fatalf("start labelled-big: %d %v", code, out)
		}
		w.run("inbox", chromedp.Navigate(w.open.URL+"/ui/#/inbox"),
			waitText(`article.approval[data-run="labelled-big"]`, "order=A-99, team=payments"))
	})

	t.Run("paging and roles", func(t *testing.T) {
		w.t = t
		// Two runs to a page: the pages partition the list in order.
		all := value(w, "all rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr[data-run]')].map(r=>r.dataset.run)`))
		w.run("page 1", chromedp.Navigate(w.open.URL+"/ui/#/runs?limit=2"), waitText("#runs + .pager", "page 1, 2 runs"))
		rows := func() []string {
			return value(w, "rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr[data-run]')].map(r=>r.dataset.run)`))
		}
		first := rows()
		w.run("page 2", chromedp.Click(chromedp.CSS(`.pager button:nth-of-type(2)`)), waitText("#runs + .pager", "page 2"))
		second := rows()
		w.run("back", chromedp.Click(chromedp.CSS(`.pager button:nth-of-type(1)`)), waitText("#runs + .pager", "page 1"))
		again := rows()
		runs, err := w.st.Runs(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if len(ids) < 4 || !slices.Equal(first, ids[:2]) || !slices.Equal(second, ids[2:4]) || !slices.Equal(again, first) {
			t.Fatalf("pages %v, %v, back %v; the store lists %v (unfiltered page showed %v)", first, second, again, ids, all)
		}

		// A viewer sees a waiting approval but cannot act on it: the
		// buttons are disabled and say which role they need.
		w.start("viewer-sees", 700, "frank", "wrong size")
		w.run("viewer", w.page("#/runs"), chromedp.Click(chromedp.CSS("#token-clear")), waitText("#whoami", "token needed"),
			chromedp.SendKeys(chromedp.CSS("#token-input"), tokViewer), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
			waitText("#whoami", "vera (viewer)"),
			chromedp.Navigate(w.ts.URL+"/ui/#/inbox"),
			chromedp.WaitVisible(chromedp.CSS(`article.approval[data-run="viewer-sees"]`)))
		disabled := value(w, "disabled", chromedp.Evaluate[[]string](`[...document.querySelectorAll('article.approval[data-run="viewer-sees"] button')].filter(b=>b.disabled).map(b=>b.dataset.act+': '+b.title)`))
		if !slices.Equal(disabled, []string{"approve: needs the approver role", "deny: needs the approver role"}) {
			t.Fatalf("a viewer's buttons: %v", disabled)
		}
		if st := value(w, "status line", chromedp.TextContent(chromedp.CSS("#status"))); st != "" {
			t.Fatalf("the status line says %q after signing in as a viewer", st)
		}
		w.checkA11y("inbox as a viewer")
		w.shot("12-inbox-viewer")

		// A token scoped to the operations workflow, held to a rate: the
		// header says both;
		// the inbox shows none of the refunds waiting, the runs list the
		// operations runs alone.
		w.run("scoped", chromedp.Click(chromedp.CSS("#token-clear")), waitText("#whoami", "token needed"),
			chromedp.SendKeys(chromedp.CSS("#token-input"), tokOps), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
			waitText("#whoami", "otto (approver, viewer) · ops-agent · 600/m"),
			chromedp.Navigate(w.ts.URL+"/ui/#/inbox"), waitText("#inbox-info", "Nothing is waiting for approval."),
			chromedp.Navigate(w.ts.URL+"/ui/#/runs"), waitText("#runs", "ops-agent@1"))
		if n := value(w, "approvals shown", chromedp.Evaluate[int](`document.querySelectorAll('article.approval').length`)); n != 0 {
			t.Fatalf("a token scoped to another workflow is shown %d approvals", n)
		}
		if shown := value(w, "workflows listed", chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll('#runs tbody tr')].map(r=>r.cells[1].textContent))]`)); !slices.Equal(shown, []string{"ops-agent@1"}) {
			t.Fatalf("the runs a token scoped to ops-agent is shown: %v", shown)
		}
	})

	w.t = t
	w.noPageErrors(t)
	t.Logf("browser tests took %s", time.Since(began).Round(time.Millisecond))
}
