package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/store/sqlite"
)

// verify and replay over several runs, or --all, check them in parallel
// and print exactly what checking one run at a time prints, in order; a
// tampered run among them is found.
func TestVerifyAndReplayManyRuns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("golden corpus: %v", err)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "many.db")
	st, err := sqlite.Open(ctx, path, importOptions)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		x, err := importRun(ctx, st, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ids = append(ids, x.Run.ID)
	}
	tampered := ids[1]
	for _, s := range []string{"DROP TRIGGER IF EXISTS events_no_update",
		`UPDATE events SET body = CAST(replace(body, 'INGEST', 'INGESX') AS BLOB) WHERE run_id = '` + tampered + `' AND seq = 1`} {
		if _, err := st.DB().Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	storeFlag := "--store=sqlite:" + path
	// Flags keep their values between in-process runs: say --all each time.
	for _, cmd := range []string{"verify", "replay"} {
		var want strings.Builder
		for _, id := range ids {
			out, err := runStoreCmd(t, cmd, id, storeFlag, "--all=false")
			if (err != nil) != (id == tampered) {
				t.Fatalf("%s %s: %v\n%s", cmd, id, err, out)
			}
			want.WriteString(out)
		}
		if !strings.Contains(want.String(), "event-digest") {
			t.Fatalf("%s did not find the tampered event:\n%s", cmd, want.String())
		}
		for _, args := range [][]string{{cmd, "--all", storeFlag}, append([]string{cmd, storeFlag, "--all=false"}, ids...)} {
			out, err := runStoreCmd(t, args...)
			if !errors.Is(err, errChecksFailed) {
				t.Fatalf("%v: %v", args, err)
			}
			if out != want.String() {
				t.Fatalf("%v printed\n%s\nwant, as one run at a time\n%s", args, out, want.String())
			}
		}
	}
	// With --json, one document of every run's report, in order, the
	// tampered run's with its finding.
	for _, cmd := range []string{"verify", "replay"} {
		out, err := runStoreCmd(t, cmd, "--all", "--json", storeFlag)
		if !errors.Is(err, errChecksFailed) {
			t.Fatalf("%s --all --json: %v", cmd, err)
		}
		var reps []struct {
			RunID  string `json:"run_id"`
			Verify *struct {
				Findings []struct{ Check string } `json:"findings"`
			} `json:"verify"`
			Findings []struct{ Check string } `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != len(ids) {
			t.Fatalf("%s --all --json: %d reports (%v)\n%s", cmd, len(reps), err, out)
		}
		for i, r := range reps {
			findings := r.Findings
			if r.Verify != nil {
				findings = r.Verify.Findings
			}
			if r.RunID != ids[i] || (len(findings) > 0) != (ids[i] == tampered) {
				t.Fatalf("%s --all --json: report %d is run %s with %d findings", cmd, i, r.RunID, len(findings))
			}
		}
	}
	runStoreCmd(t, "verify", "--json=false", storeFlag, ids[0]) // flags keep their values
	runStoreCmd(t, "replay", "--json=false", storeFlag, ids[0])
	for _, args := range [][]string{{"verify", storeFlag, "--all=false"}, {"verify", "--all", ids[0], storeFlag}, {"replay", storeFlag, "--all=false"}} {
		if out, err := runStoreCmd(t, args...); err == nil || !strings.Contains(err.Error(), "--all") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}
