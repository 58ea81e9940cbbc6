// Package demo runs the refund agent end to end, the way "flrh demo" shows
// it: a temporary embedded store, a real HTTP sandbox destination on
// loopback, the durable runner driving the control FSM, a small refund paid
// automatically, a large one approved by a named demo approver, a refund to
// a blocked payee refused by policy, and every piece of evidence printed.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	Approver string // the demo approver's name
}

// Approver is the demo's named human approver.
const Approver = "demo-approver"

// HTTPAdapter is the refund agent's payments adapter: the HTTP adapter as
// it is (it tells the runner the digest of exactly what it sends).
func HTTPAdapter(a *httpadapter.Adapter) effect.Adapter { return a }

// Run runs the demo and writes its report to out. It returns an error if
// any run does not end the way the refund agent's policy says it must.
func Run(ctx context.Context, out io.Writer, opts Options) error {
	if opts.Approver == "" {
		opts.Approver = Approver
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

	ad, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	reg := &effect.Registry{}
	if err := reg.Register("refund.pay", "http/1", HTTPAdapter(ad)); err != nil {
		return err
	}
	wf := Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg, Owner: "demo-runner",
		Reconcile: effect.Plan{Backoff: []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)

	fmt.Fprintf(out, "flrh demo: the refund agent on an embedded store (%s)\n", dbPath)
	fmt.Fprintf(out, "payments destination: sandbox at %s\n", url)
	fmt.Fprintf(out, "policy: refunds up to %d are paid automatically; larger ones need a person's approval; payee %q is blocked\n\n", wf.AutoLimit, "mallory")

	runs := []struct{ id, input, want string }{
		{"refund-small", `{"refunds":[{"id":"r-1001","amount":40,"payee":"alice","reason":"damaged item"}]}`, "SUCCEEDED"},
		{"refund-large", `{"refunds":[{"id":"r-1002","amount":900,"payee":"bob","reason":"cancelled order"}]}`, "SUCCEEDED"},
		{"refund-mixed", `{"refunds":[{"id":"r-1003","amount":25,"payee":"carol","reason":"late delivery"},{"id":"r-1004","amount":500,"payee":"mallory","reason":"?"}]}`, "SUCCEEDED"},
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
			fmt.Fprintf(out, "%s waits in %s for approval %s\n  preview:  %s\n  binds:    request %s\n  approved by %s (human_approver)\n\n",
				run.id, status.State, w.RequestID, w.Preview, w.RequestDigest, opts.Approver)
			if err := r.Approve(ctx, run.id, w.RequestID, who, 10*time.Minute); err != nil {
				return err
			}
		}
	}
	if err := r.RunToIdle(ctx); err != nil {
		return err
	}

	var failures []string
	for _, run := range runs {
		rep, err := Report(ctx, st, run.id)
		if err != nil {
			return err
		}
		fmt.Fprint(out, rep.Text)
		if rep.State != run.want || !rep.Closed {
			failures = append(failures, fmt.Sprintf("%s ended %s (closed=%v), want %s", run.id, rep.State, rep.Closed, run.want))
		}
	}
	muts := sb.Mutations()
	fmt.Fprintf(out, "sandbox ledger: %d mutations\n", len(muts))
	for _, m := range muts {
		fmt.Fprintf(out, "  #%d key %s content %s\n", m.Sequence, m.IdempotencyKey, m.ContentDigest)
	}
	if len(muts) != 3 {
		failures = append(failures, fmt.Sprintf("sandbox applied %d mutations, want exactly 3 (one per paid refund)", len(muts)))
	}
	if len(failures) > 0 {
		return errors.New("demo: " + strings.Join(failures, "; "))
	}
	fmt.Fprintln(out, "\nevery run ended as the policy requires; every effect has one durable intent, one mutation and one receipt")
	return nil
}

// RunReport is a run's evidence, rendered for people.
type RunReport struct {
	State  string
	Closed bool // every intent has a receipt and the event chain verifies
	Text   string
}

// Report renders a run's control path, effects, receipts and outcome.
func Report(ctx context.Context, st store.Store, runID string) (RunReport, error) {
	var b strings.Builder
	run, err := st.Run(ctx, runID)
	if err != nil {
		return RunReport{}, err
	}
	fmt.Fprintf(&b, "run %s — %s, outcome %q\n", run.ID, run.State, run.Outcome)
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
	for _, t := range tr {
		if t.Kind == "refused" {
			fmt.Fprintf(&b, " refused by policy: %s\n", t.Body)
		}
	}
	fmt.Fprintf(&b, " evidence: %d events on an intact hash chain=%v, %d intents, %d receipts\n\n", len(evs), chainOK, len(ins), len(rcs))
	return RunReport{State: run.State, Closed: closed && len(ins) == len(rcs), Text: b.String()}, nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
