package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/verify"
)

// The golden corpus: real runs of the example bundles, recorded through
// the CLI against a real sandbox and exported with "flrh run export". The
// test imports each into a fresh SQLite store, verifies and replays it, and
// exports it again: the bytes must be the recorded ones. Regenerate with
//
//	go test ./cmd/flrh -run TestGoldenCorpus -update
var update = flag.Bool("update", false, "re-record the golden corpus under testdata/golden")

const goldenDir = "../../testdata/golden"

// goldenRuns are the recorded scenarios: a bundle, an input, and what to
// do once the run waits.
var goldenRuns = []struct {
	name, bundle, input string
	fault               string // a sandbox fault rule installed before the start
	then                string // "approve AS", "deny AS" or "resume AS", several joined by "; "
}{
	{name: "refund-small", bundle: "example:refund-agent",
		input: `{"type":"refund.requested/1","payload":{"refund_id":"g-small","amount":40,"payee":"alice","reason":"damaged item"}}`},
	{name: "refund-large-approved", bundle: "example:refund-agent", then: "approve finance-lead",
		input: `{"type":"refund.requested/1","payload":{"refund_id":"g-large","amount":400,"payee":"alice","reason":"damaged item"}}`},
	{name: "refund-large-denied", bundle: "example:refund-agent", then: "deny finance-lead",
		input: `{"type":"refund.requested/1","payload":{"refund_id":"g-denied","amount":400,"payee":"bob","reason":"damaged item"}}`},
	{name: "refund-options", bundle: "example:refund-agent",
		input: `{"type":"refund.requested/1","payload":{"refund_id":"g-goodwill","amount":60,"payee":"carol","reason":"goodwill"}}`},
	{name: "ops-diagnostics", bundle: "example:ops-agent",
		input: `{"type":"diagnostics.requested/1","payload":{"check_id":"g-chk","service":"api","target":"dest:ops-api","probe":"health"}}`},
	{name: "ops-restart-approved", bundle: "example:ops-agent", then: "approve oncall-lead",
		input: `{"type":"restart.requested/1","payload":{"restart_id":"g-rst","service":"api","target":"dest:ops-api","reason":"memory leak"}}`},
	{name: "ops-dropped-reconciled", bundle: "example:ops-agent", fault: `{"times":1,"drop":true}`,
		input: `{"type":"diagnostics.requested/1","payload":{"check_id":"g-drop","service":"billing","target":"dest:ops-api","probe":"health"}}`},
	// H escalates the restart and the run keeps it; the person's RESUME
	// decides it again, and it waits for its approval (decision 0612).
	{name: "ops-escalated-resumed", bundle: "example:ops-agent", then: "resume oncall-lead; approve oncall-lead",
		input: `{"type":"restart.requested/1","payload":{"restart_id":"g-esc","service":"api","target":"dest:ops-api","reason":"unknown"}}`},
}

func TestGoldenCorpus(t *testing.T) {
	if *update {
		recordGolden(t)
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(goldenRuns) {
		t.Fatalf("%d golden files, want %d (re-record with -update)", len(files), len(goldenRuns))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			recorded, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "golden.db"), importOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			x, err := importRun(ctx, st, recorded)
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			rep, err := verify.Run(ctx, st, nil, x.Run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("verify found %v", rep.Findings)
			}
			run, err := st.Run(ctx, x.Run.ID)
			if err != nil {
				t.Fatal(err)
			}
			wf, ok, err := workflowFor(ctx, st, run, nil)
			if err != nil || !ok {
				t.Fatalf("no workflow for %s@%s: %v", run.WorkflowID, run.WorkflowVersion, err)
			}
			rp, err := verify.Replay(ctx, st, wf, x.Run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !rp.OK() {
				t.Errorf("replay found %v", rp.Findings)
			}
			again, err := exportRun(ctx, st, x.Run.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cjson.Marshal(again)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := append(b, '\n'), recorded; !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("the imported run exports differently from byte %d:\n got …%s\nwant …%s", i, snippet(got, i), snippet(want, i))
			}
		})
	}
}

func snippet(b []byte, i int) string { return string(b[max(0, i-40):min(len(b), i+80)]) }

// importOptions are the options of a store a recorded run is imported
// into: its clock reads a time before any recorded grant expired, since
// the store refuses to consume an expired grant, and a grant keeps the
// expiry its body records (verify holds the ledger's to it).
var importOptions = sqlite.Options{Clock: func() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }}

// importRun restores an exported run into an empty store (opened with
// importOptions) through the store's own API, one event per tick,
// re-acquiring the lease to reproduce each recorded generation, and checks
// every digest and chain hash it is handed. A grant's expiry, not a
// column of the export, is the one its body records.
func importRun(ctx context.Context, st store.Store, data []byte) (*runExport, error) {
	var x runExport
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	if x.Kind != RunExportKind {
		return nil, fmt.Errorf("kind %q, want %q", x.Kind, RunExportKind)
	}
	canon := func(what string, v any, digest string) ([]byte, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		c, err := cjson.Canonicalize(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if d := store.BodyDigest(c); d != digest {
			return nil, fmt.Errorf("%s: bytes digest to %s, recorded %s", what, d, digest)
		}
		return c, nil
	}
	if err := st.CreateRun(ctx, store.Run{ID: x.Run.ID, WorkflowID: x.Run.WorkflowID, WorkflowVersion: x.Run.WorkflowVersion, State: control.Default().InitialState()}); err != nil {
		return nil, err
	}
	var lease store.Lease
	reach := func(gen int64) error {
		for lease.Generation < gen {
			l, err := st.AcquireLease(ctx, x.Run.ID, "golden-import", time.Hour)
			if err != nil {
				return err
			}
			lease = l
		}
		return nil
	}
	if err := reach(1); err != nil {
		return nil, err
	}
	for _, a := range x.Approvals {
		b, err := canon("approval "+a.ID, a.Body, a.Digest)
		if err != nil {
			return nil, err
		}
		var g runner.Grant
		if err := json.Unmarshal(b, &g); err != nil {
			return nil, fmt.Errorf("approval %s: %w", a.ID, err)
		}
		expires, err := g.Expiry()
		if err != nil {
			return nil, fmt.Errorf("approval %s: %w", a.ID, err)
		}
		if err := st.GrantApproval(ctx, store.Approval{ID: a.ID, RunID: x.Run.ID, RequestDigest: a.RequestDigest, Nonce: a.Nonce, Body: b,
			Digest: a.Digest, ExpiresAt: expires, Status: store.ApprovalGranted}); err != nil {
			return nil, err
		}
	}
	receipts := map[string]exportReceipt{}
	for _, rc := range x.Receipts {
		receipts[rc.IntentID] = rc
	}
	head, hash := int64(0), store.GenesisHash
	for _, e := range x.Events {
		body, err := canon(fmt.Sprintf("event %d", e.Seq), e.Body, e.Digest)
		if err != nil {
			return nil, err
		}
		if e.Seq != head+1 {
			return nil, fmt.Errorf("event %d follows %d", e.Seq, head)
		}
		if hash = store.ChainHash(hash, e.Seq, e.Digest); hash != e.ChainHash {
			return nil, fmt.Errorf("event %d: chain hash %s, recorded %s", e.Seq, hash, e.ChainHash)
		}
		if err := reach(e.Generation); err != nil {
			return nil, err
		}
		tick := store.Tick{ExpectHead: head, Events: []store.Event{{Kind: e.Kind, Body: body, Digest: e.Digest}}}
		var mine []exportIntent
		for _, in := range x.Intents {
			if in.Seq != e.Seq {
				continue
			}
			b, err := canon("intent "+in.ID, in.Body, in.Digest)
			if err != nil {
				return nil, err
			}
			tick.Intents = append(tick.Intents, store.Intent{ID: in.ID, RunID: x.Run.ID, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey,
				ContentDigest: in.ContentDigest, ApprovalID: in.ApprovalID, Body: b, Digest: in.Digest})
			if in.ApprovalID != "" {
				tick.Approvals = append(tick.Approvals, store.ApprovalUse{ApprovalID: in.ApprovalID, IntentID: in.ID})
			}
			mine = append(mine, in)
		}
		if err := st.Commit(ctx, lease, tick); err != nil {
			return nil, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		head = e.Seq
		for _, in := range mine {
			for i, a := range in.Attempts {
				if err := reach(a.Generation); err != nil {
					return nil, err
				}
				if _, err := st.BeginAttempt(ctx, lease, in.ID); err != nil {
					return nil, fmt.Errorf("intent %s attempt %d: %w", in.ID, a.N, err)
				}
				if store.AttemptStatus(a.Status) == store.AttemptStarted {
					continue
				}
				outbox := store.OutboxRetry
				if i == len(in.Attempts)-1 && in.Outbox != string(store.OutboxDone) {
					outbox = store.OutboxStatus(in.Outbox)
				}
				route := ""
				if i == len(in.Attempts)-1 {
					route = in.Route
				}
				if err := st.Commit(ctx, lease, store.Tick{ExpectHead: head, Results: []store.AttemptResult{{IntentID: in.ID, N: a.N,
					Status: store.AttemptStatus(a.Status), Detail: a.Detail, Outbox: outbox, Route: route}}}); err != nil {
					return nil, fmt.Errorf("intent %s attempt %d result: %w", in.ID, a.N, err)
				}
			}
			if rc, ok := receipts[in.ID]; ok {
				b, err := canon("receipt "+in.ID, rc.Body, rc.Digest)
				if err != nil {
					return nil, err
				}
				if err := st.Commit(ctx, lease, store.Tick{ExpectHead: head, Receipts: []store.Receipt{{IntentID: in.ID, Outcome: rc.Outcome, Body: b, Digest: rc.Digest}}}); err != nil {
					return nil, fmt.Errorf("receipt %s: %w", in.ID, err)
				}
			}
		}
	}
	final := store.Tick{ExpectHead: head, State: x.Run.State, Outcome: x.Run.Outcome}
	if cp := x.Checkpoint; cp != nil {
		b, err := canon("checkpoint", cp.Body, cp.Digest)
		if err != nil {
			return nil, err
		}
		if cp.Seq != head {
			return nil, fmt.Errorf("checkpoint follows event %d, the run is at %d", cp.Seq, head)
		}
		final.Checkpoint = &store.Checkpoint{FormatVersion: cp.FormatVersion, BuildDigest: cp.BuildDigest, Body: b, Digest: cp.Digest}
	}
	if err := reach(x.Run.Generation); err != nil {
		return nil, err
	}
	if err := st.Commit(ctx, lease, final); err != nil {
		return nil, fmt.Errorf("final tick: %w", err)
	}
	if x.Run.Quarantine != "" {
		if err := st.Quarantine(ctx, x.Run.ID, x.Run.Quarantine); err != nil {
			return nil, err
		}
	}
	return &x, nil
}

var pendingRequest = regexp.MustCompile(`approval-request:[0-9a-f]{64}`)

// recordGolden records every scenario through the real binary against a
// real sandbox and writes its export.
func recordGolden(t *testing.T) {
	bin := buildFlrh(t)
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, g := range goldenRuns {
		dir := t.TempDir()
		base := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
		if g.fault != "" {
			installFault(t, base, g.fault)
		}
		storeFlag := "--store=sqlite:" + filepath.Join(dir, "flrh.db")
		dest := "--destination=" + base + "/v1/effects"
		run := func(args ...string) string {
			out, err := flrh(bin, nil, args...)
			if err != nil {
				t.Fatalf("%s: flrh %s: %v\n%s", g.name, strings.Join(args, " "), err, out)
			}
			return out
		}
		out := run("run", "start", g.bundle, "--id", g.name, "--input-json", g.input, storeFlag, dest)
		for _, act := range strings.Split(g.then, "; ") {
			verb, as, ok := strings.Cut(act, " ")
			if !ok {
				continue
			}
			if verb == "resume" {
				out = run("mrp", g.name, "resume", "--as", as, storeFlag, dest, "--workflows="+g.bundle)
				continue
			}
			req := pendingRequest.FindString(out)
			if req == "" {
				t.Fatalf("%s: nothing to %s in:\n%s", g.name, verb, out)
			}
			out = run(verb, g.name, req, "--as", as, storeFlag, dest)
		}
		t.Logf("%s: %s", g.name, strings.TrimSpace(out))
		x := run("run", "export", g.name, storeFlag)
		if err := os.WriteFile(filepath.Join(goldenDir, g.name+".json"), []byte(x), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenImportRefusesTampering: a recorded file edited by hand is
// refused on import, naming what no longer matches.
func TestGoldenImportRefusesTampering(t *testing.T) {
	recorded, err := os.ReadFile(filepath.Join(goldenDir, "refund-large-approved.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"amount in the accepted input", `"amount":400`, `"amount":401`, "digest"},
		{"approver of the grant", `"finance-lead"`, `"mallory"`, "digest"},
		{"a chain hash", `"chain_hash":"sha256:`, `"chain_hash":"sha256:0`, "chain hash"},
		{"unknown field", `"kind":"flrh-run-export/1"`, `"kind":"flrh-run-export/1","extra":1`, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(recorded, []byte(c.from)) {
				t.Fatalf("the recorded run has no %s", c.from)
			}
			bad := bytes.Replace(recorded, []byte(c.from), []byte(c.to), 1)
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), importOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := importRun(context.Background(), st, bad); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import of a tampered file: %v, want an error about %s", err, c.want)
			}
		})
	}
}

// BenchmarkGoldenVerifyReplay runs verify.Run and verify.Replay over every
// run of the golden corpus (bundle workflows, short runs) imported into one
// SQLite store, and reports events checked per second.
func BenchmarkGoldenVerifyReplay(b *testing.B) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no golden corpus: %v", err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "golden.db"), importOptions)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var ids []string
	events := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		x, err := importRun(ctx, st, data)
		if err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		ids = append(ids, x.Run.ID)
		events += len(x.Events)
	}
	c, err := loadCatalog(nil, true, "")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for b.Loop() {
		for _, id := range ids {
			run, err := st.Run(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			cd, ok := c.forRun(ctx, st, run, true)
			if !ok {
				b.Fatalf("no workflow for %s", id)
			}
			rep, err := verify.Run(ctx, st, nil, id)
			if err != nil || !rep.OK() {
				b.Fatalf("verify %s: %v %v", id, err, rep)
			}
			rp, err := verify.Replay(ctx, st, cd.wf, id)
			if err != nil || !rp.OK() {
				b.Fatalf("replay %s: %v %v", id, err, rp)
			}
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(events), "events")
}
