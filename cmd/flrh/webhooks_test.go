package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/webhook"
)

const webhooksYAML = `webhooks:
  - name: shop
    scheme: standard
    secret_env: SHOP_SECRET
    workflow: refund-agent
    events: [refund.requested]
    run_id: "order-{/data/order}"
    labels: {order: "{/data/order}"}
    rate: 100/s
    input:
      refunds:
        - {id: "{/data/id}", amount: "{/data/amount}", payee: "{/data/customer}", reason: "{/data/reason}"}
  - name: tracker
    scheme: github
    secret_file: tracker.secret
    workflow: refund-agent
    input: {refunds: [{id: "{/issue/refund}", amount: "{/issue/amount}", payee: "{/issue/payee}", reason: "issue {/issue/number}"}]}
  - name: issues
    scheme: linear
    secret_env: LINEAR_SECRET
    workflow: refund-agent
    input: {refunds: [{id: "{/data/identifier}", amount: "{/data/estimate}", payee: gus, reason: "{$event}"}]}
  - name: signed
    scheme: standard
    secret_env: SENDER_PUBLIC_KEY
    workflow: refund-agent
  - name: sms
    scheme: twilio
    secret_env: TWILIO_TOKEN
    url: https://flrh.example.com/v1/hooks/sms
    workflow: refund-agent
    events: [message.received]
    run_id: "sms-{/MessageSid}"
    input: {refunds: [{id: "r-{/MessageSid}", amount: 10, payee: "{/From}", reason: "{/Body}"}]}
  - name: streams
    scheme: twilio
    secret_env: TWILIO_TOKEN
    url: https://flrh.example.com/v1/hooks/streams?sink=refunds
    workflow: refund-agent
    events: [com.twilio.messaging.message.received]
    run_id: "ev-{/0/id}"
    input: {refunds: [{id: "r-{/0/id}", amount: 11, payee: "{/0/data/from}", reason: "{$event}"}]}
`

// Signed deliveries to a real serve process: flrh webhook check and send,
// a delivery sent again taken once, a delivery whose serve process was
// killed (SIGKILL) at a random moment sent again to its restarted
// successor and taken once, and a secret rotated through its file and
// SIGHUP.
func TestWebhooksOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "webhooks.yaml")
	shopKey := []byte("the-shop's-signing-secret-0123")
	shopSecret := "whsec_" + base64.StdEncoding.EncodeToString(shopKey)
	writeFile := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile("webhooks.yaml", webhooksYAML)
	writeFile("tracker.secret", "tracker-secret-one-0123456789\n")
	env := []string{"SHOP_SECRET=" + shopSecret, "LINEAR_SECRET=lin_wh_0123456789abcdef",
		"SENDER_PUBLIC_KEY=whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 32)), "TWILIO_TOKEN=twilio-auth-token-0123456789"}
	cli := func(extraEnv []string, args ...string) (string, int) {
		t.Helper()
		return flrhCode(t, bin, extraEnv, args...)
	}

	out, code := cli(env, "webhook", "check", "--webhooks", file)
	if code != 0 || !strings.Contains(out, "webhook shop: standard, 1 secrets; events refund.requested; to run order-{/data/order} of refund-agent, starting it when it does not exist; labelled order={/data/order}; at most 100/s\n") ||
		!strings.Contains(out, "webhook tracker: github, 1 secrets; events all; to run {$hook}-{$delivery}") ||
		!strings.Contains(out, "webhook signed: standard, 0 secrets, 1 public keys;") {
		t.Fatalf("check: %d\n%s", code, out)
	}
	if out, code := cli(nil, "webhook", "check", "--webhooks", file); code != 2 || !strings.Contains(out, "SHOP_SECRET is unset or empty") || strings.Contains(out, shopSecret) {
		t.Fatalf("check without the secret: %d\n%s", code, out)
	}

	sandbox := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	storeFlag := "sqlite:" + filepath.Join(dir, "flrh.db")
	serve := func() *serveProc {
		// A short lease: a killed process's runs are taken over soon.
		return startServe(t, bin, env, "--store", storeFlag, "--destination", sandbox+"/v1/effects", "--webhooks", file, "--lease-ttl", crashLeaseTTL)
	}
	p := serve()
	refund := func(order, id string, amount int) string {
		b, _ := json.Marshal(map[string]any{"type": "refund.requested", "data": map[string]any{"order": order, "id": id, "amount": amount, "customer": "bob", "reason": "damaged"}})
		return writeFile(id+".json", string(b))
	}
	send := func(p *serveProc, id, body string) (string, int) {
		return cli(env, "webhook", "send", "shop", "--webhooks", file, "--body", body, "--id", id, "--url", p.base)
	}
	b1 := refund("o1", "r-1", 40)
	if out, code := send(p, "m-1", b1); code != 0 || !strings.HasPrefix(out, "201 Created") || !strings.Contains(out, `"run_id": "order-o1"`) {
		t.Fatalf("send: %d\n%s", code, out)
	}
	if got := awaitOutcome(t, p.base, "order-o1"); got != "success" {
		t.Fatalf("order-o1 ended %q", got)
	}
	if out, code := send(p, "m-1", b1); code != 0 || !strings.HasPrefix(out, "200 OK") || !strings.Contains(out, `"again": true`) {
		t.Fatalf("sent again: %d\n%s", code, out)
	}
	if out, code := send(p, "m-1x", refund("o1", "r-9", 10)); code != 1 || !strings.HasPrefix(out, "409") || !strings.Contains(out, "ended") {
		t.Fatalf("a new delivery to the ended run: %d\n%s", code, out)
	}
	// A refund without its amount is refused and parked; it is listed
	// after the kills below, from the store.
	noAmount := writeFile("no-amount.json", `{"type":"refund.requested","data":{"order":"o9","id":"r-x","customer":"bob","reason":"late"}}`)
	if out, code := send(p, "m-9", noAmount); code != 1 || !strings.HasPrefix(out, "422") {
		t.Fatalf("a refund without its amount: %d\n%s", code, out)
	}
	// A Linear event kept in a file is sent as of now, as Linear stamps
	// it; a hook holding its sender's public key cannot sign.
	issueFile := writeFile("issue.json", `{"action":"create","type":"Issue","data":{"identifier":"ENG-7","estimate":30},"webhookTimestamp":1000}`)
	if out, code := cli(env, "webhook", "send", "issues", "--webhooks", file, "--body", issueFile, "--id", "lin-1", "--event", "Issue", "--url", p.base); code != 0 || !strings.HasPrefix(out, "201 Created") || !strings.Contains(out, `"run_id": "issues-lin-1"`) {
		t.Fatalf("send to linear: %d\n%s", code, out)
	}
	if out, code := cli(env, "webhook", "send", "signed", "--webhooks", file, "--body", issueFile, "--url", p.base); code != 2 || !strings.Contains(out, "verifies and cannot sign") {
		t.Fatalf("send to a hook holding a public key: %d\n%s", code, out)
	}
	// A text message, signed as Twilio signs it for the URL it was given,
	// to this server: empty TwiML, and its run pays.
	smsFile := writeFile("sms.form", "MessageSid=SM1&SmsStatus=received&From=%2B15551230000&Body=refund+please")
	if out, code := cli(env, "webhook", "send", "sms", "--webhooks", file, "--body", smsFile, "--url", p.base); code != 0 || !strings.HasPrefix(out, "200 OK") || !strings.Contains(out, "<Response></Response>") {
		t.Fatalf("send to twilio: %d\n%s", code, out)
	}
	if got := awaitOutcome(t, p.base, "sms-SM1"); got != "success" {
		t.Fatalf("sms-SM1 ended %q", got)
	}
	// An Event Streams batch, JSON signed by its bodySHA256: its run pays.
	eventsFile := writeFile("events.json", `[{"specversion":"1.0","type":"com.twilio.messaging.message.received","id":"EZ7","data":{"from":"+15551230000"}}]`)
	if out, code := cli(env, "webhook", "send", "streams", "--webhooks", file, "--body", eventsFile, "--url", p.base); code != 0 || !strings.HasPrefix(out, "201 Created") || !strings.Contains(out, `"run_id": "ev-EZ7"`) {
		t.Fatalf("send JSON to twilio: %d\n%s", code, out)
	}
	if got := awaitOutcome(t, p.base, "ev-EZ7"); got != "success" {
		t.Fatalf("ev-EZ7 ended %q", got)
	}

	// Killed at a random moment within 2.5 ms of a delivery (before its
	// commit, between the commit and the answer, or after the answer: all
	// three come up in a few rounds), the process is restarted on the
	// same store and the sender delivers again: each delivery is one run
	// with one input and one payment.
	signed := func(id string, body []byte) (http.Header, []byte) {
		h := webhook.Sign(webhook.Standard, shopKey, webhook.Delivery{ID: id, Timestamp: time.Now().Unix()}, body)
		return http.Header(h), body
	}
	post := func(base string, h http.Header, body []byte) (int, error) {
		req, _ := http.NewRequest("POST", base+"/v1/hooks/shop", bytes.NewReader(body))
		req.Header = h.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := range 6 {
		order := fmt.Sprintf("k%d", i)
		raw, _ := os.ReadFile(refund(order, "r-"+order, 20+i))
		h, body := signed("crash-"+order, raw)
		first := make(chan int, 1)
		go func() { s, _ := post(p.base, h, body); first <- s }()
		time.Sleep(time.Duration(rand.IntN(2500)) * time.Microsecond)
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		firstStatus := <-first
		p = serve()
		status, err := post(p.base, h, body)
		if err != nil || (status != 201 && status != 200) {
			t.Fatalf("%s delivered again after a kill (first answer %d): %d %v", order, firstStatus, status, err)
		}
		t.Logf("%s: the killed process answered %d, its successor %d", order, firstStatus, status)
		if status == 201 && firstStatus == 201 {
			t.Fatalf("%s started twice", order)
		}
		if got := awaitOutcome(t, p.base, "order-"+order); got != "success" {
			t.Fatalf("order-%s ended %q", order, got)
		}
		if again, _ := post(p.base, h, body); again != 200 {
			t.Fatalf("%s a third time: %d", order, again)
		}
	}
	paid := map[string]int{}
	for _, m := range mutations(t, sandbox) {
		b, _ := json.Marshal(m)
		for _, id := range []string{"r-1", "r-k0", "r-k1", "r-k2", "r-k3", "r-k4", "r-k5", "r-9"} {
			if strings.Contains(string(b), `"`+id+`"`) {
				paid[id]++
			}
		}
	}
	if fmt.Sprint(paid) != "map[r-1:1 r-k0:1 r-k1:1 r-k2:1 r-k3:1 r-k4:1 r-k5:1]" {
		t.Fatalf("payments at the destination: %v", paid)
	}

	// The refund parked before the kills: in the store's check, listed,
	// taken again (refused again: the file still lacks the amount),
	// dropped.
	if out, code := cli(nil, "store", "check", "--store", storeFlag); code != 0 || !strings.Contains(out, "webhook shop: 1 delivery parked, refused at ") {
		t.Fatalf("store check: %d\n%s", code, out)
	}
	for _, step := range []struct {
		args  []string
		code  int
		words []string
	}{
		{[]string{"parked", "shop"}, 0, []string{"200 OK", `"delivery": "m-9"`, `"times": 1`, `"status": 422`, "{/data/amount}"}},
		{[]string{"redeliver", "shop", "m-9"}, 1, []string{"422", "{/data/amount}"}},
		{[]string{"parked", "shop"}, 0, []string{`"delivery": "m-9"`, `"times": 2`}},
		{[]string{"drop", "shop", "m-9"}, 0, []string{"204"}},
		{[]string{"drop", "shop", "m-9"}, 1, []string{"404", "m-9"}},
		{[]string{"parked", "shop"}, 0, []string{`"parked": []`}},
	} {
		out, code := cli(env, append(append([]string{"webhook"}, step.args...), "--url", p.base)...)
		for _, w := range step.words {
			if code != step.code || !strings.Contains(out, w) {
				t.Fatalf("flrh webhook %v: %d\n%s\nwant %d and %q", step.args, code, out, step.code, w)
			}
		}
	}

	// The tracker's secret rotated: the new file's content, SIGHUP, and
	// the old signature is refused, the new one taken.
	issue := []byte(`{"issue":{"number":7,"refund":"r-t1","amount":15,"payee":"carol"}}`)
	old := webhook.Sign(webhook.GitHub, []byte("tracker-secret-one-0123456789"), webhook.Delivery{ID: "gh-1", Event: "issues"}, issue)
	post2 := func(h webhook.Header) int {
		req, _ := http.NewRequest("POST", p.base+"/v1/hooks/tracker", bytes.NewReader(issue))
		req.Header = http.Header(h).Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	writeFile("tracker.secret", "tracker-secret-two-0123456789\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), "webhooks reloaded"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged:\n%s", p.stderr)
		}
	}
	if s := post2(old); s != 401 {
		t.Fatalf("the old secret's signature after the rotation: %d", s)
	}
	if s := post2(webhook.Sign(webhook.GitHub, []byte("tracker-secret-two-0123456789"), webhook.Delivery{ID: "gh-1", Event: "issues"}, issue)); s != 201 {
		t.Fatalf("the new secret's signature: %d", s)
	}
	// A file that no longer loads is kept out, and the webhooks stay.
	writeFile("tracker.secret", "short\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), "webhooks kept as they were"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged:\n%s", p.stderr)
		}
	}
	if s := post2(webhook.Sign(webhook.GitHub, []byte("tracker-secret-two-0123456789"), webhook.Delivery{ID: "gh-2", Event: "issues"}, issue)); s != 201 {
		t.Fatalf("after a broken reload: %d", s)
	}
	for _, secret := range []string{shopSecret, "tracker-secret-one", "tracker-secret-two"} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Fatalf("the log holds a secret")
		}
	}
}
