package unchanged

import "testing"

func TestStringSharesTheBytes(t *testing.T) {
	b := []byte("state")
	s := String(b)
	if s != "state" || len(String(nil)) != 0 {
		t.Fatalf("String = %q", s)
	}
	if allocs := testing.AllocsPerRun(100, func() { s = String(b) }); allocs != 0 {
		t.Fatalf("String allocates %v times", allocs)
	}
}
