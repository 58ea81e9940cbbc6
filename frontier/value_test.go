package frontier

import "testing"

// TestZeroValue: the zero Value holds nothing, says so through every
// accessor without panicking, and no delta can carry it.
func TestZeroValue(t *testing.T) {
	var v Value
	if v.Kind() != "" || v.Digest() != "" || v.CanonicalJSON() != nil || v.CanonicalSize() != 0 ||
		len(v.AppendCanonical([]byte("x"))) != 1 {
		t.Fatal("zero Value reports contents")
	}
	if _, ok := v.Proposal(); ok {
		t.Fatal("zero Value is a proposal")
	}
	if _, ok := v.Verdict(); ok {
		t.Fatal("zero Value is a verdict")
	}
	_, rej := NewValueDelta("src:a", 0, 1, "dataflow/0", v)
	if rej == nil || rej.Code != CodeMalformedValueDelta || rej.Path != "/value" {
		t.Fatalf("zero Value accepted into a delta: %v", rej)
	}
}
