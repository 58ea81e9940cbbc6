package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// --max-retry-after reaches the runner: a sandbox answering 429 with
// Retry-After: 30 is retried after the bound given (one second), or at the
// contract's backoff when 0 says to ignore destinations' asks; a negative
// bound is a usage error.
func TestMaxRetryAfterFlag(t *testing.T) {
	c := newCLIRig(t)
	for _, tc := range []struct {
		id, bound string
		asked     bool
	}{{"bounded", "1s", true}, {"ignored", "0", false}} {
		installFault(t, c.base, `{"times":1,"status":429,"retry_after":30}`)
		began := time.Now()
		c.ok("run", "start", "example:refund-agent", "--id", tc.id, "--input-json", `{"type":"refund.requested/1","payload":{"refund_id":"r-9","amount":40,"payee":"alice","reason":"damaged"}}`, c.dest, "--max-retry-after", tc.bound)
		took := time.Since(began)
		if show := c.ok("run", "show", tc.id); !strings.Contains(show, "SUCCEEDED") {
			t.Fatalf("%s: %s", tc.id, show)
		}
		var rec map[string]any
		for _, line := range strings.Split(strings.TrimSpace(c.ok("run", "trace", tc.id, "--json")), "\n") {
			var r struct {
				Kind string         `json:"kind"`
				Body map[string]any `json:"body"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if r.Kind == "retry_scheduled" {
				rec = r.Body
			}
		}
		if rec == nil {
			t.Fatalf("%s: no retry_scheduled record", tc.id)
		}
		if _, named := rec["destination_asked_millis"]; named != tc.asked {
			t.Fatalf("%s: %v", tc.id, rec)
		}
		if tc.asked && (rec["destination_asked_millis"] != float64(30000) || rec["wait_millis"] != float64(1000) || took < time.Second) {
			t.Fatalf("%s: %v, took %v", tc.id, rec, took)
		}
		if !tc.asked && took > 20*time.Second {
			t.Fatalf("%s: took %v: the ask of 30 s was honoured", tc.id, took)
		}
	}
	for _, cmd := range [][]string{{"run", "resume"}, {"serve", "--addr", "127.0.0.1:0"}} {
		out, code := c.run(append(cmd, "--max-retry-after", "-1s")...)
		if code != 2 || !strings.Contains(out, "--max-retry-after must not be negative") {
			t.Errorf("flrh %s: exit %d\n%s", strings.Join(cmd, " "), code, out)
		}
	}
}
