package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/webhook"
)

const parkingHooks = `{"webhooks": [
 {"name": "shop", "scheme": "github", "secret_file": "tracker.secret", "workflow": "refund-agent", "run_id": "order-{/order}",
  "input": {"refunds": [{"id": "{/refund}", "amount": "{/amount}", "payee": "{/customer}", "reason": "{$event}"}]}},
 {"name": "notes", "scheme": "github", "secret_file": "tracker.secret", "workflow": "refund-agent", "start": false, "run_id": "{/run}",
  "input": {"refunds": [{"id": "{/refund}", "amount": 20, "payee": "erin", "reason": "note"}]}},
 {"name": "quiet", "scheme": "github", "secret_file": "tracker.secret", "workflow": "refund-agent", "keep_refused": 0, "run_id": "{/run}"},
 {"name": "small", "scheme": "github", "secret_file": "tracker.secret", "workflow": "refund-agent", "keep_refused": 2, "run_id": "{/run}"}
]}`

// Deliveries verified but not taken are parked, listed for operators,
// taken again once their cause is mended (still once), or dropped.
func TestParkedDeliveries(t *testing.T) {
	f := hooksFixture(t, parkingHooks, nil)
	send := func(hook, id, body string) answer {
		t.Helper()
		return f.deliver(hook, webhook.Sign(webhook.GitHub, trackerSecret, webhook.Delivery{ID: id, Event: "refund"}, []byte(body)), []byte(body))
	}
	type parkedList struct {
		Webhook string           `json:"webhook"`
		Parked  []ParkedDelivery `json:"parked"`
	}
	list := func(hook string) parkedList {
		t.Helper()
		a := f.get("/v1/hooks/"+hook+"/parked", tokOperator)
		var l parkedList
		if a.status != 200 || json.Unmarshal(a.body, &l) != nil {
			t.Fatalf("list %s: %d %s", hook, a.status, a.body)
		}
		return l
	}
	want := func(what string, a answer, status int, words string) {
		t.Helper()
		if a.status != status || !strings.Contains(string(a.body), words) {
			t.Fatalf("%s: %d %s; want %d saying %q", what, a.status, a.body, status, words)
		}
	}

	// The webhooks, for operators: no key among what is said of them.
	all := f.get("/v1/hooks", tokOperator)
	var listed struct{ Webhooks []HookInfo }
	if all.status != 200 || json.Unmarshal(all.body, &listed) != nil || len(listed.Webhooks) != 4 ||
		listed.Webhooks[1].Name != "notes" || listed.Webhooks[1].Start || listed.Webhooks[1].KeepRefused != DefaultKeepRefused ||
		listed.Webhooks[2].KeepRefused != 0 || listed.Webhooks[3].KeepRefused != 2 || strings.Contains(string(all.body), string(trackerSecret)) {
		t.Fatalf("GET /v1/hooks: %d %s", all.status, all.body)
	}
	want("the webhooks to a viewer", f.get("/v1/hooks", tokViewer), 403, "")

	// A refund without its amount (422), twice; a note for a run not yet
	// started (404).
	noAmount := `{"order":"o7","refund":"r-7","customer":"fay","total":30}`
	want("no amount", send("shop", "gh-1", noAmount), 422, "the body has nothing at {/amount}")
	want("no amount again", send("shop", "gh-1", noAmount), 422, "")
	note := `{"run":"later-1","refund":"r-n1"}`
	want("a note before its run", send("notes", "gh-2", note), 404, "later-1")

	shop := list("shop")
	if len(shop.Parked) != 1 {
		t.Fatalf("shop parks %+v", shop)
	}
	p := shop.Parked[0]
	if p.Delivery != "gh-1" || p.Event != "refund" || p.Status != 422 || p.Times != 2 || !strings.Contains(p.Reason, "{/amount}") ||
		string(p.Body) != `{"customer":"fay","order":"o7","refund":"r-7","total":30}` || p.First.After(p.Last) || time.Since(p.Last) > time.Minute {
		t.Fatalf("parked: %+v (%s)", p, p.Body)
	}
	if notes := list("notes"); len(notes.Parked) != 1 || notes.Parked[0].Status != 404 {
		t.Fatalf("notes parks %+v", notes)
	}
	for _, tok := range []string{tokViewer, tokAgent, tokApprover} {
		want("a list not an operator's", f.get("/v1/hooks/shop/parked", tok), 403, "")
	}
	want("a list of no webhook", f.get("/v1/hooks/nobody/parked", tokOperator), 404, "no webhook nobody")
	want("a list with an unknown parameter", f.get("/v1/hooks/shop/parked?after=x", tokOperator), 400, "after")

	// Taken again before its run exists: refused again, counted.
	want("redelivered too soon", f.post("/v1/hooks/notes/parked/gh-2/redeliver", tokOperator, ""), 404, "later-1")
	if notes := list("notes"); len(notes.Parked) != 1 || notes.Parked[0].Times != 2 {
		t.Fatalf("notes after a refused redelivery: %+v", notes)
	}
	// The run started, the note is taken again: an input, once.
	want("the run", f.post("/v1/runs", tokOperator, startBody("later-1", largeRefund)), 201, "")
	want("redelivered", f.post("/v1/hooks/notes/parked/gh-2/redeliver", tokOperator, ""), 202, `"redelivered":true`)
	if notes := list("notes"); len(notes.Parked) != 0 {
		t.Fatalf("notes after the redelivery: %+v", notes)
	}
	want("redelivered twice", f.post("/v1/hooks/notes/parked/gh-2/redeliver", tokOperator, ""), 404, "gh-2")
	want("the sender sends it again", send("notes", "gh-2", note), 200, `"again":true`)
	in, err := f.store.Inbox(context.Background(), "later-1", false)
	if err != nil || len(in) != 2 || in[1].Actor != "hook:notes" || !strings.Contains(string(in[1].Body), `"r-n1"`) {
		t.Fatalf("later-1's inbox: %+v, %v", in, err)
	}

	// The shop's template mended (the amount is the body's total): the
	// parked refund is taken again and starts its run.
	mended := strings.Replace(parkingHooks, `"amount": "{/amount}"`, `"amount": "{/total}"`, 1)
	specs, err := ParseWebhooks([]byte(mended), false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeSecret(t, dir)
	hooks, err := LoadWebhooks(specs, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.server.SetWebhooks(hooks); err != nil {
		t.Fatal(err)
	}
	a := f.post("/v1/hooks/shop/parked/gh-1/redeliver", tokOperator, "")
	want("redelivered through the mended template", a, 201, `"run_id":"order-o7"`)
	if loc := a.header.Get("Location"); loc != "/v1/runs/order-o7" {
		t.Fatalf("Location %q", loc)
	}
	f.waitFor("order-o7", tokOperator, "paid", func(p RunPage) bool { return p.Run.Outcome != "" })
	// Refused again through the mended template (no total), then dropped.
	want("no total", send("shop", "gh-3", `{"order":"o8","refund":"r-8","customer":"fay"}`), 422, "{/total}")
	if shop := list("shop"); len(shop.Parked) != 1 || shop.Parked[0].Delivery != "gh-3" {
		t.Fatalf("shop: %+v", shop)
	}
	want("an agent drops", f.do("DELETE", "/v1/hooks/shop/parked/gh-3", tokAgent, "", nil), 403, "")
	want("dropped", f.do("DELETE", "/v1/hooks/shop/parked/gh-3", tokOperator, "", nil), 204, "")
	want("dropped again", f.do("DELETE", "/v1/hooks/shop/parked/gh-3", tokOperator, "", nil), 404, "gh-3")
	if shop := list("shop"); len(shop.Parked) != 0 {
		t.Fatalf("shop after the drop: %+v", shop)
	}

	// keep_refused: 0 parks nothing; 2 keeps the two refused last.
	want("quiet", send("quiet", "q-1", `{"run":"no such run 1"}`), 422, "")
	if l := list("quiet"); len(l.Parked) != 0 {
		t.Fatalf("quiet parks %+v", l)
	}
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		want("small", send("small", id, `{"run":"bad run id"}`), 422, "")
		time.Sleep(2 * time.Millisecond)
	}
	if l := list("small"); len(l.Parked) != 2 || l.Parked[0].Delivery != "s-3" || l.Parked[1].Delivery != "s-2" {
		t.Fatalf("small parks %+v", l)
	}
	metrics := f.metricsHolding(`flrh_webhook_parked_total{webhook="shop"} 3`, `flrh_webhook_parked_total{webhook="notes"} 2`,
		`flrh_webhook_parked_total{webhook="small"} 3`, `flrh_webhook_parked{webhook="small"} 2`)
	for _, hook := range []string{"quiet", "shop", "notes"} {
		if strings.Contains(metrics, `flrh_webhook_parked{webhook="`+hook+`"}`) {
			t.Errorf("%s has nothing parked, and the gauge shows it", hook)
		}
	}
	if strings.Contains(metrics, `flrh_webhook_parked_total{webhook="quiet"}`) {
		t.Errorf("quiet counted parked")
	}
}
