package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/protocol"
)

// sandboxChildEnv carries the command line of a re-executed test binary
// that runs the flrh main function instead of tests.
const sandboxChildEnv = "FLRH_CLI_SANDBOX_CHILD_ARGS"

// TestSandboxCLIChild is not a test: when the environment asks for it, it
// becomes the flrh command itself, so that the tests below can start, kill
// and restart "flrh sandbox" as a real process.
func TestSandboxCLIChild(t *testing.T) {
	args, ok := os.LookupEnv(sandboxChildEnv)
	if !ok {
		t.Skip("helper process only")
	}
	os.Args = append([]string{"flrh"}, strings.Fields(args)...)
	main()
}

func flrhProcess(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxCLIChild$")
	cmd.Env = append(os.Environ(), sandboxChildEnv+"="+strings.Join(args, " "))
	return cmd
}

// startSandboxProcess runs "flrh sandbox" and returns it and its base URL.
func startSandboxProcess(t *testing.T, state string) (*exec.Cmd, string) {
	t.Helper()
	cmd := flrhProcess(t, "sandbox", "--addr", "127.0.0.1:0", "--state", state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		f := strings.Fields(strings.TrimPrefix(l, "flrh sandbox: listening on "))
		if len(f) == 0 || !strings.HasPrefix(f[0], "http://127.0.0.1:") {
			t.Fatalf("unexpected first line %q", l)
		}
		return cmd, f[0]
	case <-time.After(30 * time.Second):
		t.Fatal("flrh sandbox did not start")
	}
	return nil, ""
}

func TestSandboxCommandSurvivesSIGKILL(t *testing.T) {
	state := filepath.Join(t.TempDir(), "sandbox.json")
	p1, url := startSandboxProcess(t, state)
	installFault(t, url, `{"key":"effect:cli","times":1,"drop":true}`)

	approval := "sha256:1515151515151515151515151515151515151515151515151515151515151515"
	in := effect.Intent{Payload: []byte(`{"amount":40,"payee":"acct:1"}`), Effect: protocol.EffectIntent{
		Kind: protocol.KindEffectIntent, IntentID: "intent:cli", EffectType: "refund.issue", IdempotencyKey: "effect:cli",
		ActionDigest:      "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		DestinationDigest: "sha256:1212121212121212121212121212121212121212121212121212121212121212",
		ApprovalDigest:    &approval,
	}}
	a, err := httpadapter.New(httpadapter.Config{URL: url + sandbox.EffectsPath, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Execute(context.Background(), in)
	if err != nil || r.Outcome != effect.Unknown {
		t.Fatalf("applied-but-dropped attempt: %+v %v", r, err)
	}
	p1.Process.Signal(syscall.SIGKILL)
	p1.Wait()

	p2, url2 := startSandboxProcess(t, state)
	a2, _ := httpadapter.New(httpadapter.Config{URL: url2 + sandbox.EffectsPath, Timeout: 5 * time.Second})
	l, err := a2.Lookup(context.Background(), "effect:cli", r.ContentDigest)
	if err != nil || l.Status != effect.ConfirmedSuccess {
		t.Fatalf("lookup after restart: %+v %v", l, err)
	}
	if ms, err := os.ReadFile(state); err != nil || strings.Count(string(ms), `"idempotency_key"`) != 1 {
		t.Errorf("state file after the crash: %s %v", ms, err)
	}
	// SIGTERM is a graceful stop: exit status 0.
	if err := p2.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p2.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("flrh sandbox after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("flrh sandbox did not stop after SIGTERM")
	}
}

func TestSandboxCommandRefusesRemoteAddress(t *testing.T) {
	cmd := flrhProcess(t, "sandbox", "--addr", "0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "loopback") {
		t.Errorf("exit %v, output %s", err, out)
	}
}
