package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/internal/openended"
)

func refundRequest(id string, amount int) string {
	return `{"type":"refund.requested/1","payload":{"refund_id":"` + id + `","amount":` + itoa(amount) + `,"payee":"alice","reason":"damaged"}}`
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// run submit hands a live run more inputs: a run that takes input decides
// each at once; a run that waits for something else keeps them in its
// inbox (said by run show and the command) until it next takes input; a
// run that ends first leaves them unread, and says so.
func TestRunSubmit(t *testing.T) {
	c := newCLIRig(t)

	// An open-ended refund agent takes any number of requests, each paid.
	dir := filepath.Join(t.TempDir(), "open")
	files, err := openended.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wf := "--workflows=" + dir
	c.ok("run", "start", "refund-agent", "--id", "open", "--input-json", refundRequest("r-1", 10), wf, c.dest)
	for i, amount := range []int{20, 30} {
		out := c.ok("run", "submit", "open", "--as", "agent-7", "--input-json", refundRequest("r-"+itoa(i+2), amount), wf, c.dest)
		if !strings.Contains(out, "run open: INGEST") || strings.Contains(out, "inbox") {
			t.Fatalf("submit to a run that takes input: want it read and the run back in INGEST:\n%s", out)
		}
	}
	var show struct {
		Receipts []struct{ Outcome string } `json:"receipts"`
		Inbox    int                        `json:"inbox_pending"`
	}
	if err := json.Unmarshal([]byte(c.ok("run", "show", "open", "--json", wf)), &show); err != nil {
		t.Fatal(err)
	}
	if len(show.Receipts) != 3 || show.Inbox != 0 {
		t.Fatalf("after two submissions: %d receipts, %d unread, want 3 and 0", len(show.Receipts), show.Inbox)
	}
	events := c.events("open")

	// Refused without touching the run: malformed JSON, a bad usage report,
	// both input flags, no input at all (usage errors, exit 2).
	for _, args := range [][]string{
		{"--input-json", `{"type":`},
		{"--input-json", refundRequest("r-9", 5), "--tokens", "-1"},
		{"--input-json", refundRequest("r-9", 5), "--input", "x.json"},
		{},
	} {
		out, code := c.run(append([]string{"run", "submit", "open", "--as", "agent-7", wf, c.dest}, args...)...)
		if code != 2 {
			t.Errorf("submit %v: exit %d, want 2:\n%s", args, code, out)
		}
	}
	// An input the workflow refuses is recorded as refused and the command
	// fails saying why.
	if out, code := c.run("run", "submit", "open", "--as", "agent-7", "--input-json", `{"type":"refund.requested/1","payload":{"refund_id":"r-8","amount":"ten","payee":"alice","reason":"x"}}`, wf, c.dest); code != 1 || !strings.Contains(out, "run open refused it") {
		t.Errorf("a refused input: exit %d, want 1 naming the refusal:\n%s", code, out)
	}
	if out, code := c.run("run", "submit", "nope", "--as", "agent-7", "--input-json", refundRequest("r-9", 5), wf, c.dest); code != 1 || !strings.Contains(out, "no run nope") {
		t.Errorf("submit to a missing run: exit %d:\n%s", code, out)
	}
	if got := c.events("open"); got <= events {
		t.Errorf("the refused input left no record: %d events, had %d", got, events)
	}

	// The example completes with its first payment: an input handed to it
	// while it waits for an approval stays unread, and is said to be.
	c.ok("run", "start", "example:refund-agent", "--id", "one", "--input-json", largeRefund, c.dest)
	out := c.ok("run", "submit", "one", "--as", "agent-7", "--input-json", refundRequest("r-5", 10), c.dest)
	if !strings.Contains(out, "WAIT_APPROVAL") || !strings.Contains(out, "1 input in the inbox, read when the run next takes input") {
		t.Fatalf("submit to a run waiting for approval:\n%s", out)
	}
	req := approvalRequest.FindString(c.ok("run", "show", "one"))
	out = c.ok("approve", "one", req, "--as", "finance-lead", c.dest)
	if !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "1 input never read: the run ended before it took it") {
		t.Fatalf("approve that ends the run with an input unread:\n%s", out)
	}
	if out, code := c.run("run", "submit", "one", "--as", "agent-7", "--input-json", refundRequest("r-6", 10), c.dest); code != 1 || !strings.Contains(out, "has ended") {
		t.Errorf("submit to an ended run: exit %d:\n%s", code, out)
	}
	if out := c.ok("run", "show", "one"); !strings.Contains(out, "1 input never read") {
		t.Errorf("run show of the ended run does not say what it left unread:\n%s", out)
	}
	c.ok("verify", "one")
	c.ok("verify", "open")
	c.ok("replay", "open", wf)
}
