package seam

import (
	"bytes"

	"flrh.dev/flrh/cjson"
)

// assertCanonical checks that b is already in flrh-cjson/1 form.
func assertCanonical(t tb, b []byte) {
	t.Helper()
	c, err := cjson.Canonicalize(b)
	if err != nil {
		t.Fatalf("not canonical JSON: %v", err)
	}
	if !bytes.Equal(c, b) {
		t.Fatalf("writer output is not canonical\n got %s\nwant %s", b, c)
	}
}

// tb is the part of testing.TB the fixture helpers need; *rapid.T has it.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}
