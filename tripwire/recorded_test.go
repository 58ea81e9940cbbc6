package tripwire

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

var update = flag.Bool("update", false, "rewrite the recorded incidents in testdata/incidents")

// recording is one recorded history: the boundaries a runner reported, in
// order. Bad histories name the bug that produced them and the wire that
// must fire; clean ones name neither.
type recording struct {
	Kind       string     `json:"kind"`
	Incident   string     `json:"incident"`
	Bug        string     `json:"bug"`
	Wire       string     `json:"wire"`
	Boundaries []Boundary `json:"boundaries"`
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

func slug(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func record(name, bug, wire string, run func(*sim), bugs ...string) ([]byte, error) {
	s := newSim(bugs...)
	run(s)
	return cjson.Marshal(recording{Kind: "TripwireRecording", Incident: name, Bug: bug, Wire: wire, Boundaries: s.boundaries})
}

func recordings(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for i, tc := range incidents {
		bugs := []string{"incident"}
		if tc.bug != "" {
			bugs = append(bugs, tc.bug)
		}
		bad, err := record(tc.name, tc.bug, tc.wire, tc.run, bugs...)
		if err != nil {
			t.Fatal(err)
		}
		clean, err := record(tc.name, "", "", tc.run)
		if err != nil {
			t.Fatal(err)
		}
		base := fmt.Sprintf("%02d-%s", i+1, slug(tc.name))
		out[base+".incident.json"] = bad
		out[base+".clean.json"] = clean
	}
	return out
}

// TestRecordedIncidents replays the recorded histories: every incident
// trips its wire, and the same history without the fault trips nothing.
// The recordings must be exactly what the model runner reports today
// (go test -run TestRecordedIncidents -update rewrites them).
func TestRecordedIncidents(t *testing.T) {
	dir := filepath.Join("testdata", "incidents")
	want := recordings(t)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range sortedKeys(want) {
			if err := os.WriteFile(filepath.Join(dir, name), want[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("%d recordings on disk, %d incidents and clean twins (%v); run with -update", len(files), len(want), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, want[filepath.Base(file)]) {
				t.Fatal("the recording differs from what the model runner reports; run with -update and review the diff")
			}
			var rec recording
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			var trips []Trip
			for _, b := range rec.Boundaries {
				trips = append(trips, Check(b)...)
			}
			if rec.Wire == "" { // a clean history, or a blessed change
				if len(trips) > 0 {
					t.Fatalf("clean history tripped:%s", describe(trips))
				}
				return
			}
			if !slices.ContainsFunc(trips, func(tr Trip) bool { return tr.Wire == rec.Wire }) {
				t.Fatalf("%s: wire %s did not fire; trips:%s", rec.Incident, rec.Wire, describe(trips))
			}
		})
	}
}
