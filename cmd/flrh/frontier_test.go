package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runFrontier runs a frontier or seam command in this process. Flags keep
// their values between Execute calls (a repeated flag such as --source
// appends to what the last run left), so every flag of those commands is
// reset first: otherwise a second run of the tests (go test -count=2)
// declared the sources of the first twice.
func runFrontier(t *testing.T, args ...string) (string, error) {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		if c.Name() == "frontier" || c.Name() == "seam" {
			resetFlags(c)
		}
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	rootCmd.SetArgs(nil)
	rootCmd.SetOut(nil)
	return out.String(), err
}

// The profile and commands are the reference corpus's m3 profile and its
// frontier-advance steps.
func TestFrontierCommands(t *testing.T) {
	dir := t.TempDir()
	profile, err := runFrontier(t, "frontier", "profile", "--dataflow", "dataflow/0", "--source", "source:m3:b", "--source", "source:m3:a",
		"--max-deltas-per-command", "8", "--max-active-values", "6", "--max-open-epochs", "3",
		"--max-ready-batches", "2", "--max-demand-per-command", "2", "--max-outstanding-demand", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(profile, `"profile_digest":"sha256:0da826963d547756436cdaa14fa79392a6b307f7358d858560e876edd0cd6768"`) {
		t.Fatalf("profile digest differs from the reference: %s", profile)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pf := write("profile.json", profile)
	advance := func(src, w string) string {
		return `{"kind":"RAdvanceFrontier","schema_version":"flrh-r-command/1","profile_digest":"sha256:0da826963d547756436cdaa14fa79392a6b307f7358d858560e876edd0cd6768","dataflow_version":"dataflow/0","source_id":"` + src + `","low_watermark":` + w + `}`
	}
	state := filepath.Join(dir, "state.json")
	out, err := runFrontier(t, "frontier", "step", "--profile", pf, "--state", "", "--command", write("a.json", advance("source:m3:a", "7")), "--next", state, "--json=false")
	if err != nil || !strings.HasPrefix(out, "accepted: sha256:") {
		t.Fatalf("advance: %v\n%s", err, out)
	}
	out, err = runFrontier(t, "frontier", "step", "--profile", pf, "--state", state, "--command", write("b.json", advance("source:m3:a", "3")), "--next", "", "--json")
	if !errors.Is(err, errChecksFailed) || !strings.Contains(out, `"code":"FRONTIER_REGRESSION"`) {
		t.Fatalf("regression: %v\n%s", err, out)
	}
	_, err = runFrontier(t, "frontier", "step", "--profile", filepath.Join(dir, "missing.json"), "--state", "", "--command", pf, "--next", "", "--json=false")
	if exitCode(err) != exitUsage {
		t.Fatalf("missing file: exit %d, want %d", exitCode(err), exitUsage)
	}
}

// resetFlags sets every flag of cmd and its subcommands back to its
// default, as in a fresh process. A slice flag is emptied: none of the
// commands reset here has a slice with a default, and pflag appends to
// what a slice holds once it has been set, so an empty one is what makes
// the next run's values its only ones.
func resetFlags(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil)
		} else {
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	})
	for _, sub := range cmd.Commands() {
		resetFlags(sub)
	}
}
