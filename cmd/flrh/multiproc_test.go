package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
)

// These tests run several real "flrh serve" processes against one
// PostgreSQL schema — the multi-machine deployment, on one machine. They
// need FLRH_TEST_POSTGRES and skip without it.

// pgStoreURL returns a --store URL for a fresh schema of the test
// database, dropped when the test ends, and the store opened on it.
func pgStoreURL(t *testing.T) (string, *postgres.Store) {
	t.Helper()
	if os.Getenv("FLRH_TEST_POSTGRES") != "" && testing.Short() {
		t.Skip("runs real processes")
	}
	schema, spec, dsn := postgresSpec(t, "flrh_mp_", "run the multi-process tests")
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // before the schema is dropped: cleanups run last first
	return spec, st
}

// syncBuffer collects a process's standard error while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startQuietSandbox runs "flrh sandbox --quiet" with a journal and returns
// its base URL.
func startQuietSandbox(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "sandbox", "--quiet", "--addr", "127.0.0.1:0", "--state", filepath.Join(t.TempDir(), "sandbox.json"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	i := strings.Index(line, "http://")
	if err != nil || i < 0 {
		t.Fatalf("sandbox did not announce itself: %q %v", line, err)
	}
	return strings.Fields(line[i:])[0]
}

// serveProc is one running "flrh serve".
// bearerCall sends an API request to base with a bearer token (and a JSON
// body when body is not empty) and returns the status and the answer.
func bearerCall(t *testing.T, base, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// streamEnd opens run's event stream with token and returns a channel
// that receives the stream's last "event: …" line once it ends.
func (p *serveProc) streamEnd(t *testing.T, run, token string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest("GET", p.base+"/v1/runs/"+run+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	ended := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		last := ""
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "event: ") {
				last = sc.Text()
			}
		}
		ended <- last
	}()
	return ended
}

type serveProc struct {
	cmd    *exec.Cmd
	base   string // http://HOST:PORT
	stderr *syncBuffer
	stdout *syncBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
}

// startServe starts "flrh serve" on a free loopback port and waits for it
// to announce its address. It is stopped (SIGCONT, then SIGKILL) when the
// test ends, unless the test stopped it first.
func startServe(t *testing.T, bin string, env []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{stderr: &syncBuffer{}, stdout: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	line, err := rd.ReadString('\n')
	if err != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		t.Fatalf("serve did not announce itself: %v\n%s", err, p.stderr)
	}
	p.stdout.Write([]byte(line))
	go func() {
		io.Copy(p.stdout, rd)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("serve said %q", line)
	}
	p.base = strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("serve %d stderr:\n%s", p.cmd.Process.Pid, p.stderr)
		}
	})
	return p
}

// owner is the lease owner name this process uses.
func (p *serveProc) owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("serve:%s:%d", host, p.cmd.Process.Pid)
}

// stopped reports whether the process is stopped by a signal (state T).
func (p *serveProc) stopped() bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}

// awaitOutcome waits up to 30 s for run id, through the serve process at
// base, to end, and returns its outcome ("" if it did not end).
func awaitOutcome(t *testing.T, base, id string) string {
	t.Helper()
	return awaitRun(t, base, id, func(state, outcome string) bool { return outcome != "" }).outcome
}

// awaitState waits up to 30 s for run id, through the serve process at
// base, to be in state, and fails t if it is not.
func awaitState(t *testing.T, base, id, state string) {
	t.Helper()
	if got := awaitRun(t, base, id, func(s, _ string) bool { return s == state }); got.state != state {
		t.Fatalf("run %s is %s, not %s", id, got.state, state)
	}
}

// awaitRun reads run id through the serve process at base until done
// says of its state and outcome that it is done, or 30 s have passed, and
// returns them as last read.
func awaitRun(t *testing.T, base, id string, done func(state, outcome string) bool) (last struct{ state, outcome string }) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/v1/runs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Run struct {
				State   string `json:"state"`
				Outcome string `json:"outcome"`
			} `json:"run"`
		}
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		last.state, last.outcome = page.Run.State, page.Run.Outcome
		if done(last.state, last.outcome) || time.Now().After(deadline) {
			return last
		}
	}
}

// startRefund starts a refund run through a serve process's API.
func startRefund(t *testing.T, base, runID string, amount int) {
	t.Helper()
	if err := postRefund(base, runID, amount); err != nil {
		t.Fatal(err)
	}
}

// postRefund asks a serve process to start a refund run; an error says
// why it did not answer 201 Created.
func postRefund(base, runID string, amount int) error {
	body := fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":{"refunds":[{"id":"%s-r","amount":%d,"payee":"p-%s","reason":"damaged item"}]}}`,
		runID, runID, amount, runID)
	resp, err := http.Post(base+"/v1/runs", "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("start %s: %w", runID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("start %s: %s %s", runID, resp.Status, b)
	}
	return nil
}

// onePerRefund holds the sandbox at base to one mutation under its own
// idempotency key for each of the refunds.
func onePerRefund(t *testing.T, base string, refunds int) {
	t.Helper()
	muts := mutations(t, base)
	keys := map[string]bool{}
	for _, m := range muts {
		keys[fmt.Sprint(m["idempotency_key"])] = true
	}
	if len(muts) != refunds || len(keys) != refunds {
		t.Fatalf("the destination applied %d mutations under %d keys for %d refunds", len(muts), len(keys), refunds)
	}
}

// stopServe sends p SIGTERM and holds it to exiting 0 within 60 s.
func stopServe(t *testing.T, p *serveProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", p.err, p.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s of SIGTERM\n%s", p.stderr)
	}
}

// everyRunDone waits, within the given time, until no run of st is live.
func everyRunDone(t *testing.T, st store.Store, within time.Duration) {
	t.Helper()
	eventually(t, "every run done", within, func() bool {
		ids, err := st.Live(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(ids) == 0
	})
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// record is what the store holds of a run, compared before and after a
// stale runner resumes.
type record struct {
	Run      store.Run
	Events   int
	Intents  int
	Attempts int
	Receipts int
}

func readRecord(t *testing.T, st *postgres.Store, id string) record {
	t.Helper()
	ctx := context.Background()
	run, err := st.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := st.Intents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec := record{Run: run, Events: len(evs), Intents: len(ins)}
	for _, in := range ins {
		as, err := st.Attempts(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		rec.Attempts += len(as)
	}
	rcs, err := st.Receipts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec.Receipts = len(rcs)
	return rec
}

// Three serve processes share one schema. Runs started through one of them
// are advanced by all three; one process is stopped with SIGTERM halfway
// and gives back what it held; every run completes exactly once, with one
// mutation per refund at the destination.
func TestServeProcessesShareOnePostgres(t *testing.T) {
	storeURL, st := pgStoreURL(t)
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	// Each mutation takes a little while, so that runs overlap and no one
	// process can take them all.
	installFault(t, sb, `{"times":100000,"delay_ms":25}`)
	procs := make([]*serveProc, 3)
	for i := range procs {
		procs[i] = startServe(t, bin, nil, "--store", storeURL, "--runners", "2", "--lease-ttl", "5s",
			"--destination", sb+"/v1/effects", "--grace", "20s")
	}
	const runs = 60
	for i := 0; i < runs; i++ {
		startRefund(t, procs[0].base, fmt.Sprintf("mp-%03d", i), 10+i%80)
	}
	ctx := context.Background()
	live := func() int {
		ids, err := st.Live(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	eventually(t, "a third of the runs done", 60*time.Second, func() bool { return live() <= runs*2/3 })

	// SIGTERM: the process finishes or releases what it holds and exits 0.
	quit := procs[2]
	stopServe(t, quit)
	if !strings.Contains(quit.stdout.String(), "flrh serve: stopped") {
		t.Fatalf("serve did not report a clean stop: %s", quit.stdout)
	}
	var held int
	conn, err := pgx.Connect(ctx, os.Getenv("FLRH_TEST_POSTGRES"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := mustQuery(t, storeURL, "schema")
	runsTable := pgx.Identifier{schema, "runs"}.Sanitize()
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+runsTable+` WHERE outcome = '' AND lease_owner = $1`, quit.owner()).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Fatalf("the stopped process still holds %d live runs; its log:\n%s", held, quit.stderr)
	}

	everyRunDone(t, st, 90*time.Second)
	owners := map[string]int{}
	for i := 0; i < runs; i++ {
		id := fmt.Sprintf("mp-%03d", i)
		rec := readRecord(t, st, id)
		if rec.Run.State != "SUCCEEDED" || rec.Receipts != 1 || rec.Intents != 1 {
			t.Errorf("%s ended %s with %d intents and %d receipts", id, rec.Run.State, rec.Intents, rec.Receipts)
		}
		owners[rec.Run.Lease.Owner]++
	}
	onePerRefund(t, sb, runs)
	if len(owners) < 2 {
		t.Fatalf("every run was finished by one process: %v", owners)
	}
	t.Logf("runs finished per process: %v", owners)
	if out, err := flrh(bin, nil, "store", "check", "--store", storeURL); err != nil {
		t.Fatalf("store check after the campaign: %v\n%s", err, out)
	}
}

// mustQuery returns a query parameter of a URL.
func mustQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get(key)
}

// Split brain with runner processes: process A stops itself (SIGSTOP) at a
// cut point while it owns a run; once its lease has lapsed the run is taken
// over; then A is resumed with SIGCONT. Whatever A attempts after resuming
// is refused — it commits nothing, publishes no receipt and sends nothing —
// and the destination holds exactly one mutation for the refund.
func TestSplitBrainRunnerProcesses(t *testing.T) {
	cases := []struct {
		name string
		cut  string
		// hold: the run is taken over by a lease that does nothing while A
		// resumes (a new owner between its claim and its first act), so A
		// finds its own attempt still in flight and would send it.
		hold       bool
		stoppedHas int // mutations while A is stopped
		// aSays is what A's log says once it is refused: any one of these.
		// A resumed runner that finds the run finished may stop at either
		// of two checks before a send — its attempt no longer in flight,
		// or its lease no longer renewable — depending on which it reaches
		// first; both refuse before anything leaves the process.
		aSays []string
	}{
		{name: "taken-over-and-finished/after-intent-commit", cut: "after-intent-commit", stoppedHas: 0, aSays: []string{"nothing in flight", "not sending"}},
		{name: "taken-over-and-finished/after-apply-before-receipt", cut: "after-apply-before-receipt", stoppedHas: 1, aSays: []string{"FENCED"}},
		{name: "taken-over-not-yet-acted/after-intent-commit", cut: "after-intent-commit", hold: true, stoppedHas: 0, aSays: []string{"not sending"}},
	}
	bin := buildFlrh(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			storeURL, st := pgStoreURL(t)
			ctx := context.Background()
			sb := startQuietSandbox(t, bin)
			common := []string{"--store", storeURL, "--runners", "1", "--lease-ttl", "1s", "--destination", sb + "/v1/effects"}
			a := startServe(t, bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + c.cut, "FLRH_FAULT_ACTION=stop"}, common...)
			// A's runner may reach its cut, and the whole process stop,
			// before its handler has answered the start: the answer is
			// awaited once A is resumed, not before it stops.
			started := make(chan error, 1)
			go func() { started <- postRefund(a.base, "sb-1", 42) }()
			eventually(t, "A stopped at "+c.cut, 30*time.Second, a.stopped)
			held, err := st.Run(ctx, "sb-1")
			if err != nil {
				t.Fatal(err)
			}
			if held.Lease.Owner != a.owner() {
				t.Fatalf("run leased to %q, want A (%s)", held.Lease.Owner, a.owner())
			}
			if n := len(mutations(t, sb)); n != c.stoppedHas {
				t.Fatalf("%d mutations while A is stopped at %s, want %d", n, c.cut, c.stoppedHas)
			}

			var b *serveProc
			if c.hold {
				// Once A's lease has lapsed, store check names it as stuck
				// (and exits 1: a person may be needed).
				eventually(t, "store check reporting A's stuck lease", 30*time.Second, func() bool {
					out, err := flrh(bin, nil, "store", "check", "--json", "--stuck-after", "0s", "--store", storeURL)
					var rep storeReport
					if jerr := json.Unmarshal([]byte(out), &rep); err == nil || jerr != nil {
						return false
					}
					return len(rep.StuckLeases) == 1 && rep.StuckLeases[0].RunID == "sb-1" && rep.StuckLeases[0].Owner == a.owner() &&
						rep.StuckLeases[0].Generation == held.Lease.Generation && rep.Backend == "postgres" && rep.SchemaVersion == postgres.SchemaVersion
				})
				// Take the run and sit on it.
				var l store.Lease
				eventually(t, "A's lease lapsing", 30*time.Second, func() bool {
					l, err = st.AcquireLease(ctx, "sb-1", "new-owner", time.Minute)
					return err == nil
				})
				if l.Generation <= held.Lease.Generation {
					t.Fatalf("takeover at generation %d, A held %d", l.Generation, held.Lease.Generation)
				}
				before := readRecord(t, st, "sb-1")
				resumeAndCheck(t, a, st, sb, before, c.aSays, c.stoppedHas)
				// The new owner lets go; the run finishes with one mutation.
				if err := st.ReleaseLease(ctx, l); err != nil {
					t.Fatal(err)
				}
				b = startServe(t, bin, nil, common...)
			} else {
				b = startServe(t, bin, nil, common...)
				eventually(t, "B finishing the run", 60*time.Second, func() bool {
					r, err := st.Run(ctx, "sb-1")
					return err == nil && r.Outcome != ""
				})
				before := readRecord(t, st, "sb-1")
				if before.Run.Lease.Owner != b.owner() || before.Run.Lease.Generation <= held.Lease.Generation {
					t.Fatalf("run finished under %q generation %d; want B (%s) above %d", before.Run.Lease.Owner, before.Run.Lease.Generation, b.owner(), held.Lease.Generation)
				}
				resumeAndCheck(t, a, st, sb, before, c.aSays, 1)
			}
			select {
			case err := <-started:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("A, resumed, never answered the start of sb-1")
			}
			eventually(t, "the run finishing", 60*time.Second, func() bool {
				r, err := st.Run(ctx, "sb-1")
				return err == nil && r.Outcome != ""
			})
			final := readRecord(t, st, "sb-1")
			muts := mutations(t, sb)
			if final.Run.State != "SUCCEEDED" || final.Receipts != 1 || len(muts) != 1 {
				t.Fatalf("run ended %s with %d receipts; %d mutations at the destination, want SUCCEEDED, 1, 1", final.Run.State, final.Receipts, len(muts))
			}
			if err := postgresVerify(t, bin, storeURL, "sb-1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// resumeAndCheck resumes the stopped process A and checks that, by the
// time its log shows it was refused, the run's record and the
// destination's ledger are exactly as they were.
func resumeAndCheck(t *testing.T, a *serveProc, st *postgres.Store, sandboxURL string, before record, says []string, mutationsBefore int) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A resuming and being refused ("+strings.Join(says, " or ")+")", 60*time.Second, func() bool {
		log := a.stderr.String()
		i := strings.Index(log, "resumed at")
		return i >= 0 && slices.ContainsFunc(says, func(s string) bool { return strings.Contains(log[i:], s) })
	})
	// A keeps running as an ordinary runner: give it a moment to try more.
	time.Sleep(500 * time.Millisecond)
	after := readRecord(t, st, before.Run.ID)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the stale runner changed the record:\nbefore %+v\nafter  %+v\n%s", before, after, a.stderr)
	}
	if n := len(mutations(t, sandboxURL)); n != mutationsBefore {
		t.Fatalf("the stale runner reached the destination: %d mutations, want %d", n, mutationsBefore)
	}
}

// postgresVerify runs "flrh verify" on runs of a PostgreSQL store.
func postgresVerify(t *testing.T, bin, storeURL string, runs ...string) error {
	t.Helper()
	out, err := flrh(bin, nil, append([]string{"verify", "--store", storeURL}, runs...)...)
	if err != nil {
		return fmt.Errorf("flrh verify: %v\n%s", err, out)
	}
	return nil
}

// Two serve processes on one schema hold different definitions of the same
// workflow id and version: one the built-in refund-agent, the other the
// refund-agent bundle, which replaces it there. Each run records the
// definition it was started under and is advanced only by the process
// holding it: every run ends, none is quarantined, and the last lease on
// each is its own process's. Before runs recorded their definition, the
// built-in process claimed bundle runs and refused their input.
func TestServeProcessesKeepToTheirDefinitions(t *testing.T) {
	storeURL, st := pgStoreURL(t)
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	dest := sb + "/v1/effects"
	builtin := startServe(t, bin, nil, "--store", storeURL, "--runners", "2", "--lease-ttl", "5s", "--destination", dest)
	bundled := startServe(t, bin, []string{"FLRH_PAYMENTS_URL=" + dest}, "--store", storeURL, "--runners", "2", "--lease-ttl", "5s",
		"--workflows", filepath.Join("..", "..", "examples", "refund-agent"))

	post := func(base, runID, input string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/runs", "application/json",
			strings.NewReader(fmt.Sprintf(`{"workflow":"refund-agent","run_id":%q,"input":%s}`, runID, input)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("start %s: %s %s", runID, resp.Status, b)
		}
	}
	const each = 12
	owner := map[string]*serveProc{}
	for i := 0; i < each; i++ {
		b, g := fmt.Sprintf("builtin-%02d", i), fmt.Sprintf("bundle-%02d", i)
		post(builtin.base, b, fmt.Sprintf(`{"refunds":[{"id":"%s-r","amount":%d,"payee":"p-%s","reason":"damaged item"}]}`, b, 10+i, b))
		post(bundled.base, g, fmt.Sprintf(`{"type":"refund.requested/1","payload":{"refund_id":"%s-r","amount":%d,"payee":"p-%s","reason":"damaged item"}}`, g, 10+i, g))
		owner[b], owner[g] = builtin, bundled
	}
	everyRunDone(t, st, 90*time.Second)
	digests := map[*serveProc]map[string]bool{builtin: {}, bundled: {}}
	for id, p := range owner {
		rec := readRecord(t, st, id)
		if rec.Run.Quarantine != "" || rec.Run.State != "SUCCEEDED" || rec.Receipts != 1 {
			t.Errorf("%s ended %s (quarantine %q) with %d receipts", id, rec.Run.State, rec.Run.Quarantine, rec.Receipts)
		}
		if rec.Run.Lease.Owner != p.owner() {
			t.Errorf("%s was last advanced by %s, want %s", id, rec.Run.Lease.Owner, p.owner())
		}
		digests[p][rec.Run.WorkflowDigest] = true
	}
	if len(digests[builtin]) != 1 || len(digests[bundled]) != 1 || fmt.Sprint(digests[builtin]) == fmt.Sprint(digests[bundled]) {
		t.Fatalf("recorded definitions: built-in process %v, bundle process %v; want one each, different", digests[builtin], digests[bundled])
	}
	if n := len(mutations(t, sb)); n != 2*each {
		t.Fatalf("the destination applied %d mutations for %d refunds", n, 2*each)
	}
}
