package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demo is the README's first command; it must end as the policy says
// and print the evidence it claims.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	// A directory that does not exist yet is made.
	dir := filepath.Join(t.TempDir(), "kept", "demo")
	if err := Run(context.Background(), &out, Options{Dir: dir}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// One that holds a demo's store already is refused before anything
	// is printed or written.
	before, _ := os.ReadFile(filepath.Join(dir, "flrh.db"))
	var again bytes.Buffer
	if err := Run(context.Background(), &again, Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "already holds a store") || again.Len() != 0 {
		t.Fatalf("a second demo in %s: %v\n%s", dir, err, again.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "flrh.db")); !bytes.Equal(before, after) {
		t.Fatal("the refused demo changed the store")
	}
	text := out.String()
	for _, want := range []string{
		"refund-large waits in WAIT_APPROVAL for approval",
		"amount = 900",
		`payee = "bob"`,
		"approved by finance-lead",
		"APPROVAL_GRANTED",
		"H decided: OPTIONS (MRP OPTIONS), options for a person",
		"H decided: REJECTED",
		"Journey Strip: [HOLD DECIDE] (now DECIDE)",
		"sandbox ledger: 2 mutations",
		`run refund-small — SUCCEEDED, outcome "success"`,
		"run refund-goodwill — INGEST, live: no outcome yet",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if strings.Contains(text, `outcome ""`) {
		t.Error(`demo prints an empty outcome for a run that has none yet`)
	}
	if t.Failed() {
		t.Log(text)
	}
}
