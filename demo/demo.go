// Package demo runs the refund agent end to end, the way "flrh demo" shows
// it: a temporary embedded store, a real HTTP sandbox destination on
// loopback, the durable runner driving the control FSM, a small refund paid
// automatically, a large one approved by a named demo approver, a refund to
// a blocked payee refused by policy, and every piece of evidence printed.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// Options tune a demo run. The zero value is the standard demo.
type Options struct {
	Dir      string // where the store lives; "" makes (and removes) a temporary one
	Approver string // who approves (default: the approver the bundle's policy names)
}

// HTTPAdapter is the refund agent's payments adapter: the HTTP adapter as
// it is (it tells the runner the digest of exactly what it sends).
func HTTPAdapter(a *httpadapter.Adapter) effect.Adapter { return a }

// Run runs the demo and writes its report to out. It returns an error if
// any run does not end the way the refund agent's policy says it must.
//
// The refund agent is the example bundle examples/refund-agent (embedded in
// the binary): its domain, rules, gates, capabilities and approval policy
// are data, and every input goes through F, L, the seam, R and H.
func Run(ctx context.Context, out io.Writer, opts Options) error {
	if opts.Approver == "" {
		opts.Approver = BundleApprover
	}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "flrh-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	dbPath := filepath.Join(dir, "flrh.db")
	if opts.Dir != "" {
		// The demo starts its runs under fixed ids: a store a demo
		// already filled would refuse them halfway through the output.
		if _, err := os.Stat(dbPath); err == nil {
			return fmt.Errorf("demo: %s already holds a store (a demo's runs are started afresh): give a new or empty directory, or look at its runs with flrh run list --store sqlite:%s", dir, dbPath)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()

	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go sb.Serve(sctx, ln, time.Second)
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath

	wf, ads, err := bundle.LoadExample("refund-agent")
	if err != nil {
		return fmt.Errorf("refund-agent bundle: %w", err)
	}
	reg, err := ads.Registry(func(string) string { return url })
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "demo-runner",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)

	fmt.Fprintf(out, "flrh demo: the refund agent bundle (F → L → seam → R → H every tick) on an embedded store\n  store %s\n", dbPath)
	fmt.Fprintf(out, "  payments destination: sandbox at %s\n", url)
	fmt.Fprintf(out, "  policy: refunds up to 100 are paid outright; larger ones need %s's approval, bound to amount and payee;\n", BundleApprover)
	fmt.Fprintf(out, "  blocked payees are ineligible; a goodwill refund makes two contestable gates disagree (OPTIONS)\n\n")

	type scenario struct {
		id, input, wantState, wantMRP string
		approve                       bool
	}
	runs := []scenario{
		{"refund-small", refundInput("r-1001", 40, "alice", "damaged item"), "SUCCEEDED", "", false},
		{"refund-large", refundInput("r-1002", 900, "bob", "cancelled order"), "SUCCEEDED", "", true},
		{"refund-goodwill", refundInput("r-1003", 30, "carol", "goodwill"), "INGEST", "OPTIONS", false},
		{"refund-blocked", refundInput("r-1004", 20, "mallory", "damaged item"), "INGEST", "", false},
	}
	for _, run := range runs {
		if err := r.Start(ctx, run.id, wf.ID(), wf.Version(), []byte(run.input)); err != nil {
			return err
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		return err
	}
	// A person approves what waits, after seeing exactly what they approve.
	who := runner.Actor{Name: opts.Approver, Role: "human_approver", Capability: "approval.grant_exact_hash"}
	for _, run := range runs {
		status, err := r.Inspect(ctx, run.id)
		if err != nil {
			return err
		}
		for _, w := range status.Waiting {
			fmt.Fprintf(out, "%s waits in %s for approval %s\n  the person sees:\n%s\n  bound to request %s\n  approved by %s (human_approver)\n\n",
				run.id, status.State, w.RequestID, indent(w.Preview, "    "), w.RequestDigest, opts.Approver)
			if err := r.Approve(ctx, run.id, w.RequestID, who, 10*time.Minute); err != nil {
				return err
			}
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		return err
	}

	var failures []string
	paid := 0
	for _, run := range runs {
		rep, err := Report(ctx, st, run.id)
		if err != nil {
			return err
		}
		fmt.Fprint(out, rep.Text)
		if rep.State != run.wantState || !rep.Closed || (run.wantMRP != "" && rep.MRP != run.wantMRP) {
			failures = append(failures, fmt.Sprintf("%s ended %s (MRP %s, closed=%v), want %s %s", run.id, rep.State, rep.MRP, rep.Closed, run.wantState, run.wantMRP))
		}
		paid += rep.Receipts
	}
	muts := sb.Mutations()
	fmt.Fprintf(out, "sandbox ledger: %d mutations\n", len(muts))
	for _, m := range muts {
		fmt.Fprintf(out, "  #%d key %s content %s\n", m.Sequence, m.IdempotencyKey, m.ContentDigest)
	}
	if len(muts) != paid || paid != 2 {
		failures = append(failures, fmt.Sprintf("sandbox applied %d mutations for %d receipts, want exactly 2 (one per paid refund)", len(muts), paid))
	}
	if len(failures) > 0 {
		return errors.New("demo: " + strings.Join(failures, "; "))
	}
	fmt.Fprintln(out, "\nevery run ended as the policy requires; every paid refund has one durable intent, one mutation and one receipt")
	return nil
}

// BundleApprover is the approver the refund-agent bundle's policy names.
const BundleApprover = "finance-lead"

func refundInput(id string, amount int, payee, reason string) string {
	return fmt.Sprintf(`{"type":"refund.requested/1","payload":{"amount":%d,"payee":%q,"reason":%q,"refund_id":%q}}`, amount, payee, reason, id)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// RunReport is a run's evidence, rendered for people.
type RunReport struct {
	State    string
	MRP      string // the deliberation state after the last turn, if the workflow records one
	Receipts int
	Closed   bool // every intent has a receipt and the event chain verifies
	Text     string
}

// Report renders a run's control path, effects, receipts and outcome.
func Report(ctx context.Context, st store.Store, runID string) (RunReport, error) {
	var b strings.Builder
	run, err := st.Run(ctx, runID)
	if err != nil {
		return RunReport{}, err
	}
	if run.Outcome == "" {
		// A run resting in the loop (waiting for a choice or its next
		// input) has no outcome yet: say so rather than print an empty one.
		fmt.Fprintf(&b, "run %s — %s, live: no outcome yet\n", run.ID, run.State)
	} else {
		fmt.Fprintf(&b, "run %s — %s, outcome %q\n", run.ID, run.State, run.Outcome)
	}
	evs, err := st.Events(ctx, runID, 0)
	if err != nil {
		return RunReport{}, err
	}
	chainOK := true
	prev := store.GenesisHash
	var path []string
	for _, e := range evs {
		chainOK = chainOK && e.PrevHash == prev && e.ChainHash == store.ChainHash(prev, e.Seq, e.Digest)
		prev = e.ChainHash
		switch e.Kind {
		case runner.EventControl, runner.EventRejected:
			var rec control.Record
			if err := jsonDecode(e.Body, &rec); err != nil {
				return RunReport{}, err
			}
			if rec.Accepted {
				path = append(path, fmt.Sprintf("  %-24s %-18s → %s", rec.Event, rec.From, rec.To))
			} else {
				path = append(path, fmt.Sprintf("  %-24s refused: %s (%s)", rec.Event, rec.Reason, rec.Detail))
			}
		case runner.EventAccepted:
			path = append(path, fmt.Sprintf("  accepted input          %s", short(e.Digest)))
		}
	}
	b.WriteString(" control FSM:\n")
	b.WriteString(strings.Join(path, "\n"))
	b.WriteString("\n")
	ins, err := st.Intents(ctx, runID)
	if err != nil {
		return RunReport{}, err
	}
	rcs, err := st.Receipts(ctx, runID)
	if err != nil {
		return RunReport{}, err
	}
	receiptOf := map[string]store.Receipt{}
	for _, rc := range rcs {
		receiptOf[rc.IntentID] = rc
	}
	closed := chainOK
	for _, in := range ins {
		ats, err := st.Attempts(ctx, in.ID)
		if err != nil {
			return RunReport{}, err
		}
		approval := "none required"
		if in.ApprovalID != "" {
			a, err := st.Approval(ctx, in.ApprovalID)
			if err == nil {
				approval = fmt.Sprintf("%s, %s", a.ID, a.Status)
			}
		}
		fmt.Fprintf(&b, " effect %s (%s)\n   idempotency key %s bound to %s\n   approval: %s\n", in.ID, in.EffectType, in.IdempotencyKey, short(in.ContentDigest), approval)
		for _, a := range ats {
			fmt.Fprintf(&b, "   attempt %d: %s\n", a.N, a.Status)
		}
		if rc, ok := receiptOf[in.ID]; ok {
			fmt.Fprintf(&b, "   receipt: %s %s\n", rc.Outcome, short(rc.Digest))
		} else {
			fmt.Fprintf(&b, "   receipt: none (outbox %s)\n", in.Outbox)
			closed = false
		}
	}
	tr, err := st.Trace(ctx, runID)
	if err != nil {
		return RunReport{}, err
	}
	mrpState, strip := "", ""
	for _, t := range tr {
		var m map[string]any
		_ = json.Unmarshal(t.Body, &m)
		switch t.Kind {
		case "refused":
			fmt.Fprintf(&b, " refused by policy: %s\n", t.Body)
		case "refusal":
			fmt.Fprintf(&b, " input refused: %v\n", m["reason"])
		case "h.outcome":
			fmt.Fprintf(&b, " H decided: %v (MRP %v)", m["outcome"], m["mrp_state"])
			if opts, ok := m["options"].([]any); ok && len(opts) > 0 {
				fmt.Fprintf(&b, ", options for a person: %v", opts)
			}
			if why, ok := m["reason"]; ok && why != nil && why != "" {
				fmt.Fprintf(&b, ", because %v", why)
			}
			b.WriteString("\n")
		case "mrp.journey":
			if s, ok := m["state"].(string); ok {
				mrpState = s
			}
			if st, ok := m["strip"].([]any); ok {
				strip = fmt.Sprint(st)
			}
		}
	}
	if strip != "" {
		fmt.Fprintf(&b, " Journey Strip: %s (now %s)\n", strip, mrpState)
	}
	fmt.Fprintf(&b, " evidence: %d events on an intact hash chain=%v, %d intents, %d receipts\n\n", len(evs), chainOK, len(ins), len(rcs))
	return RunReport{State: run.State, MRP: mrpState, Receipts: len(rcs), Closed: closed && len(ins) == len(rcs), Text: b.String()}, nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
