package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"flrh.dev/flrh/aif/schema"
)

func runAIF(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// Flags keep their values between Execute calls; start each run clean.
	for _, c := range rootCmd.Commands() {
		if c.Name() != "aif" {
			continue
		}
		for _, sub := range c.Commands() {
			sub.Flags().VisitAll(func(f *pflag.Flag) {
				_ = f.Value.Set(f.DefValue)
				f.Changed = false
			})
		}
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	rootCmd.SetArgs(nil)
	return out.String(), err
}

func TestAIFRunTMaze(t *testing.T) {
	out, err := runAIF(t, "aif", "run", "../../examples/aif/tmaze.json", "--obs", "../../examples/aif/tmaze.obs.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.705877", "choice (argmax): to-cue", "choice (argmax): to-right"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runAIF(t, "aif", "run", "../../examples/aif/tmaze.json", "--steps", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `{"kind":"flrh.aif.run"`) || !strings.Contains(out, `"probability":705876804`) {
		t.Errorf("json output: %s", out)
	}
	if err := schema.Validate([]byte(strings.TrimSpace(out))); err != nil {
		t.Errorf("run record does not match its schema: %v", err)
	}
}

func TestAIFReduce(t *testing.T) {
	out, err := runAIF(t, "aif", "reduce", "../../examples/aif/counts.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "restart-never-fails   -3.397237  accepted") {
		t.Errorf("reduce output:\n%s", out)
	}
	out, err = runAIF(t, "aif", "reduce", "--json", "../../examples/aif/counts.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate([]byte(strings.TrimSpace(out))); err != nil {
		t.Errorf("reduction report does not match its schema: %v", err)
	}
}

func TestAIFBadInputIsUsageError(t *testing.T) {
	_, err := runAIF(t, "aif", "run", "../../examples/aif/counts.json")
	if exitCode(err) != exitUsage {
		t.Fatalf("malformed model: exit %d (%v)", exitCode(err), err)
	}
	_, err = runAIF(t, "aif", "reduce", "../../examples/aif/tmaze.json")
	if exitCode(err) != exitUsage {
		t.Fatalf("malformed counts: exit %d (%v)", exitCode(err), err)
	}
}

func TestAIFRunChannels(t *testing.T) {
	out, err := runAIF(t, "aif", "run", "../../examples/aif/build.json", "--obs", "../../examples/aif/build.obs.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tick 4", "pick fix-spec > fix-spec (moved by core): fix-spec", "τ "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runAIF(t, "aif", "run", "--json", "../../examples/aif/build.json", "--obs", "../../examples/aif/build.obs.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate([]byte(strings.TrimSpace(out))); err != nil {
		t.Errorf("channel run record does not match its schema: %v", err)
	}
	if _, err := runAIF(t, "aif", "run", "../../examples/aif/build.json"); exitCode(err) != exitUsage {
		t.Errorf("channel model without --obs: %v", err)
	}
}
