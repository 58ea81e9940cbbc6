package aif

import (
	"os"
	"reflect"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

func TestRunReplaysExactly(t *testing.T) {
	for _, name := range []string{"../examples/aif/tmaze.json", "../examples/aif/ops.json"} {
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		run := func() []byte {
			doc, err := Decode(text)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			rec, err := Run(doc, "sha256:model", nil, 6)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cjson.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		a, b := run(), run()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: two runs differ", name)
		}
	}
}

func TestRunSimulatedTMazeFindsReward(t *testing.T) {
	doc := loadTMaze(t)
	rec, err := Run(doc, "sha256:any", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	// The process puts the reward on the right: cue first, then the right arm.
	want := []string{"to-cue", "to-right", "to-right"}
	for i, s := range rec.Steps {
		if s.Action[0] != want[i] {
			t.Fatalf("tick %d chose %s, want %s", i+1, s.Action[0], want[i])
		}
	}
	if rec.Steps[2].Observation[1] == "none" {
		t.Fatalf("at the arm the agent saw no reward outcome: %v", rec.Steps[2].Observation)
	}
}

func TestRunNeedsObservationsOrProcess(t *testing.T) {
	doc, err := Decode([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(doc, "sha256:x", nil, 2); err == nil {
		t.Fatal("ran without observations or process")
	}
	if _, err := Run(doc, "sha256:x", [][]int{{0}, {5}}, 0); err == nil {
		t.Fatal("accepted an out-of-range observation")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(tiny))
	if b, err := os.ReadFile("testdata/tmaze.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := Decode(b)
		if err != nil {
			return
		}
		m := doc.Model
		obs := make([]int, len(m.Modalities))
		if _, err := m.Step(m.Prior(), obs, SelectSample, "sha256:f"); err != nil {
			t.Fatalf("valid model failed to step: %v", err)
		}
	})
}

// goldenOpsDigest pins the simulated operations run (sampled selection,
// simulated process, Dirichlet learning of pA); it is checked on amd64 and,
// under qemu-user, on arm64.
const goldenOpsDigest = "sha256:441009e917751a570ceb26a3c75d7547707c60fd54b41c404bc77e330477abad"

func TestGoldenOpsRun(t *testing.T) {
	text, err := os.ReadFile("../examples/aif/ops.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Run(doc, "sha256:golden", nil, 8)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cjson.DigestOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	if d != goldenOpsDigest {
		t.Fatalf("ops run digest %s, want %s", d, goldenOpsDigest)
	}
}

// Run leaves its document untouched (learning works on copies) and gives the
// same record twice.
func TestRunIsPure(t *testing.T) {
	text, err := os.ReadFile("../examples/aif/ops.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	determinism.Check(t, doc, func(d *Document) RunRecord {
		rec, err := Run(d, "sha256:pure", nil, 4)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	})
}
