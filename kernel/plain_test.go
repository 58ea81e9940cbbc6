package kernel

import (
	"fmt"
	"testing"

	"flrh.dev/flrh/cjson"
)

// Every string appendPlain writes in any test of this package must be one
// cjson writes between quotes as it is: then the fact deltas' and
// proposals' bytes are what cjson.AppendString wrote. A string that needs
// escaping panics the test that reached it.
func init() {
	checkPlain = func(s string) {
		if !cjson.Plain(s) {
			panic(fmt.Sprintf("appendPlain was handed %q, which cjson escapes", s))
		}
	}
}

func TestPlainIsAppendString(t *testing.T) {
	for _, s := range []string{"", "reversible", "sha256:" + fmt.Sprintf("%064x", 5), "evt:1"} {
		if got, want := string(appendPlain(nil, s)), string(cjson.AppendString(nil, s)); got != want {
			t.Fatalf("appendPlain(%q) = %s, AppendString %s", s, got, want)
		}
	}
	defer func(f func(string)) { checkPlain = f }(checkPlain)
	caught := false
	checkPlain = func(s string) { caught = caught || !cjson.Plain(s) }
	appendPlain(nil, "é")
	if !caught {
		t.Fatal("the check lets a string that needs escaping through")
	}
}
