package openended

import (
	"testing"

	"flrh.dev/flrh/bundle"
)

// The rewritten bundle loads as the refund agent under its name and
// version, with a definition of its own.
func TestRefundAgent(t *testing.T) {
	wf, err := RefundAgent()
	if err != nil {
		t.Fatal(err)
	}
	orig, _, err := bundle.LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	if wf.ID() != orig.ID() || wf.Version() != orig.Version() {
		t.Fatalf("open-ended bundle is %s@%s, want %s@%s", wf.ID(), wf.Version(), orig.ID(), orig.Version())
	}
	// The rewrite took: the definition is another one.
	if wf.Digest() == orig.Digest() {
		t.Fatalf("open-ended bundle has the example's digest %s", wf.Digest())
	}
}
