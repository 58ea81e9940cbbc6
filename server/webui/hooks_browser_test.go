package webui_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"flrh.dev/flrh/server"
	"flrh.dev/flrh/webhook"
)

// The webhooks page: a note for a run not yet started and one the
// webhook cannot read are parked; an operator sees both, takes the first
// again once its run has started (an input to it, then gone from the
// page), has the second refused again (it stays, counted), drops it; a
// viewer sees the buttons disabled.
func TestBrowserParkedDeliveries(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	secret := []byte("the-tracker's-secret-0123456789")
	if err := os.WriteFile(filepath.Join(dir, "notes.secret"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := server.ParseWebhooks([]byte(`{"webhooks": [{"name": "notes", "scheme": "github", "secret_file": "notes.secret",
  "workflow": "refund-agent", "start": false, "run_id": "{/run}",
  "input": {"type": "refund.requested/1", "payload": {"refund_id": "{/refund}", "amount": 20, "payee": "erin", "reason": "a note"}}},
 {"name": "orders", "scheme": "github", "secret_file": "notes.secret", "workflow": "refund-agent",
  "input": {"type": "refund.requested/1", "payload": {"refund_id": "{/refund}", "amount": 20, "payee": "erin", "reason": "an order"}}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := server.LoadWebhooks(specs, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := w.serveWith(server.Config{Webhooks: hooks})
	deliver := func(id, body string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/v1/hooks/notes", strings.NewReader(body))
		for k, v := range webhook.Sign(webhook.GitHub, secret, webhook.Delivery{ID: id, Event: "issues"}, []byte(body)) {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := deliver("gh-1", `{"run":"hooked-1","refund":"r-h1"}`); s != 404 {
		t.Fatalf("a note for a run not started: %d", s)
	}
	if s := deliver("gh-2", `{"run":"hooked-1"}`); s != 422 {
		t.Fatalf("a note without its refund: %d", s)
	}

	row := func(id string) string { return `section[data-hook="notes"] tr[data-delivery="` + id + `"]` }
	w.run("the webhooks page", chromedp.Navigate(ts.URL+"/ui/#/hooks"),
		chromedp.SendKeys(chromedp.CSS("#token-input"), tokLead), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		waitText("#whoami", "finance-lead"),
		chromedp.WaitVisible(chromedp.CSS(row("gh-1"))), chromedp.WaitVisible(chromedp.CSS(row("gh-2"))),
		waitText(row("gh-1"), "404"), waitText(row("gh-2"), "422"), waitText(row("gh-2"), "{/refund}"),
		waitText(`section[data-hook="notes"]`, "github · to refund-agent · feeds runs already started"),
		waitText(`section[data-hook="orders"]`, "starts runs · every event · the runs it started"))
	// A webhook that starts runs links them, by the label each bears; one
	// that feeds runs started elsewhere links none.
	links := value(w, "links", chromedp.Evaluate[[]string](`[...document.querySelectorAll('section.hook a.runs-of')].map(a=>a.closest('section').dataset.hook+' '+a.getAttribute('href'))`))
	if !slices.Equal(links, []string{"orders #/runs?label=flrh.webhook%3Dorders"}) {
		t.Fatalf("the webhooks' links to their runs: %v", links)
	}
	w.checkA11y("webhooks")
	w.shot("13-webhooks")

	// The run started: the note taken again is its input, and leaves the
	// page.
	w.start("hooked-1", 900, "bob", "cancelled order")
	w.run("take again", press(row("gh-1")+` button[data-act="redeliver"]`), waitText("#status", "Took gh-1 of notes again: an input to run hooked-1."),
		chromedp.WaitNotPresent(chromedp.CSS(row("gh-1"))))
	in, err := w.st.Inbox(context.Background(), "hooked-1", false)
	if err != nil || len(in) != 2 || in[1].Actor != "hook:notes" || !strings.Contains(string(in[1].Body), `"r-h1"`) {
		t.Fatalf("hooked-1's inbox: %+v, %v", in, err)
	}
	// The other is refused again: it stays, counted twice; then dropped.
	w.run("refused again", press(row("gh-2")+` button[data-act="redeliver"]`), waitText("#status", "gh-2 of notes was refused again, and stays parked"),
		waitText(row("gh-2")+" td:nth-child(3)", "2"))
	w.run("drop", press(row("gh-2")+` button[data-act="drop"]`), waitText("#status", "Dropped gh-2 of notes."),
		chromedp.WaitNotPresent(chromedp.CSS(row("gh-2"))), waitText(`section[data-hook="notes"]`, "Nothing parked."))

	// A viewer may not see parked deliveries at all: the page says so.
	if s := deliver("gh-3", `{"run":"hooked-2","refund":"r-h3"}`); s != 404 {
		t.Fatalf("a third note: %d", s)
	}
	w.run("viewer", chromedp.Click(chromedp.CSS("#token-clear")), chromedp.SendKeys(chromedp.CSS("#token-input"), tokViewer),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)), waitText("#whoami", "vera (viewer)"),
		waitText("#status", "403"))
	if n := value(w, "rows a viewer sees", chromedp.Evaluate[int](`document.querySelectorAll('section.hook tr[data-delivery]').length`)); n != 0 {
		t.Fatalf("a viewer sees %d parked deliveries", n)
	}

	w.noPageErrors(t)
}
