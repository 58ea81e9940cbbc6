package jsonread

import "testing"

// Reading a record of plain strings with a one-copy reader allocates the
// copy, the members' slots and what the struct holds by pointer, not a
// string per member.
func TestOneCopyReaderAllocations(t *testing.T) {
	b := []byte(`{"count":3,"inner":{"flag":true,"n":-7,"tag":"t"},"kind":"k","list":["a","b"],"names":["x","y"],"ok":true,"ref":"r"}`)
	r := NewReader(plainDoc{}).Strict().OneCopy()
	n := testing.AllocsPerRun(100, func() {
		var d plainDoc
		if !r.Read(b, &d) {
			t.Fatal("not read")
		}
	})
	// The copy and its holder, the member slots of two objects, the
	// pointer's string, the two lists as they grow: not the seven strings.
	if n > 11 {
		t.Errorf("%v allocations a read", n)
	}
}
