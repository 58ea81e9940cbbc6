package ground

import (
	"os"
	"testing"
)

func readExample(t *testing.T, name string) any {
	t.Helper()
	data, err := os.ReadFile("testdata/example/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The example shipped for the CLI: a change may deploy once reviewed and
// tested, unless its service is frozen (default negation over stratum 0).
func TestExample(t *testing.T) {
	b := readExample(t, "bundle.json")
	first, rej := Solve(nil, b, readExample(t, "inputs-1.json"), 1)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	deploy := obj("predicate", "may_deploy", "subject", "change:42")
	if s, _, _ := stateOf(t, first, deploy); s != TrueOnly {
		t.Errorf("before the freeze may_deploy is %s", s)
	}
	second, rej := Solve(first["next_materialization"], b, readExample(t, "inputs-2.json"), 2)
	if rej != nil {
		t.Fatal(rej.Wire())
	}
	if s, _, _ := stateOf(t, second, deploy); s != Neither {
		t.Errorf("after the freeze may_deploy is %s", s)
	}
	checkResultInvariants(t, second)
}
