package verify

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/packed"
	"flrh.dev/flrh/store/sqlite"
)

var ctx = context.Background()

// payments is an in-process destination with idempotency keys.
type payments struct{ applied map[string]string }

func (p *payments) Execute(_ context.Context, in effect.Intent) (effect.Receipt, error) {
	p.applied[in.Effect.IdempotencyKey] = in.Effect.ActionDigest
	ev := []byte(fmt.Sprintf(`{"applied":%q}`, in.Effect.IdempotencyKey))
	return effect.Receipt{Outcome: effect.Succeeded, Code: "OK", Evidence: ev, EvidenceDigest: store.BodyDigest(ev)}, nil
}

func (p *payments) Lookup(_ context.Context, key, _ string) (effect.LookupResult, error) {
	return effect.LookupResult{Status: effect.StillUnknown}, nil
}

var wf = demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments"}

// recorded runs two refunds (one approved by a person) and returns the
// database path, closed, ready for read-only verification.
func recorded(t *testing.T) string {
	t.Helper()
	return recordedWith(t, sqlite.Options{})
}

// recordedWith is recorded on a store opened with opts (a sealer, say).
func recordedWith(t *testing.T, opts sqlite.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flrh.db")
	st, err := sqlite.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := &effect.Registry{}
	reg.Register("refund.pay", "http/1", &payments{applied: map[string]string{}})
	r, err := runner.New(runner.Config{Store: st, Workflows: []runner.Workflow{wf}, Adapters: reg,
		Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Start(ctx, "small", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"a","amount":5,"payee":"alice","reason":"x"}]}`)))
	must(r.Start(ctx, "large", wf.ID(), wf.Version(), []byte(`{"refunds":[{"id":"b","amount":500,"payee":"bob","reason":"y"},{"id":"c","amount":7,"payee":"carol","reason":"z"}]}`)))
	must(r.RunToIdle(ctx))
	st2, _ := r.Inspect(ctx, "large")
	must(r.Approve(ctx, "large", st2.Waiting[0].RequestID, runner.Actor{Name: "alice", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Hour))
	must(r.RunToIdle(ctx))
	for _, id := range []string{"small", "large"} {
		if run, _ := st.Run(ctx, id); run.State != "SUCCEEDED" {
			t.Fatalf("%s ended %s", id, run.State)
		}
	}
	return path
}

func open(t *testing.T, path string, ro bool) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: ro})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestHonestRunsVerifyAndReplay(t *testing.T) {
	st := open(t, recorded(t), true)
	for _, id := range []string{"small", "large"} {
		rep, err := Run(ctx, st, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("%s: %+v", id, rep.Findings)
		}
		if rep.Controls == 0 || rep.Intents == 0 || rep.Intents != rep.Receipts {
			t.Fatalf("%s: report %+v", id, rep)
		}
		rp, err := Replay(ctx, st, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		if !rp.OK() || rp.Inputs == 0 {
			t.Fatalf("%s replay: %+v", id, rp)
		}
	}
	rep, _ := Run(ctx, st, nil, "large")
	if rep.Approvals != 1 {
		t.Fatalf("approvals consumed = %d", rep.Approvals)
	}
}

// tamper edits the database behind the store's back (dropping the
// append-only triggers first, as an attacker with file access could).
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	st := open(t, path, false)
	if strings.Contains(strings.Join(stmts, "\n"), "checkpoints") {
		unpackCheckpoints(t, st.DB())
	}
	for _, s := range append([]string{
		"DROP TRIGGER IF EXISTS events_no_update", "DROP TRIGGER IF EXISTS receipts_no_update", "DROP TRIGGER IF EXISTS intents_no_update",
	}, stmts...) {
		if _, err := st.DB().Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// unpackCheckpoints rewrites every checkpoint stored packed (SQLite
// schema 12) as its body's own bytes, as a store before it kept them and
// still reads them, so that an edit in SQL edits the body's text.
func unpackCheckpoints(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT run_id, n, body FROM checkpoints`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		run  string
		n    int64
		body []byte
	}
	var packedRows []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.run, &r.n, &r.body); err != nil {
			t.Fatal(err)
		}
		if packed.Is(r.body) {
			if r.body, err = packed.Unpack(nil, r.body); err != nil {
				t.Fatal(err)
			}
			packedRows = append(packedRows, r)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := db.Exec(`DROP TRIGGER IF EXISTS checkpoints_no_update`); err != nil {
		t.Fatal(err)
	}
	for _, r := range packedRows {
		if _, err := db.Exec(`UPDATE checkpoints SET body = ? WHERE run_id = ? AND n = ?`, r.body, r.run, r.n); err != nil {
			t.Fatal(err)
		}
	}
}

// rechain recomputes digests and the hash chain of run from event 1, so a
// forged event is internally consistent and only deeper checks can find it.
func rechain(t *testing.T, path, run string) {
	t.Helper()
	st := open(t, path, false)
	evs, err := st.Events(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	prev := store.GenesisHash
	for _, e := range evs {
		d := store.BodyDigest(e.Body)
		next := store.ChainHash(prev, e.Seq, d)
		if _, err := st.DB().Exec(`UPDATE events SET digest = ?, prev_hash = ?, chain_hash = ? WHERE run_id = ? AND seq = ?`, d, prev, next, run, e.Seq); err != nil {
			t.Fatal(err)
		}
		prev = next
	}
	if _, err := st.DB().Exec(`UPDATE runs SET head_hash = ? WHERE run_id = ?`, prev, run); err != nil {
		t.Fatal(err)
	}
}

func findings(t *testing.T, path, run string) string {
	t.Helper()
	st := open(t, path, true)
	rep, err := Run(ctx, st, nil, run)
	if err != nil {
		t.Fatal(err)
	}
	// Whatever the tampering, the verifier reports exactly what the
	// oracle that decodes everything reports.
	slow, err := slowRun(ctx, st, nil, run)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, slow) {
		t.Fatalf("verify reports\n%+v\nthe oracle\n%+v", rep, slow)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Check+": "+f.Detail)
	}
	return strings.Join(out, "\n")
}

func TestTamperingIsFound(t *testing.T) {
	cases := []struct {
		name  string
		edit  []string
		chain bool
		want  string
	}{
		{"event bytes", []string{`UPDATE events SET body = CAST(replace(body, 'INGEST', 'INGESX') AS BLOB) WHERE run_id = 'small' AND seq = 1`}, false, "event-digest"},
		{"forged control record, chain rebuilt", []string{`UPDATE events SET body = CAST(replace(body, '"to":"SUCCEEDED"', '"to":"FAILED_PERMANENT"') AS BLOB) WHERE run_id = 'small' AND kind = 'control'`}, true, "control-replay"},
		{"receipt outcome", []string{`UPDATE receipts SET body = CAST(replace(body, 'confirmed_success', 'confirmed_failure') AS BLOB) WHERE run_id = 'small'`}, false, "receipt-digest"},
		{"approval un-consumed", []string{`UPDATE approvals SET status = 'granted', consumed_by = ''`}, false, "approval"},
		{"receipt without success attempt", []string{`UPDATE attempts SET status = 'failed_permanent'`}, false, "verified-success-only"},
		{"outcome rewritten", []string{`UPDATE runs SET outcome = 'failure' WHERE run_id = 'small'`}, false, "run-outcome"},
		{"fencing", []string{`UPDATE events SET generation = 99 WHERE run_id = 'small' AND seq = 2`}, false, "fencing"},
		{"an effect removed whole", []string{"DROP TRIGGER IF EXISTS receipts_no_delete", "DROP TRIGGER IF EXISTS intents_no_delete",
			`DELETE FROM receipts WHERE run_id = 'small'`,
			`DELETE FROM attempts WHERE intent_id IN (SELECT intent_id FROM intents WHERE run_id = 'small')`,
			`DELETE FROM outbox WHERE run_id = 'small'`,
			`DELETE FROM intents WHERE run_id = 'small'`}, false, "receipt-accepted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := recorded(t)
			run := "small"
			if strings.Contains(c.name, "approval") {
				run = "large"
			}
			tamper(t, path, c.edit...)
			if c.chain {
				rechain(t, path, run)
			}
			got := findings(t, path, run)
			if !strings.Contains(got, c.want) {
				t.Fatalf("tampering not found as %s; findings:\n%s", c.want, got)
			}
		})
	}
}

// Replay with a workflow whose policy differs from the one that ran finds
// the first effect it would have planned differently.
func TestReplayFindsAChangedWorkflow(t *testing.T) {
	st := open(t, recorded(t), true)
	other := wf
	other.Destination = "another-bank"
	rp, err := Replay(ctx, st, other, "small")
	if err != nil {
		t.Fatal(err)
	}
	if rp.OK() || rp.Findings[0].Check != "replay-effect" {
		t.Fatalf("replay under another workflow: %+v", rp)
	}
}
