package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"flrh.dev/flrh/internal/racebuild"
)

// buildFlrh builds the flrh binary once for the process tests: the first
// caller builds it, the others share it. Building it for each test took a
// link of the whole binary per test, enough on a loaded machine to run the
// package past its timeout. The binary's directory is removed by TestMain.
func buildFlrh(t *testing.T) string {
	t.Helper()
	flrhBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "flrh-test-bin-")
		if err != nil {
			flrhBin.err = err
			return
		}
		flrhBin.dir = dir
		bin := filepath.Join(dir, "flrh")
		args := []string{"build", "-o", bin}
		if racebuild.Enabled {
			// Under -race the processes race too: the multi-process,
			// signal and crash tests are where runners, the server and
			// their shutdown run concurrently for real.
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			flrhBin.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		flrhBin.path = bin
	})
	if flrhBin.err != nil {
		t.Fatal(flrhBin.err)
	}
	return flrhBin.path
}

// crashLeaseTTL is the lease a runner that may be killed takes: after a
// kill, resume waits (up to resumeWait) for it to lapse, so it is short;
// but a runner that is not killed must renew it before it lapses, and on a
// loaded machine a pass can stall for longer than a few hundred
// milliseconds (300ms here saw a live runner fenced mid-pass).
const (
	crashLeaseTTL = "3s"
	resumeWait    = "60s"
)

// flrhBin is the binary buildFlrh built, or why it could not.
var flrhBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	raceDir := ""
	if racebuild.Enabled && !strings.Contains(os.Getenv("GORACE"), "log_path=") {
		// The flrh processes the tests start write their race reports
		// into raceDir instead of a stderr the test may not read (or has
		// killed by then); any report fails the package. (A test binary
		// started by a test reports into its parent's.)
		var err error
		if raceDir, err = os.MkdirTemp("", "flrh-test-race-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" log_path="+filepath.Join(raceDir, "report")))
	}
	code := m.Run()
	if flrhBin.dir != "" {
		os.RemoveAll(flrhBin.dir)
	}
	if raceDir != "" {
		if raceReports(raceDir) {
			code = 1
		}
		os.RemoveAll(raceDir)
	}
	os.Exit(code)
}

// raceReports prints the race reports the flrh processes left in dir and
// says whether there were any.
func raceReports(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "race reports:", err)
		return true
	}
	found := false
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			b = []byte(err.Error())
		}
		if len(b) > 0 {
			found = true
			fmt.Fprintf(os.Stderr, "an flrh process the tests started reported a data race (%s):\n%s\n", e.Name(), b)
		}
	}
	return found
}

// startSandbox runs "flrh sandbox" as its own process and returns its base URL.
func startSandbox(t *testing.T, bin, state string) string {
	t.Helper()
	cmd := exec.Command(bin, "sandbox", "--addr", "127.0.0.1:0", "--state", state)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("sandbox did not announce itself: %v", err)
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("sandbox said %q", line)
	}
	return strings.Fields(line[i:])[0]
}

// crashRig starts a sandbox for one crash case in a directory of its own,
// tells it to fail as fault says (none when empty), and returns its base
// URL with the store and destination flags of the case.
func crashRig(t *testing.T, bin, fault string) (base, storeFlag, dest string) {
	t.Helper()
	dir := t.TempDir()
	base = startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	if fault != "" {
		installFault(t, base, fault)
	}
	return base, "--store=sqlite:" + filepath.Join(dir, "flrh.db"), "--destination=" + base + "/v1/effects"
}

// installFault adds a fault rule (a sandbox.Fault as JSON) to the sandbox
// at base.
func installFault(t *testing.T, base, rule string) {
	t.Helper()
	resp, err := http.Post(base+"/_sandbox/faults", "application/json", strings.NewReader(rule))
	if err != nil {
		t.Fatalf("install fault %s: %v", rule, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("install fault %s: %s", rule, resp.Status)
	}
}

func mutations(t *testing.T, base string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/_sandbox/mutations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var doc struct {
		Mutations []map[string]any `json:"mutations"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("ledger %s: %v", body, err)
	}
	return doc.Mutations
}

// verifyAndReplay checks run's record with flrh verify and flrh replay:
// it must verify, and replay byte for byte.
func verifyAndReplay(t *testing.T, bin, run, storeFlag string) {
	t.Helper()
	if out, err := flrh(bin, nil, "verify", run, storeFlag); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("verify %s: %v\n%s", run, err, out)
	}
	if out, err := flrh(bin, nil, "replay", run, storeFlag); err != nil || !strings.Contains(out, "identical") {
		t.Fatalf("replay %s: %v\n%s", run, err, out)
	}
}

func flrh(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// flrhCode runs the binary as flrh does and returns its output and exit
// status; a binary that could not be run fails the test.
func flrhCode(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	out, err := flrh(bin, env, args...)
	if ee, ok := err.(*exec.ExitError); ok {
		return out, ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out, 0
}

// TestCrashAtEveryCutPoint really kills the runner process with SIGKILL at
// each named cut point (fault plan items 16–20), restarts it, and checks the
// invariants: no effect without a committed intent, exactly one mutation at
// the destination per logical effect, no unknown outcome reported as
// success, the run reaching its expected terminal state, and a record that
// verifies.
func TestCrashAtEveryCutPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	cases := []struct {
		cut    string
		fault  string // sandbox fault rule to install first, if any
		input  string
		wantN  int // mutations after recovery
		before int // mutations right after the crash
	}{
		{cut: "before-intent-commit", input: `{"refunds":[{"id":"c1","amount":10,"payee":"alice","reason":"r"}]}`, wantN: 1, before: 0},
		{cut: "after-intent-commit", input: `{"refunds":[{"id":"c2","amount":10,"payee":"alice","reason":"r"}]}`, wantN: 1, before: 0},
		{cut: "after-apply-before-receipt", input: `{"refunds":[{"id":"c3","amount":10,"payee":"alice","reason":"r"}]}`, wantN: 1, before: 1},
		{cut: "during-reconcile", fault: `{"times":1,"drop":true}`, input: `{"refunds":[{"id":"c4","amount":10,"payee":"alice","reason":"r"}]}`, wantN: 1, before: 1},
	}
	for _, c := range cases {
		t.Run(c.cut, func(t *testing.T) {
			base, storeFlag, dest := crashRig(t, bin, c.fault)
			out, err := flrh(bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + c.cut},
				"run", "start", "builtin:refund-agent", "--id", "r", "--input-json", c.input, storeFlag, dest, "--lease-ttl", crashLeaseTTL)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("runner was not killed at %s: %v\n%s", c.cut, err, out)
			}
			if n := len(mutations(t, base)); n != c.before {
				t.Fatalf("right after the crash the destination has %d mutations, want %d", n, c.before)
			}
			out, err = flrh(bin, nil, "run", "resume", "r", storeFlag, dest, "--wait", resumeWait)
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			if !strings.Contains(out, "run r: SUCCEEDED") {
				t.Fatalf("after recovery:\n%s", out)
			}
			if n := len(mutations(t, base)); n != c.wantN {
				t.Fatalf("destination has %d mutations for one logical effect", n)
			}
			verifyAndReplay(t, bin, "r", storeFlag)
		})
	}
}

// TestApproveThroughTheCLI drives a large refund through the commands a
// person uses: start, see what it waits for, approve, see it finish.
func TestApproveThroughTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	storeFlag := "--store=" + filepath.Join(dir, "flrh.db")
	dest := "--destination=" + base + "/v1/effects"
	out, err := flrh(bin, nil, "run", "start", "builtin:refund-agent", "--id", "big", "--input-json",
		`{"refunds":[{"id":"b1","amount":700,"payee":"bob","reason":"broken"}]}`, storeFlag, dest)
	if err != nil || !strings.Contains(out, "WAIT_APPROVAL") || !strings.Contains(out, "700 to bob") {
		t.Fatalf("start: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "approve", "big", "approval:nope", "--as", "alice", storeFlag, dest); err == nil {
		t.Fatalf("approving something the run does not wait for succeeded:\n%s", out)
	}
	if out, err := flrh(bin, nil, "approve", "big", "approval:b1", storeFlag, dest); err == nil || !strings.Contains(out, "--as") {
		t.Fatalf("approval without --as: %v\n%s", err, out)
	}
	out, err = flrh(bin, nil, "approve", "big", "approval:b1", "--as", "alice", storeFlag, dest)
	if err != nil || !strings.Contains(out, "run big: SUCCEEDED") {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	if n := len(mutations(t, base)); n != 1 {
		t.Fatalf("%d mutations", n)
	}
	out, _ = flrh(bin, nil, "run", "list", storeFlag)
	if !strings.Contains(out, "big") || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("run list:\n%s", out)
	}
	fmt.Fprint(io.Discard, out)
}

// TestCrashCampaign is a seeded, bounded campaign of random crashes: for
// each case it draws a refund (small, or large so that a person must
// approve), a destination fault (none, a dropped answer after applying, a
// transient 503), and a cut point; it kills the runner there when the run
// reaches it, recovers, approves what waits, and checks the invariants.
// FLRH_CRASH_SEED picks another campaign; CI runs the default one.
func TestCrashCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	seed := uint64(20261129)
	if s := os.Getenv("FLRH_CRASH_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("crash campaign seed %d", seed)
	next := func(n int) int { // splitmix64, so the campaign replays from its seed
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return int((z ^ (z >> 31)) % uint64(n))
	}
	bin := buildFlrh(t)
	cuts := []string{"before-intent-commit", "after-intent-commit", "after-apply-before-receipt", "during-reconcile"}
	faults := []string{"", `{"times":1,"drop":true}`, `{"times":1,"status":503}`}
	for i := 0; i < 6; i++ {
		amount := []int{20, 700}[next(2)]
		fault, cut := faults[next(len(faults))], cuts[next(len(cuts))]
		name := fmt.Sprintf("%d-amount%d-%s", i, amount, cut)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
			if fault != "" {
				installFault(t, base, fault)
			}
			storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
			dest := "--destination=" + base + "/v1/effects"
			crash := []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + cut}
			input := fmt.Sprintf(`{"refunds":[{"id":"x%d","amount":%d,"payee":"bob","reason":"r"}]}`, i, amount)
			out, err := flrh(bin, crash, "run", "start", "builtin:refund-agent", "--id", "r", "--input-json", input, storeFlag, dest, "--lease-ttl", crashLeaseTTL)
			killed := err != nil
			if !killed && strings.Contains(out, "WAIT_APPROVAL") {
				out, err = flrh(bin, crash, "approve", "r", fmt.Sprintf("approval:x%d", i), "--as", "alice", storeFlag, dest, "--lease-ttl", crashLeaseTTL)
				killed = err != nil
			}
			if killed {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("runner failed without being killed: %v\n%s", err, out)
				}
			}
			out, err = flrh(bin, nil, "run", "resume", "r", storeFlag, dest, "--wait", resumeWait)
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			if strings.Contains(out, "WAIT_APPROVAL") {
				if out, err = flrh(bin, nil, "approve", "r", fmt.Sprintf("approval:x%d", i), "--as", "alice", storeFlag, dest); err != nil {
					t.Fatalf("approve: %v\n%s", err, out)
				}
			}
			if !strings.Contains(out, "run r: SUCCEEDED") {
				t.Fatalf("run did not succeed (killed=%v):\n%s", killed, out)
			}
			if n := len(mutations(t, base)); n != 1 {
				t.Fatalf("%d mutations for one logical effect", n)
			}
			verifyAndReplay(t, bin, "r", storeFlag)
		})
	}
}
