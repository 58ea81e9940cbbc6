package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// childEnv makes the test binary, re-executed, serve a standalone sandbox
// through sandbox.Run — the code path "flrh sandbox" runs — instead of
// running tests, so that the tests below can kill a real process.
const childEnv = "FLRH_SANDBOX_TEST_CHILD_STATE"

func TestMain(m *testing.M) {
	if state, ok := os.LookupEnv(childEnv); ok {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := sandbox.Run(ctx, sandbox.Config{Addr: "127.0.0.1:0", StatePath: state}, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type child struct {
	cmd   *exec.Cmd
	url   string
	lines chan string
}

// spawn starts a sandbox process on the state file and waits until it
// listens.
func spawn(t *testing.T, state string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &child{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	select {
	case line := <-c.lines:
		const prefix = "flrh sandbox: listening on "
		if !strings.HasPrefix(line, prefix) {
			t.Fatalf("first line %q", line)
		}
		c.url = strings.Fields(strings.TrimPrefix(line, prefix))[0]
	case <-time.After(30 * time.Second):
		t.Fatal("the sandbox process did not start listening")
	}
	return c
}

// The crash test of the destination itself: a mutation is applied and its
// answer dropped; the adapter reports unknown; the process is killed with
// SIGKILL; a new process on the same state file still answers the lookup
// "applied", the reconciler confirms success, and a retry with the same key
// is a replay, not a second mutation.
func TestKilledSandboxStillKnowsWhatItApplied(t *testing.T) {
	state := filepath.Join(t.TempDir(), "ledger.json")
	c1 := spawn(t, state)
	resp, err := http.Post(c1.url+"/_sandbox/faults", "application/json", strings.NewReader(`{"key":"effect:crash","times":1,"drop":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	in := fixture.Intent("effect:crash", payload)
	r, err := adapterFor(t, c1.url+sandbox.EffectsPath).Execute(context.Background(), in)
	if err != nil || r.Outcome != effect.Unknown {
		t.Fatalf("dropped attempt: %+v %v", r, err)
	}
	if err := c1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c1.cmd.Wait()

	c2 := spawn(t, state)
	a := adapterFor(t, c2.url+sandbox.EffectsPath)
	res, err := effect.Reconcile(context.Background(), a, "effect:crash", r.ContentDigest, effect.Plan{Backoff: []time.Duration{0}})
	if err != nil || res.Status != effect.ConfirmedSuccess {
		t.Fatalf("after the crash: %+v %v", res, err)
	}
	r2, err := a.Execute(context.Background(), in)
	if err != nil || r2.Outcome != effect.Succeeded || !r2.Replayed {
		t.Fatalf("retry after the crash: %+v %v", r2, err)
	}
	resp, err = http.Get(c2.url + "/_sandbox/mutations")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ms, err := sandbox.DecodeLedger(doc)
	if err != nil || len(ms) != 1 || ms[0].IdempotencyKey != "effect:crash" || ms[0].ContentDigest != r.ContentDigest {
		t.Fatalf("ledger after the crash: %+v %v", ms, err)
	}

	// SIGTERM shuts down gracefully: exit status 0 and a closing line.
	if err := c2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var last string
	for line := range c2.lines {
		last = line
	}
	if err := c2.cmd.Wait(); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	if last != "flrh sandbox: stopped after 1 mutations" {
		t.Errorf("last line %q", last)
	}
}
