package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The demo is the README's first command; it must end as the policy says
// and print the evidence it claims.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), &out, Options{Dir: t.TempDir()}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"refund-large waits in WAIT_APPROVAL for approval approval:r-1002",
		"Pay refund r-1002: 900 to bob",
		"APPROVAL_GRANTED",
		"payee mallory is blocked by policy",
		"sandbox ledger: 3 mutations",
		"run refund-small — SUCCEEDED",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
