package webui_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"flrh.dev/flrh/store"
)

// commitClock records when each event of each run was committed, read
// right after the store's Commit returns.
type commitClock struct {
	store.Store
	mu sync.Mutex
	at map[string]map[int64]time.Time
}

func (c *commitClock) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	err := c.Store.Commit(ctx, lease, tick)
	if err == nil && len(tick.Events) > 0 {
		now := time.Now()
		c.mu.Lock()
		if c.at[lease.RunID] == nil {
			c.at[lease.RunID] = map[int64]time.Time{}
		}
		for i := range tick.Events {
			c.at[lease.RunID][tick.ExpectHead+int64(i)+1] = now
		}
		c.mu.Unlock()
	}
	return err
}

func (c *commitClock) committed(runID string, seq int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[runID][seq]
	return t, ok
}

// observeTimeline makes the page note, for every event that lands in the
// timeline, the wall-clock time (in fractional Unix milliseconds) at which
// it was inserted into the DOM.
const observeTimeline = `(() => {
  window.__landed = {};
  const note = (li) => { if (li.dataset && li.dataset.seq && !(li.dataset.seq in window.__landed)) window.__landed[li.dataset.seq] = performance.timeOrigin + performance.now(); };
  const tl = document.getElementById('timeline');
  for (const li of tl.children) note(li);
  new MutationObserver((ms) => { for (const m of ms) for (const n of m.addedNodes) note(n); }).observe(tl, { childList: true });
  return true;
})()`

// BenchmarkCommitToScreen measures how long a committed event takes to
// appear on a run page open in the browser: the runner commits, the event
// stream pushes it, the page parses it and inserts it into the timeline.
// Each iteration is one person's act (a pause of a run in OPTIONS) and
// its events; the metrics are over every event. It needs a browser.
//
//	go test -run '^$' -bench CommitToScreen -benchtime 40x ./server/webui/
func BenchmarkCommitToScreen(b *testing.B) {
	clock := &commitClock{at: map[string]map[int64]time.Time{}}
	w := newWorldWith(b, func(st store.Store) store.Store { clock.Store = st; return clock })
	w.run("sign in", chromedp.Navigate(w.ts.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), tokLead), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		waitText("#whoami", "finance-lead"))
	w.start("latency", 30, "erin", "goodwill")
	w.run("open the run", w.page("#/run/latency"), waitText("#mrp-state", "OPTIONS"), waitText("#live", "live"))
	value(w, "observe", chromedp.Evaluate[bool](observeTimeline))

	var lat []float64 // milliseconds, one per event
	run, err := w.st.Run(context.Background(), "latency")
	if err != nil {
		b.Fatal(err)
	}
	measured := run.Head // events before the first act are not timed
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		before := measured
		if code, out := w.api("POST", "/v1/runs/latency/mrp", tokLead, map[string]any{"trigger": "pause"}); code != 202 {
			b.Fatalf("pause: %d %v", code, out)
		}
		// Wait until the run has committed the act and the page shows it.
		deadline := time.Now().Add(10 * time.Second)
		var landed map[string]float64
		for {
			run, err = w.st.Run(context.Background(), "latency")
			if err != nil {
				b.Fatal(err)
			}
			landed = value(w, "landed", chromedp.Evaluate[map[string]float64](`window.__landed`))
			if run.Head > before && len(landed) >= int(run.Head) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the page showed %d of %d events", len(landed), run.Head)
			}
			time.Sleep(5 * time.Millisecond)
		}
		for seq := before + 1; seq <= run.Head; seq++ {
			at, ok := clock.committed("latency", seq)
			shown, seen := landed[itoa(seq)]
			if !ok || !seen {
				b.Fatalf("event %d: committed %v, shown %v", seq, ok, seen)
			}
			lat = append(lat, shown-float64(at.UnixNano())/1e6)
		}
		measured = run.Head
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(q(0.5), "ms-p50")
	b.ReportMetric(q(0.99), "ms-p99")
	b.ReportMetric(lat[len(lat)-1], "ms-max")
	b.ReportMetric(float64(len(lat))/float64(b.N), "events/op")
}

func itoa(n int64) string {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(buf[i:])
		}
	}
}
