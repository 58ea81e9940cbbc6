package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store/sqlite"
)

var proposalRef = regexp.MustCompile(`proposal:[0-9a-f]{64}`)

// startUnchecked creates a run in the rig's store through a runner with
// no adapters (so no check that its first effect can be sent), as a run
// created before its adapter changed would be; the next pass meets the
// adapter.
func (c *cliRig) startUnchecked(ref, id, input string) {
	c.t.Helper()
	name, ok := strings.CutPrefix(ref, "example:")
	if !ok {
		c.t.Fatalf("startUnchecked takes example:NAME, not %s", ref)
	}
	wf, _, err := bundle.LoadExample(name)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, strings.TrimPrefix(c.store, "--store=sqlite:"), sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	defer st.Close()
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := r.Start(ctx, id, wf.ID(), wf.Version(), []byte(input)); err != nil {
		c.t.Fatalf("start %s: %v", id, err)
	}
}

// exitStatus is the exit status of a finished flrh process (0 on success).
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return ee.ExitCode()
}

// cliRig runs flrh processes against one SQLite store and one sandbox.
type cliRig struct {
	t          *testing.T
	bin, store string
	dest, base string
}

// waiting starts two runs that wait for a person: "big", a large refund
// waiting for the approval req, and "gw", a goodwill case whose proposal
// waits for a choice among options.
func (c *cliRig) waiting() (req, proposal string) {
	out := c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest)
	req = approvalRequest.FindString(out)
	out = c.ok("run", "start", "example:support-agent", "--id", "gw", "--input-json", goodwillRefund, c.dest)
	return req, proposalRef.FindString(out)
}

func newCLIRig(t *testing.T) *cliRig {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	return &cliRig{t: t, bin: bin, store: "--store=sqlite:" + filepath.Join(dir, "flrh.db"), dest: "--destination=" + base + "/v1/effects", base: base}
}

// run runs flrh with the rig's store and returns its output and exit status.
func (c *cliRig) run(args ...string) (string, int) {
	c.t.Helper()
	return c.status(append(args, c.store)...)
}

// status runs flrh with exactly the arguments given (no store flag added)
// and returns its output and exit status.
func (c *cliRig) status(args ...string) (string, int) {
	c.t.Helper()
	out, err := flrh(c.bin, nil, args...)
	return out, exitStatus(c.t, err)
}

// must runs flrh with exactly the arguments given (no store flag added)
// and fails the test unless it exits 0.
func (c *cliRig) must(args ...string) string {
	c.t.Helper()
	out, err := flrh(c.bin, nil, args...)
	if err != nil {
		c.t.Fatalf("flrh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ok runs flrh and fails the test unless it exits 0.
func (c *cliRig) ok(args ...string) string {
	c.t.Helper()
	out, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("flrh %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// events is how many events the run's log holds.
func (c *cliRig) events(run string) int {
	c.t.Helper()
	return strings.Count(c.ok("run", "events", run, "--json"), "\n")
}

const (
	largeRefund    = `{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":600,"payee":"alice","reason":"damaged"}}`
	goodwillRefund = `{"type":"refund.requested/1","payload":{"refund_id":"r-2","amount":60,"payee":"alice","reason":"goodwill"}}`
)

// A person's act the run does not take is an error, not an unchanged
// status with exit 0: an approval by someone the policy does not name, a
// choice on a run that offers none, on a proposal it did not offer, or of
// an option it did not offer. Nothing is handed to the run for a choice it
// does not wait for; the run still takes the right act afterwards.
func TestRefusedActsFailOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	out := c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest)
	req := approvalRequest.FindString(out)
	if req == "" {
		t.Fatalf("no approval request in:\n%s", out)
	}
	out = c.ok("run", "start", "example:support-agent", "--id", "gw", "--input-json", goodwillRefund, c.dest)
	if !strings.Contains(out, "waits for a choice on proposal:") || !strings.Contains(out, "path:store-credit") {
		t.Fatalf("start does not say the run waits for a choice:\n%s", out)
	}
	proposal := proposalRef.FindString(out)
	bigEvents, gwEvents := c.events("big"), c.events("gw")

	for _, bad := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"approval by someone the policy does not name", []string{"approve", "big", req, "--as", "mallory", c.dest}, 1, `the approval policy names "finance-lead"`},
		{"choice on a run that offers none", []string{"choose", "big", proposal, "path:store-credit", "--as", "dana"}, 1, "not waiting for a choice"},
		{"choice on a proposal not offered", []string{"choose", "gw", "proposal:nope", "path:store-credit", "--as", "dana"}, 1, "not waiting for a choice on proposal:nope"},
		{"option not offered", []string{"choose", "gw", proposal, "path:bogus", "--as", "dana"}, 2, "not path:bogus"},
		{"reconcile of an effect that does not exist", []string{"reconcile", "big", "intent:nope", "--confirmed", "--as", "bob"}, 1, "not waiting for reconciliation of intent:nope"},
		{"act on a run that does not exist", []string{"cancel", "nope", "--as", "carol"}, 1, "no run nope"},
	} {
		out, code := c.run(bad.args...)
		if code != bad.code || !strings.Contains(out, bad.says) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s", bad.name, code, bad.code, bad.says, out)
		}
	}
	if n := c.events("big"); n != bigEvents {
		t.Errorf("refused acts changed big: %d events, had %d", n, bigEvents)
	}
	if n := c.events("gw"); n != gwEvents {
		t.Errorf("refused acts changed gw: %d events, had %d", n, gwEvents)
	}
	if n := len(mutations(t, c.base)); n != 0 {
		t.Fatalf("%d mutations after refused acts", n)
	}

	if out := c.ok("approve", "big", req, "--as", "finance-lead", c.dest); !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Errorf("the named approver's approval did not settle the run:\n%s", out)
	}
	if out := c.ok("choose", "gw", proposal, "path:store-credit", "--as", "dana", c.dest); !strings.Contains(out, "SUCCEEDED (outcome success)") {
		t.Errorf("a choice among the options offered did not settle the run:\n%s", out)
	}
	for _, run := range []string{"big", "gw"} {
		c.ok("verify", run)
		c.ok("replay", run)
	}
	if out, code := c.run("cancel", "big", "--as", "carol", c.dest); code != 1 || !strings.Contains(out, "run big has ended (success): it takes no cancel") {
		t.Errorf("cancel of an ended run: exit %d:\n%s", code, out)
	}
}

// An input the workflow refuses, or a bundle that does not load, stops run
// start before anything is written: no store file, no run.
func TestRunStartRefusesBadInputBeforeWriting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "workflow.json"), []byte(`{"schema_version": "flrh-workflow/1",,}`), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "flrh.db")
	for _, bad := range []struct{ name, ref, input, says string }{
		{"amount not a number", "example:refund-agent", `{"type":"refund.requested/1","payload":{"refund_id":"r-1","amount":"forty","payee":"alice","reason":"x"}}`, "MALFORMED_ACCEPTED_EVENT"},
		{"unknown event type", "example:refund-agent", `{"type":"nosuch/1","payload":{}}`, "refuses the run's input"},
		{"not an event", "example:ops-agent", `[]`, "refuses the run's input"},
		{"malformed built-in input", "builtin:refund-agent", `{"refunds":[{"id":"x","amount":-5,"payee":"a","reason":"b"}]}`, "refuses the run's input"},
		{"malformed bundle", broken, `{}`, "workflow.json"},
		{"malformed run id", "example:refund-agent", largeRefund, "is not a run id"},
	} {
		id := "r1"
		if bad.name == "malformed run id" {
			id = "bad id!"
		}
		out, err := flrh(bin, nil, "run", "start", bad.ref, "--id", id, "--input-json", bad.input, "--store=sqlite:"+db)
		if code := exitStatus(t, err); code != 2 || !strings.Contains(out, bad.says) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%s", bad.name, code, bad.says, out)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%s: a store was created", bad.name)
		}
	}
}

// A command acts on the runs it names. Two live runs share the id and
// version refund-agent@1 under different definitions (the built-in Go
// workflow and the example bundle): starting a third run, or resuming all,
// must not advance either under the other's definition, which quarantined
// it.
func TestActsLeaveOtherDefinitionsAlone(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "ex", "--input-json", largeRefund, c.dest)
	c.ok("run", "start", "builtin:refund-agent", "--id", "bi", "--input-json", `{"refunds":[{"id":"b-1","amount":500,"payee":"bob","reason":"late"}]}`, c.dest)
	c.ok("run", "start", "example:support-agent", "--id", "gw", "--input-json", goodwillRefund, c.dest)
	out, code := c.run("run", "resume", c.dest)
	if code != 0 || !strings.Contains(out, "run bi left as it is") {
		t.Errorf("resume of every live run: exit %d, want 0 and a note on the run it cannot advance:\n%s", code, out)
	}
	c.ok("run", "resume", "bi", c.dest)
	if list := c.ok("run", "list"); strings.Contains(list, "written by workflow") {
		t.Fatalf("a run was quarantined:\n%s", list)
	}
	for _, run := range []string{"ex", "bi", "gw"} {
		c.ok("verify", run)
	}
}

// Commands that read one run say so when the store holds no such run,
// instead of printing nothing and exiting 0.
func TestReadingAMissingRun(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest)
	if out, code := c.run("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest); code != 2 || !strings.Contains(out, "run big already exists") {
		t.Errorf("a second run start with the same id: exit %d:\n%s", code, out)
	}
	if out := c.ok("run", "events", "big"); !strings.Contains(out, "input #1") || !strings.Contains(out, "by runner/run.start") {
		t.Errorf("run events does not say what was accepted:\n%s", out)
	}
	if out := c.ok("verify", "big"); !strings.Contains(out, "run big: verified — WAIT_APPROVAL, no outcome yet;") {
		t.Errorf("verify of a live run:\n%s", out)
	}
	for _, args := range [][]string{{"run", "show", "nope"}, {"run", "events", "nope"}, {"run", "trace", "nope"}, {"run", "export", "nope"},
		{"verify", "nope"}, {"replay", "nope"}} {
		if out, code := c.run(args...); code != 1 || !strings.Contains(out, "no run nope in this store") {
			t.Errorf("flrh %s: exit %d, want 1 saying the run is missing:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// run show --json and run list --json are JSON in the API's shape (snake
// case, a run's header as GET /v1/runs/{id} has it), carrying what the
// human output shows: the approval with its preview, the options offered.
func TestRunShowAndListJSON(t *testing.T) {
	c := newCLIRig(t)
	req, proposal := c.waiting()

	var big, gw struct {
		Run struct {
			ID, State string
			Workflow  string `json:"workflow"`
		} `json:"run"`
		Waiting []struct {
			RequestID string `json:"request_id"`
			Preview   string `json:"preview"`
		} `json:"waiting"`
		Offers []struct {
			ProposalID string   `json:"proposal_id"`
			Options    []string `json:"options"`
		} `json:"offers"`
	}
	if err := json.Unmarshal([]byte(c.ok("run", "show", "big", "--json")), &big); err != nil {
		t.Fatal(err)
	}
	if big.Run.ID != "big" || big.Run.State != "WAIT_APPROVAL" || big.Run.Workflow != "refund-agent" || len(big.Waiting) != 1 ||
		big.Waiting[0].RequestID != req || !strings.Contains(big.Waiting[0].Preview, "amount = 600") {
		t.Errorf("run show big --json: %+v", big)
	}
	if err := json.Unmarshal([]byte(c.ok("run", "show", "gw", "--json")), &gw); err != nil {
		t.Fatal(err)
	}
	if len(gw.Offers) != 1 || gw.Offers[0].ProposalID != proposal || !slices.Contains(gw.Offers[0].Options, "path:store-credit") {
		t.Errorf("run show gw --json: %+v", gw)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(c.ok("run", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0]["id"] != "big" || list[0]["state"] != "WAIT_APPROVAL" || list[1]["workflow"] != "support-agent" {
		t.Errorf("run list --json: %v", list)
	}
	// Filters, as the API's ?state= and ?workflow= have them.
	for _, f := range []struct {
		args []string
		want []string
	}{
		{[]string{"--state", "WAIT_APPROVAL"}, []string{"big"}},
		{[]string{"--workflow", "support-agent"}, []string{"gw"}},
		{[]string{"--workflow", "support-agent@2"}, nil},
		{[]string{"--state", "INGEST", "--workflow", "refund-agent@1"}, nil},
		{[]string{"--limit", "1"}, []string{"big"}},
		{[]string{"--after", "big"}, []string{"gw"}},
	} {
		if ids := c.listed(f.args...); !slices.Equal(ids, f.want) {
			t.Errorf("run list %v: %v, want %v", f.args, ids, f.want)
		}
	}
	for _, bad := range [][]string{{"--state", "waiting"}, {"--workflow", "a b"}, {"--limit", "0"}} {
		if out, code := c.run(append([]string{"run", "list"}, bad...)...); code != 2 {
			t.Errorf("run list %v: exit %d, want a usage error:\n%s", bad, code, out)
		}
	}
}

// listed is the ids of the runs flrh run list --json lists with args.
func (c *cliRig) listed(args ...string) []string {
	c.t.Helper()
	var got []map[string]any
	if err := json.Unmarshal([]byte(c.ok(append([]string{"run", "list", "--json"}, args...)...)), &got); err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r["id"].(string))
	}
	return ids
}

// Options stay pending after a person pauses the turn, but the machine
// takes no choice in HOLD: run show says so instead of offering the choose
// command, and choose is refused before anything reaches the run.
func TestPausedOptionsAreNotOffered(t *testing.T) {
	c := newCLIRig(t)
	out := c.ok("run", "start", "example:support-agent", "--id", "gw", "--input-json", goodwillRefund, c.dest)
	proposal := proposalRef.FindString(out)
	c.ok("mrp", "gw", "pause", "--as", "dana", c.dest)
	show := c.ok("run", "show", "gw")
	if strings.Contains(show, "choose with") || !strings.Contains(show, "MRP HOLD takes no choice now") {
		t.Errorf("run show after a pause:\n%s", show)
	}
	events := c.events("gw")
	if out, code := c.run("choose", "gw", proposal, "path:store-credit", "--as", "dana", c.dest); code != 1 || !strings.Contains(out, "does not take a choice now") {
		t.Errorf("choose after a pause: exit %d:\n%s", code, out)
	}
	if n := c.events("gw"); n != events {
		t.Errorf("a refused choice changed the run: %d events, had %d", n, events)
	}
}

// A checkpoint whose bytes no longer match its digest quarantines its run
// on the next pass; resume says the run is quarantined and why, and exits 1.
func TestResumeReportsAQuarantine(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest)
	path := strings.TrimPrefix(c.store, "--store=sqlite:")
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Damage on disk, past the store's own guard against updates: the
	// latest checkpoint's bytes (stored packed, read back as they were
	// given) written back edited, as they are.
	cp, err := st.Checkpoint(context.Background(), "big")
	if err != nil || !bytes.Contains(cp.Body, []byte(`"amount":600`)) {
		t.Fatalf("checkpoint of big: %v", err)
	}
	edited := bytes.ReplaceAll(cp.Body, []byte(`"amount":600`), []byte(`"amount":60`))
	if _, err = st.DB().Exec(`DROP TRIGGER checkpoints_no_update`); err == nil {
		_, err = st.DB().Exec(`UPDATE checkpoints SET body = ? WHERE run_id = 'big' AND n = (SELECT MAX(n) FROM checkpoints WHERE run_id = 'big')`, edited)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, code := c.run("run", "resume", "big", c.dest)
	if code != 1 || !strings.Contains(out, "run big: WAIT_APPROVAL QUARANTINED: checkpoint") {
		t.Fatalf("resume of a damaged run: exit %d:\n%s", code, out)
	}
	if n := len(mutations(t, c.base)); n != 0 {
		t.Fatalf("%d mutations from a damaged run", n)
	}
}

// replay --json reports each run as JSON: identical, with the verifier's
// and the replay's reports.
func TestReplayJSON(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "small", "--input-json", strings.Replace(largeRefund, "600", "40", 1), c.dest)
	var reps []struct {
		RunID     string `json:"run_id"`
		Identical bool   `json:"identical"`
		Replay    struct {
			Inputs   int   `json:"inputs_replayed"`
			Findings []any `json:"findings"`
		} `json:"replay"`
	}
	if err := json.Unmarshal([]byte(c.ok("replay", "small", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].RunID != "small" || !reps[0].Identical || reps[0].Replay.Inputs != 2 || len(reps[0].Replay.Findings) != 0 {
		t.Fatalf("replay --json: %+v", reps)
	}
}

// A lease length that is not positive is refused, not quietly replaced by
// the runner's default.
func TestLeaseTTLMustBePositive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	db := filepath.Join(t.TempDir(), "flrh.db")
	for _, args := range [][]string{{"run", "resume", "--lease-ttl", "0s"}, {"serve", "--lease-ttl", "-1s", "--addr", "127.0.0.1:0"}} {
		out, err := flrh(bin, nil, append(args, "--store=sqlite:"+db)...)
		if code := exitStatus(t, err); code != 2 || !strings.Contains(out, "--lease-ttl must be positive") {
			t.Errorf("flrh %s: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a store was created")
	}
}

// A run whose first pass never committed has no checkpoint naming its
// definition, and its workflow id names two (the built-in refund-agent and
// the example bundle). Resume takes the one whose pure step takes the
// run's first input — the example's — instead of the first loaded, the
// built-in one, which refused the input and bound the run to itself.
func TestRunWithoutCheckpointFindsItsDefinition(t *testing.T) {
	c := newCLIRig(t)
	// A reason too large for the payments request: the intent cannot be
	// bound, and the first pass commits no event.
	input := strings.NewReplacer(`"amount":600`, `"amount":40`, `"reason":"damaged"`, `"reason":"`+strings.Repeat("x", 2<<20)+`"`).Replace(largeRefund)
	path := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	// Asked for here, the run is refused before anything is created: the
	// example's HTTP adapter cannot send the refund.
	if out, code := c.run("run", "start", "example:refund-agent", "--id", "huge", "--input", path, c.dest); code != 2 || !strings.Contains(out, "refuses the run's input: the refund.pay effect it plans cannot be sent") || !strings.Contains(out, "BODY_TOO_LARGE") {
		t.Fatalf("start: exit %d, want 2 and the wire's reason:\n%s", code, out)
	}
	if out := c.ok("run", "list"); strings.Contains(out, "huge") {
		t.Fatalf("the refused run was created:\n%s", out)
	}
	// Created where the adapter was not at hand, the run meets it on its
	// first pass: parked with its reason (decision 1161) before any event
	// is committed.
	c.startUnchecked("example:refund-agent", "huge", input)
	parked := "QUARANTINED: tripwire DEGRADED_SAFE_MODE: unsendable: "
	if out, code := c.run("run", "resume", "huge", c.dest); code != 0 || !strings.Contains(out, parked) || !strings.Contains(out, "BODY_TOO_LARGE") {
		t.Fatalf("resume: exit %d:\n%s", code, out)
	}
	if out, code := c.run("run", "resume", "huge", c.dest); code != 0 || !strings.Contains(out, "BODY_TOO_LARGE") {
		t.Errorf("resume did not find the run parked under the example's definition: exit %d:\n%s", code, out)
	}
	if show := c.ok("run", "show", "huge"); !strings.Contains(show, "state INIT, no outcome yet, 0 events") || !strings.Contains(show, parked) {
		t.Errorf("show:\n%s", show)
	}
	if tr := c.ok("run", "trace", "huge"); strings.Contains(tr, "refused") {
		t.Errorf("the run was advanced under another definition:\n%s", tr)
	}
}

// A run whose proposal H refused, or handed to a person, rests in INGEST
// with nothing to approve or choose; start and show say what H decided.
func TestStatusSaysWhatHDecided(t *testing.T) {
	c := newCLIRig(t)
	frozen := `{"type":"restart.requested/1","payload":{"restart_id":"rst-1","service":"billing","target":"dest:ops-api","reason":"leak"}}`
	unknown := `{"type":"restart.requested/1","payload":{"restart_id":"rst-2","service":"api","target":"dest:ops-api","reason":"unknown"}}`
	for _, tc := range []struct{ id, input, says string }{
		{"frozen", frozen, "REJECTED on proposal:"},
		{"unknown", unknown, "ESCALATED on proposal:"},
	} {
		out := c.ok("run", "start", "example:ops-agent", "--id", tc.id, "--input-json", tc.input, c.dest)
		show := c.ok("run", "show", tc.id)
		for _, o := range []string{out, show} {
			if !strings.Contains(o, "H decided "+tc.says) {
				t.Errorf("%s: want %q in:\n%s", tc.id, tc.says, o)
			}
		}
	}
	if show := c.ok("run", "show", "frozen"); !strings.Contains(show, "PROPOSAL_INELIGIBLE") {
		t.Errorf("the ineligible restart does not say so:\n%s", show)
	}
	if show := c.ok("run", "show", "unknown"); !strings.Contains(show, "G3 ESCALATE g3.unexplained-restart") {
		t.Errorf("the escalated restart does not name the gate:\n%s", show)
	}
}
