package channel

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

func loadBuild(t *testing.T) (*Document, []Input) {
	t.Helper()
	text, err := os.ReadFile("../../examples/aif/build.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := DecodeDocument(text)
	if err != nil {
		t.Fatal(err)
	}
	otext, err := os.ReadFile("../../examples/aif/build.obs.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		Observe      map[string]float64 `json:"observe"`
		TimePressure float64            `json:"time_pressure"`
	}
	if err := json.Unmarshal(otext, &raw); err != nil {
		t.Fatal(err)
	}
	var in []Input
	for _, r := range raw {
		in = append(in, Input{r.Observe, r.TimePressure})
	}
	return doc, in
}

func TestRunBuildExample(t *testing.T) {
	doc, in := loadBuild(t)
	if len(doc.Cascades) != 16 || doc.Actions[0] != "fix-spec" {
		t.Fatalf("cascades %d, actions %v", len(doc.Cascades), doc.Actions)
	}
	a, err := Run(doc, "sha256:m", in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(doc, "sha256:m", in)
	ab, _ := cjson.Marshal(a)
	bb, _ := cjson.Marshal(b)
	if string(ab) != string(bb) {
		t.Fatal("two runs differ")
	}
	first := a.Steps[0]
	if first.Action != "fix-spec" {
		t.Fatalf("tests at 60%%: chose %s (%+v)", first.Action, first.Scorecard)
	}
	// The broken build at tick 3 is a contradiction the dial sees.
	if a.Steps[2].Diagnostics.ContradictionRate == 0 {
		t.Fatalf("tick 3 diagnostics %+v", a.Steps[2].Diagnostics)
	}
	for _, s := range a.Steps {
		if s.Scorecard.Abstain == "" && s.Action != strings.SplitN(s.Scorecard.Pick, " > ", 2)[0] {
			t.Fatalf("action %s does not start the picked cascade %s", s.Action, s.Scorecard.Pick)
		}
	}
}

func TestDecodeDocumentRejects(t *testing.T) {
	text, err := os.ReadFile("../../examples/aif/build.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ from, to, ptr string }{
		{`"alpha": 0.05`, `"alpha": 0.2`, "/alpha"},
		{`"do_nothing": "wait"`, `"do_nothing": "sleep"`, "/do_nothing"},
		{`"shift": [0, 0, 0], `, `"shift": [0, 0], `, "/actions/wait"},
		{`"initial_uncertainty": 0.05`, `"initial_uncertainty": 0.00000000001`, "/initial_uncertainty"},
		{`"type": "bool"`, `"type": "flag"`, "/channels/1/type"},
		{`"horizon": 2`, `"horizon": 9`, "/horizon"},
		{`"initial_mu": [0.5, 1, 0.05]`, `"initial_mu": [0.5, 2, 0.05]`, "/initial_mu/1"},
		{`"min": 0, "max": 200`, `"min": 0.5, "max": 200`, "/channels/0"},
		{`"temporal_discount": 0.9`, `"temporal_discount": 0`, "/temporal_discount"},
	}
	for _, c := range cases {
		bad := strings.Replace(string(text), c.from, c.to, 1)
		if bad == string(text) {
			t.Fatalf("substitution %q did not apply", c.from)
		}
		_, err := DecodeDocument([]byte(bad))
		var e *Error
		if !errors.As(err, &e) || e.Pointer != c.ptr {
			t.Errorf("%s: got %v, want error at %s", c.to, err, c.ptr)
		}
	}
}

func FuzzDecodeDocument(f *testing.F) {
	if text, err := os.ReadFile("../../examples/aif/build.json"); err == nil {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := DecodeDocument(b)
		if err != nil {
			return
		}
		obs := map[string]float64{}
		for _, s := range doc.Config.Channels {
			obs[s.Name] = s.Min
		}
		if _, err := Run(doc, "sha256:f", []Input{{Observe: obs}}); err != nil {
			t.Fatalf("valid document failed to run: %v", err)
		}
	})
}

// goldenRunDigest pins the canonical digest of the build example's run. The
// same test passes as a GOARCH=arm64 binary under qemu-user, which shows the
// channel arithmetic is bit-identical across the two architectures.
const goldenRunDigest = "sha256:721111bd3eacba032f0e661d144a095a62be53bcd39a5a669233e23a9c433c69"

func TestGoldenRunDigest(t *testing.T) {
	doc, in := loadBuild(t)
	rec, err := Run(doc, "sha256:golden", in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cjson.DigestOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	if d != goldenRunDigest {
		t.Fatalf("run digest %s, want %s", d, goldenRunDigest)
	}
}
