package kernel

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

// corpusOutputs steps a fixed set of inputs — successes and rejections —
// and returns every result's canonical bytes, one per line.
func corpusOutputs(t testing.TB) []byte {
	var out bytes.Buffer
	inputs := [][2][]byte{}
	for _, ref := range []string{"observe-no-effect", "observe-with-effect", "observe-after-one"} {
		s, e := loadInput(t, ref)
		inputs = append(inputs, [2][]byte{s, e})
		s, e = loadInput(t, ref, rep("/accepted_event/payload/expected_revision", `7`))
		inputs = append(inputs, [2][]byte{s, e})
		s, e = loadInput(t, ref, rep("/accepted_event/payload/observation", `{"z":[3,2,1],"a":{"y":true,"b":null}}`))
		inputs = append(inputs, [2][]byte{s, e})
	}
	for _, in := range inputs {
		tr, err := StepJSON(Observation{}, in[0], in[1])
		var b []byte
		if err != nil {
			var r *Rejection
			errors.As(err, &r)
			b, _ = r.Canonical()
		} else {
			b, _ = tr.Canonical()
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// TestCrossProcessReplay runs the corpus in a fresh process (so another map
// hash seed) with another time zone, working directory and locale, and requires the same
// bytes: nothing ambient may reach a result.
func TestCrossProcessReplay(t *testing.T) {
	if os.Getenv("FLRH_KERNEL_CORPUS_CHILD") == "1" {
		os.Stdout.Write(corpusOutputs(t))
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	want := corpusOutputs(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	wd, _ := os.Getwd()
	cmd := exec.Command(exe, "-test.run", "^TestCrossProcessReplay$", "-test.count=1")
	cmd.Dir = t.TempDir() // another working directory
	cmd.Env = append(os.Environ(), "FLRH_KERNEL_CORPUS_CHILD=1",
		"FLRH_KERNEL_TESTDATA="+filepath.Join(wd, "testdata"),
		"TZ=Pacific/Kiritimati", "LANG=tr_TR.UTF-8", "LC_ALL=tr_TR.UTF-8")
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	// The child's stdout also carries the test framework's PASS line.
	got = got[:bytes.LastIndex(got, []byte("}\n"))+2]
	if !bytes.Equal(got, want) {
		t.Fatalf("another process produced other bytes:\n%s\nvs\n%s", got, want)
	}
	if n := strings.Count(string(want), "\n"); n != 9 {
		t.Fatalf("%d results", n)
	}
}

// TestResultsAreFresh: a transition shares no memory with the step's
// inputs; mutating the result leaves the inputs as they were.
func TestResultsAreFresh(t *testing.T) {
	s, e := loadInput(t, "observe-with-effect")
	sv, _ := cjson.Decode(s)
	ev, _ := cjson.Decode(e)
	sv0, ev0 := determinism.Copy(sv), determinism.Copy(ev)
	tr, err := StepValue(Observation{}, sv, ev)
	if err != nil {
		t.Fatal(err)
	}
	tr.FactDeltas[0].Tuple["predicate"] = "tampered"
	tr.FactDeltas[0].ProvenanceDelta["x"] = int64(1)
	tr.NextSnapshot.State["observation_count"] = int64(99)
	tr.EffectProposals[0].Preconditions[0] = "tampered"
	if !reflect.DeepEqual(sv, sv0) || !reflect.DeepEqual(ev, ev0) {
		t.Fatal("mutating the result changed the inputs")
	}
}
