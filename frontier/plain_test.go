package frontier

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/cjson"
)

// Every string appendPlain writes in any test of this package must be one
// cjson writes between quotes as it is: then the plain writers' bytes are
// appendString's. A string that needs escaping panics the test that
// reached it.
func init() {
	checkPlain = func(s string) {
		if !cjson.Plain(s) {
			panic(fmt.Sprintf("appendPlain was handed %q, which cjson escapes", s))
		}
	}
}

func TestPlainWritersAreStringWriters(t *testing.T) {
	for _, s := range []string{"", "a", "sha256:" + fmt.Sprintf("%064x", 7), "proposal:1", "v1.2+build/x"} {
		if got, want := string(appendPlain(nil, s)), string(appendString(nil, s)); got != want {
			t.Fatalf("appendPlain(%q) = %s, appendString %s", s, got, want)
		}
	}
	defer func(f func(string)) { checkPlain = f }(checkPlain)
	caught := false
	checkPlain = func(s string) { caught = caught || !cjson.Plain(s) }
	appendPlain(nil, "needs \"escaping\"")
	if !caught {
		t.Fatal("the check lets a string that needs escaping through")
	}
}
