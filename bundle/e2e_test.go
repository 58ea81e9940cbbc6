package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// harness runs one example bundle through the durable runner on a fresh
// SQLite store, against a real sandbox destination on loopback.
type harness struct {
	t   testing.TB
	ctx context.Context
	wf  *Workflow
	st  store.Store
	sb  *sandbox.Sandbox
	url string // the sandbox's effect endpoint
	r   *runner.Runner
	db  string // the store's file
}

func newHarness(t *testing.T, example string) *harness { return newHarnessTB(t, example) }

func newHarnessTB(t testing.TB, example string) *harness {
	t.Helper()
	wf, ads, err := Load(filepath.Join("..", "examples", example))
	if err != nil {
		t.Fatal(err)
	}
	return newHarnessWith(t, wf, ads)
}

// newHarnessWith runs an already loaded bundle.
func newHarnessWith(t testing.TB, wf *Workflow, ads *Adapters, mods ...func(*runner.Config)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	db := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go sb.Serve(sctx, ln, time.Second)
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	reg, err := ads.Registry(func(name string) string {
		if strings.HasPrefix(name, "FLRH_") {
			return url
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "test-runner",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond}}}
	for _, mod := range mods {
		mod(&cfg)
	}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return &harness{t: t, ctx: ctx, wf: wf, st: st, sb: sb, url: url, r: r, db: db}
}

func (h *harness) start(runID, input string) {
	h.t.Helper()
	if err := h.r.Start(h.ctx, runID, h.wf.ID(), h.wf.Version(), []byte(input)); err != nil {
		h.t.Fatal(err)
	}
	h.idle()
}

func (h *harness) idle() {
	h.t.Helper()
	if err := h.r.RunToIdle(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) status(runID string) runner.Status {
	h.t.Helper()
	s, err := h.r.Inspect(h.ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// approveAll approves every request the run waits on, as the named person.
func (h *harness) approveAll(runID, as string) []runner.ApprovalNeed {
	h.t.Helper()
	s := h.status(runID)
	for _, w := range s.Waiting {
		who := runner.Actor{Name: as, Role: "human_approver", Capability: "approval.grant_exact_hash"}
		if err := h.r.Approve(h.ctx, runID, w.RequestID, who, 10*time.Minute); err != nil {
			h.t.Fatal(err)
		}
	}
	h.idle()
	return s.Waiting
}

// checkRecord verifies the run's durable record and replays it: no
// finding from either.
func (h *harness) checkRecord(runID string) {
	h.t.Helper()
	rep, err := verify.Run(h.ctx, h.st, control.Default(), runID)
	if err != nil {
		h.t.Fatal(err)
	}
	if !rep.OK() || rep.RunID != runID || rep.Events == 0 {
		b, _ := json.Marshal(rep)
		h.t.Errorf("%s: verify: %s", runID, b)
	}
	rp, err := verify.Replay(h.ctx, h.st, h.wf, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	if !rp.OK() {
		h.t.Errorf("%s: replay findings: %+v", runID, rp.Findings)
	}
}

// replayFinds replays run's record under wf and fails the test, saying
// what went unnoticed, unless a replay-approval finding's detail holds
// want.
func (h *harness) replayFinds(wf runner.Workflow, run, want, what string) {
	h.t.Helper()
	rp, err := verify.Replay(h.ctx, h.st, wf, run)
	if err != nil {
		h.t.Fatal(err)
	}
	if !slices.ContainsFunc(rp.Findings, func(f verify.Finding) bool {
		return f.Check == "replay-approval" && strings.Contains(f.Detail, want)
	}) {
		h.t.Fatalf("%s went unnoticed on replay: %+v", what, rp.Findings)
	}
}

// trace returns the run's trace records of one kind.
func (h *harness) trace(runID, kind string) []map[string]any {
	h.t.Helper()
	tr, err := h.st.Trace(h.ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range tr {
		if r.Kind != kind {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func (h *harness) intents(runID string) []store.Intent {
	h.t.Helper()
	ins, err := h.st.Intents(h.ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	return ins
}

func (h *harness) mutationsFor(key string) int {
	n := 0
	for _, m := range h.sb.Mutations() {
		if m.IdempotencyKey == key {
			n++
		}
	}
	return n
}

func refund(id string, amount int, payee, reason string) string {
	b, _ := json.Marshal(map[string]any{"type": "refund.requested/1",
		"payload": map[string]any{"refund_id": id, "amount": amount, "payee": payee, "reason": reason}})
	return string(b)
}

func TestRefundAgentEndToEnd(t *testing.T) {
	h := newHarness(t, "refund-agent")

	t.Run("small refund is authorized and paid", func(t *testing.T) {
		h.start("refund-small", refund("r-1001", 40, "alice", "damaged item"))
		if s := h.status("refund-small"); s.State != "SUCCEEDED" {
			t.Fatalf("state %s, waiting %v", s.State, s.Waiting)
		}
		ins := h.intents("refund-small")
		if len(ins) != 1 || ins[0].ApprovalID != "" || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
			t.Fatalf("intents %+v", ins)
		}
		var body map[string]any
		json.Unmarshal(ins[0].Body, &body)
		if body["assessed_risk"] != "reversible" || body["approval_required"] != false {
			t.Errorf("intent %s", ins[0].Body)
		}
		h.checkRecord("refund-small")
	})

	t.Run("large refund waits for an approval bound to amount and payee", func(t *testing.T) {
		h.start("refund-large", refund("r-1002", 900, "bob", "cancelled order"))
		s := h.status("refund-large")
		if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 {
			t.Fatalf("state %s, waiting %v", s.State, s.Waiting)
		}
		w := s.Waiting[0]
		for _, want := range []string{"amount = 900", `payee = "bob"`, "dest:payments"} {
			if !strings.Contains(w.Preview, want) {
				t.Errorf("preview lacks %q:\n%s", want, w.Preview)
			}
		}
		if len(h.sb.Mutations()) != 1 {
			t.Fatal("something reached the destination before the approval")
		}
		// Someone other than the named approver cannot approve it: the
		// approval is refused before any grant is stored.
		var ar *runner.ApproverRefusedError
		if err := h.r.Approve(h.ctx, "refund-large", w.RequestID, runner.Actor{Name: "intern", Role: "human_approver",
			Capability: "approval.grant_exact_hash"}, time.Minute); !errors.As(err, &ar) || !strings.Contains(ar.Reason, `names "finance-lead"`) {
			t.Fatalf("approval by intern: err = %v", err)
		}
		// Nor deny it: a denial fails the run for good.
		if err := h.r.Deny(h.ctx, "refund-large", w.RequestID, "no", runner.Actor{Name: "intern", Role: "human_approver",
			Capability: "approval.deny"}); !errors.As(err, &ar) {
			t.Fatalf("denial by intern: err = %v", err)
		}
		h.idle()
		if s := h.status("refund-large"); s.State != "WAIT_APPROVAL" || len(h.intents("refund-large")) != 0 {
			t.Fatalf("a grant by someone the policy does not name was used: %s", s.State)
		}
		h.approveAll("refund-large", "finance-lead")
		if s := h.status("refund-large"); s.State != "SUCCEEDED" {
			t.Fatalf("after approval: %s", s.State)
		}
		ins := h.intents("refund-large")
		if len(ins) != 1 || ins[0].ApprovalID == "" || ins[0].ID != w.IntentID || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
			t.Fatalf("intents %+v (want %s with a grant)", ins, w.IntentID)
		}
		h.checkRecord("refund-large")
	})

	t.Run("conflicting contestable gates open OPTIONS", func(t *testing.T) {
		h.start("refund-goodwill", refund("r-1003", 30, "carol", "goodwill"))
		if s := h.status("refund-goodwill"); s.State != "INGEST" || len(s.Waiting) != 0 {
			t.Fatalf("state %s", s.State)
		}
		if len(h.intents("refund-goodwill")) != 0 {
			t.Fatal("an OPTIONS turn produced an intent")
		}
		outs := h.trace("refund-goodwill", "h.outcome")
		if len(outs) != 1 || outs[0]["outcome"] != "OPTIONS" || outs[0]["mrp_state"] != "OPTIONS" {
			t.Fatalf("outcomes %v", outs)
		}
		if opts := outs[0]["options"].([]any); len(opts) != 2 {
			t.Fatalf("options %v", opts)
		}
		h.checkRecord("refund-goodwill")
	})

	t.Run("blocked payee is ineligible and nothing is sent", func(t *testing.T) {
		before := len(h.sb.Mutations())
		h.start("refund-blocked", refund("r-1004", 20, "mallory", "damaged item"))
		outs := h.trace("refund-blocked", "h.outcome")
		if len(outs) != 1 || outs[0]["outcome"] != "REJECTED" || len(h.intents("refund-blocked")) != 0 || len(h.sb.Mutations()) != before {
			t.Fatalf("outcomes %v", outs)
		}
		h.checkRecord("refund-blocked")
	})

	t.Run("malformed input is refused and changes nothing", func(t *testing.T) {
		bad := `{"type":"refund.requested/1","payload":{"refund_id":"r-9","amount":"lots","payee":"x","reason":""}}`
		var refused *runner.InputRefusedError
		if err := h.r.Start(h.ctx, "refund-bad", h.wf.ID(), h.wf.Version(), []byte(bad)); !errors.As(err, &refused) ||
			!strings.Contains(refused.Reason, "MALFORMED_ACCEPTED_EVENT") {
			t.Fatalf("err = %v", err)
		}
		if _, err := h.st.Run(h.ctx, "refund-bad"); store.CodeOf(err) != store.CodeNotFound {
			t.Fatalf("a refused input created a run (%v)", err)
		}
	})
}

func ops(typ, id, service, extraKey, extra string) string {
	idKey := "check_id"
	if typ == "restart.requested/1" {
		idKey = "restart_id"
	}
	b, _ := json.Marshal(map[string]any{"type": typ,
		"payload": map[string]any{idKey: id, "service": service, "target": "dest:ops-" + service, extraKey: extra}})
	return string(b)
}

func TestOpsAgentEndToEnd(t *testing.T) {
	h := newHarness(t, "ops-agent")

	t.Run("diagnostics run as verification-class effects", func(t *testing.T) {
		h.start("ops-diag", ops("diagnostics.requested/1", "chk-1", "api", "probe", "health"))
		if s := h.status("ops-diag"); s.State != "SUCCEEDED" {
			t.Fatalf("state %s", s.State)
		}
		ins := h.intents("ops-diag")
		if len(ins) != 1 || ins[0].EffectType != "diag.read" || ins[0].ApprovalID != "" {
			t.Fatalf("intents %+v", ins)
		}
		var body map[string]any
		json.Unmarshal(ins[0].Body, &body)
		if body["assessed_risk"] != "read_only" {
			t.Errorf("a diagnostic was assessed %v", body["assessed_risk"])
		}
		if m := h.wf.Manifests()["diag.read"]; len(m.SideEffects) != 1 || m.SideEffects[0] != "NONE" {
			t.Errorf("diag.read manifest %+v", m)
		}
		h.checkRecord("ops-diag")
	})

	t.Run("restart needs approval", func(t *testing.T) {
		h.start("ops-restart", ops("restart.requested/1", "rst-1", "api", "reason", "memory leak"))
		s := h.status("ops-restart")
		if s.State != "WAIT_APPROVAL" || len(s.Waiting) != 1 || !strings.Contains(s.Waiting[0].Preview, `service = "api"`) {
			t.Fatalf("state %s waiting %+v", s.State, s.Waiting)
		}
		h.approveAll("ops-restart", "oncall-lead")
		if s := h.status("ops-restart"); s.State != "SUCCEEDED" {
			t.Fatalf("after approval %s", s.State)
		}
		h.checkRecord("ops-restart")
	})

	t.Run("a frozen service cannot be restarted", func(t *testing.T) {
		h.start("ops-frozen", ops("restart.requested/1", "rst-2", "billing", "reason", "slow"))
		outs := h.trace("ops-frozen", "h.outcome")
		if len(outs) != 1 || outs[0]["outcome"] != "REJECTED" || len(h.intents("ops-frozen")) != 0 {
			t.Fatalf("outcomes %v", outs)
		}
		h.checkRecord("ops-frozen")
	})

	t.Run("an unknown outcome is reconciled with the destination", func(t *testing.T) {
		if err := h.sb.Inject(sandbox.Fault{Times: 1, Drop: true}); err != nil {
			t.Fatal(err)
		}
		h.start("ops-dropped", ops("diagnostics.requested/1", "chk-2", "api", "probe", "latency"))
		if s := h.status("ops-dropped"); s.State != "SUCCEEDED" {
			t.Fatalf("state %s unknown %v", s.State, s.Unknown)
		}
		ins := h.intents("ops-dropped")
		if len(ins) != 1 || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
			t.Fatalf("intents %+v", ins)
		}
		ats, err := h.st.Attempts(h.ctx, ins[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ats) != 1 || ats[0].Status != store.AttemptReconciledApplied {
			t.Fatalf("attempts %+v", ats)
		}
		h.checkRecord("ops-dropped")
	})

	t.Run("an approved restart whose answer is lost is reconciled, not resent", func(t *testing.T) {
		h.start("ops-restart-dropped", ops("restart.requested/1", "rst-9", "api", "reason", "deadlock"))
		if err := h.sb.Inject(sandbox.Fault{Times: 1, Drop: true}); err != nil {
			t.Fatal(err)
		}
		h.approveAll("ops-restart-dropped", "oncall-lead")
		if s := h.status("ops-restart-dropped"); s.State != "SUCCEEDED" {
			t.Fatalf("state %s unknown %v", s.State, s.Unknown)
		}
		ins := h.intents("ops-restart-dropped")
		if len(ins) != 1 || ins[0].ApprovalID == "" || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
			t.Fatalf("intents %+v", ins)
		}
		ats, _ := h.st.Attempts(h.ctx, ins[0].ID)
		if len(ats) != 1 || ats[0].Status != store.AttemptReconciledApplied {
			t.Fatalf("attempts %+v", ats)
		}
		h.checkRecord("ops-restart-dropped")
	})
}

func TestRefundDenied(t *testing.T) {
	h := newHarness(t, "refund-agent")
	h.start("refund-denied", refund("r-2001", 5000, "dave", "cancelled order"))
	s := h.status("refund-denied")
	if len(s.Waiting) != 1 {
		t.Fatalf("state %s", s.State)
	}
	// A denial under the wrong capability is audited and changes nothing.
	if err := h.r.Deny(h.ctx, "refund-denied", s.Waiting[0].RequestID, "no", runner.Actor{Name: "finance-lead",
		Role: "human_approver", Capability: "approval.grant_exact_hash"}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.status("refund-denied"); s.State != "WAIT_APPROVAL" {
		t.Fatalf("a denial without the deny capability moved the run to %s", s.State)
	}
	if err := h.r.Deny(h.ctx, "refund-denied", s.Waiting[0].RequestID, "not this one", runner.Actor{Name: "finance-lead",
		Role: "human_approver", Capability: "approval.deny"}); err != nil {
		t.Fatal(err)
	}
	h.idle()
	if s := h.status("refund-denied"); s.State != "FAILED_PERMANENT" || len(h.intents("refund-denied")) != 0 || len(h.sb.Mutations()) != 0 {
		t.Fatalf("a denied refund: state %s, %d intents, %d mutations", s.State, len(h.intents("refund-denied")), len(h.sb.Mutations()))
	}
	h.checkRecord("refund-denied")
}

// A run waiting for approval survives a restart: a new runner with the
// bundle loaded afresh resumes it from the checkpoint, and the approved
// refund is paid exactly once.
func TestRefundResumesAfterRestart(t *testing.T) {
	h := newHarness(t, "refund-agent")
	h.start("refund-restart", refund("r-3001", 700, "erin", "wrong size"))
	if s := h.status("refund-restart"); s.State != "WAIT_APPROVAL" {
		t.Fatalf("state %s", s.State)
	}
	if err := h.r.Close(h.ctx); err != nil {
		t.Fatal(err)
	}
	wf, ads, err := Load(filepath.Join("..", "examples", "refund-agent"))
	if err != nil {
		t.Fatal(err)
	}
	if wf.Digest() != h.wf.Digest() {
		t.Fatal("the same bundle loaded twice has two digests")
	}
	reg, err := ads.Registry(func(string) string { return h.url })
	if err != nil {
		t.Fatal(err)
	}
	r2, err := runner.New(runner.Config{Store: h.st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "test-runner-2",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 20 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close(context.Background())
	h.r, h.wf = r2, wf
	h.approveAll("refund-restart", "finance-lead")
	if s := h.status("refund-restart"); s.State != "SUCCEEDED" {
		t.Fatalf("after restart and approval: %s", s.State)
	}
	ins := h.intents("refund-restart")
	if len(ins) != 1 || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
		t.Fatalf("intents %+v", ins)
	}
	h.checkRecord("refund-restart")
}
