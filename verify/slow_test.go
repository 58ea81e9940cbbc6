package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"pgregory.net/rapid"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// The verifier as it was before its checks read only what they need: every
// event canonicalized, every control record decoded strictly, the
// checkpoint, intents, receipts and accepted inputs decoded whole with
// encoding/json by each check that reads them. The tests hold Run's
// reports to this oracle's, finding for finding.

func slowRun(ctx context.Context, st store.Store, m *control.Machine, runID string) (*Report, error) {
	rec, err := load(ctx, st, runID, withRun|withEffects)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = control.Default()
	}
	run, evs := rec.run, rec.events
	rep := &Report{RunID: runID, State: run.State, Outcome: run.Outcome, Findings: []Finding{}}
	rep.Events = len(evs)
	cfg := slowCheckEvents(rep, m, run, evs)
	cp := slowCheckpointBody(rep, rec, cfg)
	attempts, err := slowCheckEffects(ctx, rep, rec)
	if err != nil {
		return nil, err
	}
	slowCheckBudgets(rep, cp, evs, attempts)
	if err := slowCheckRetries(ctx, rep, rec, cp); err != nil {
		return nil, err
	}
	slowCheckAcceptedReceipts(rep, rec)
	return rep, nil
}

// slowCheckAcceptedReceipts is checkAcceptedReceipts with every accepted
// input decoded by encoding/json.
func slowCheckAcceptedReceipts(rep *Report, rec *record) {
	digests := map[string]bool{}
	for _, rc := range rec.receipts {
		digests[rc.Digest] = true
	}
	for _, e := range rec.events {
		var in struct {
			Kind   string `json:"kind"`
			Digest string `json:"digest"`
		}
		if e.Kind != runner.EventAccepted || json.Unmarshal(e.Body, &in) != nil || in.Kind != "receipt" {
			continue
		}
		if !digests[in.Digest] {
			rep.fail("receipt-accepted", fmt.Sprintf("event %d", e.Seq), "the run accepted receipt %s as an input; the receipts ledger holds none with that digest", in.Digest)
		}
	}
}

// slowCheckpointBody is checkCheckpoint with the checkpoint always decoded.
func slowCheckpointBody(rep *Report, rec *record, cfg control.Configuration) []byte {
	run, cp := rec.run, rec.cp
	if !rec.hasCP {
		if run.Head > 0 {
			rep.fail("checkpoint", "run", "the run has events but no checkpoint")
		}
		return nil
	}
	if store.BodyDigest(cp.Body) != cp.Digest {
		rep.fail("checkpoint", "checkpoint", "digest does not match its bytes")
	}
	if cp.Seq != run.Head {
		rep.fail("checkpoint", "checkpoint", "follows event %d; the run is at %d", cp.Seq, run.Head)
	}
	var body struct {
		Control control.Configuration `json:"control"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil {
		rep.fail("checkpoint", "checkpoint", "unreadable: %v", err)
		return nil
	}
	a, _ := cjson.Marshal(body.Control)
	b, _ := cjson.Marshal(cfg)
	if !bytes.Equal(a, b) {
		rep.fail("checkpoint", "checkpoint", "control configuration %s differs from the replayed %s", a, b)
	}
	return cp.Body
}

func slowCheckEffects(ctx context.Context, rep *Report, rec *record) (int64, error) {
	run, ins, rcs := rec.run, rec.intents, rec.receipts
	var attempts int64
	rep.Intents, rep.Receipts = len(ins), len(rcs)
	byIntent := map[string]store.Receipt{}
	for _, rc := range rcs {
		if _, dup := byIntent[rc.IntentID]; dup {
			rep.fail("receipt-unique", rc.IntentID, "more than one receipt")
		}
		byIntent[rc.IntentID] = rc
	}
	intentIDs := map[string]bool{}
	for _, in := range ins {
		intentIDs[in.ID] = true
		where := "intent " + in.ID
		var intent protocol.EffectIntent
		if store.BodyDigest(in.Body) != in.Digest {
			rep.fail("intent-digest", where, "digest does not match its bytes")
		}
		if err := protocol.Validate(protocol.KindEffectIntent, in.Body); err != nil {
			rep.fail("intent-protocol", where, "%v", err)
		} else if err := json.Unmarshal(in.Body, &intent); err != nil {
			rep.fail("intent-protocol", where, "%v", err)
		}
		if intent.IdempotencyKey != in.IdempotencyKey || intent.IntentID != in.ID || intent.EffectType != in.EffectType {
			rep.fail("intent-binding", where, "stored columns disagree with the intent's own fields")
		}
		if err := slowCheckApproval(ctx, rep, rec, in, intent, where); err != nil {
			return 0, err
		}
		ats, err := rec.attemptsOf(ctx, in.ID)
		if err != nil {
			return 0, err
		}
		attempts += int64(len(ats))
		checkAttempts(rep, run, in, ats)
		rc, hasReceipt := byIntent[in.ID]
		switch {
		case hasReceipt != (in.Outbox == store.OutboxDone):
			rep.fail("outbox", where, "outbox %s but receipt present=%v", in.Outbox, hasReceipt)
		case hasReceipt:
			slowCheckReceipt(rep, intent, rc, ats, where)
		}
		if run.Outcome != "" && !hasReceipt && run.State != "EFFECT_OUTCOME_UNKNOWN" {
			rep.fail("closure", where, "the run ended %s but this effect has no receipt", run.State)
		}
	}
	for _, rc := range rcs { // in commit order, so that reports compare
		if !intentIDs[rc.IntentID] {
			rep.fail("receipt-orphan", rc.IntentID, "receipt for an intent this run never committed")
			intentIDs[rc.IntentID] = true // reported once
		}
	}
	if run.Outcome == "success" {
		for _, in := range ins {
			if rc, ok := byIntent[in.ID]; !ok || rc.Outcome == protocol.OutcomeUnknown {
				rep.fail("closure", "intent "+in.ID, "a successful run has an effect without a confirmed receipt")
			}
		}
	}
	return attempts, nil
}

func slowCheckApproval(ctx context.Context, rep *Report, rec *record, in store.Intent, intent protocol.EffectIntent, where string) error {
	if !intent.ApprovalRequired {
		if in.ApprovalID != "" {
			rep.fail("approval", where, "consumed approval %s although none was required", in.ApprovalID)
		}
		return nil
	}
	if in.ApprovalID == "" {
		rep.fail("approval", where, "approval required but none consumed")
		return nil
	}
	a, err := rec.approval(ctx, in.ApprovalID)
	if store.CodeOf(err) == store.CodeNotFound {
		rep.fail("approval", where, "approval %s is not in the ledger", in.ApprovalID)
		return nil
	} else if err != nil {
		return err
	}
	rep.Approvals++
	if store.BodyDigest(a.Body) != a.Digest {
		rep.fail("approval", where, "grant %s digest does not match its bytes", a.ID)
	}
	if err := runner.CheckGrant(a); err != nil {
		rep.fail("approval", where, "%v", err)
	}
	if a.Status != store.ApprovalConsumed || a.ConsumedBy != in.ID {
		rep.fail("approval", where, "grant %s is %s by %q, not consumed by this intent", a.ID, a.Status, a.ConsumedBy)
	}
	if a.RunID != rec.run.ID {
		rep.fail("approval", where, "grant %s belongs to run %s", a.ID, a.RunID)
	}
	if intent.ApprovalDigest == nil || *intent.ApprovalDigest != a.Digest {
		rep.fail("approval", where, "the intent does not name the grant it consumed")
	}
	return nil
}

func slowCheckReceipt(rep *Report, intent protocol.EffectIntent, rc store.Receipt, ats []store.Attempt, where string) {
	if store.BodyDigest(rc.Body) != rc.Digest {
		rep.fail("receipt-digest", where, "digest does not match its bytes")
	}
	var receipt protocol.ActionReceipt
	if err := protocol.Validate(protocol.KindActionReceipt, rc.Body); err != nil {
		rep.fail("receipt-protocol", where, "%v", err)
		return
	}
	if err := json.Unmarshal(rc.Body, &receipt); err != nil {
		rep.fail("receipt-protocol", where, "%v", err)
		return
	}
	if err := protocol.CheckReceiptBinding(intent, receipt); err != nil {
		rep.fail("receipt-binding", where, "%v", err)
	}
	if receipt.Outcome != rc.Outcome {
		rep.fail("receipt-binding", where, "stored outcome %s, receipt says %s", rc.Outcome, receipt.Outcome)
	}
	if receipt.Outcome == protocol.OutcomeConfirmedSuccess {
		ok := false
		for _, a := range ats {
			ok = ok || a.Status == store.AttemptSucceeded || a.Status == store.AttemptReconciledApplied
		}
		if !ok {
			rep.fail("verified-success-only", where, "a confirmed success with no succeeded or reconciled-applied attempt")
		}
		if len(receipt.OutputDigests) == 0 {
			rep.fail("verified-success-only", where, "a confirmed success that names no destination evidence")
		}
	}
}

func slowCheckBudgets(rep *Report, cpBody []byte, evs []store.Event, attempts int64) {
	var body struct {
		Budget *ledger `json:"budget"`
		// Reported usage the log does not hold yet: adapters' reports on
		// effects still open, and on receipts not yet accepted.
		Open []struct {
			Stage string        `json:"stage"`
			Usage *runner.Usage `json:"usage"`
		} `json:"open"`
		Ingest []struct {
			Usage *runner.Usage `json:"usage"`
		} `json:"ingest"`
	}
	if err := json.Unmarshal(cpBody, &body); err != nil || body.Budget == nil {
		return
	}
	// reported adds up the usage reports: first those in the log, in order
	// (an outside input's report must fit what the log had charged before
	// it — at least that much had been), then those the checkpoint holds.
	var reported runner.Usage
	add := func(u *runner.Usage) {
		if u != nil {
			reported.Tokens += u.Tokens
			reported.CostMicros += u.CostMicros
		}
	}
	l := body.Budget
	const where = "budget"
	if l.WallMillis < 0 || l.SuspendMillis < 0 || l.ClockMillis < l.StartedMillis ||
		l.WallMillis+l.SuspendMillis != l.ClockMillis-l.StartedMillis {
		rep.fail("budget-time", where, "wall %d ms + suspended %d ms is not the %d ms between the first and last clock readings",
			l.WallMillis, l.SuspendMillis, l.ClockMillis-l.StartedMillis)
	}
	var accepted int64
	var issued []control.Record
	for _, e := range evs {
		switch e.Kind {
		case runner.EventAccepted:
			accepted++
			var in struct {
				Kind  string        `json:"kind"`
				Usage *runner.Usage `json:"usage"`
			}
			if json.Unmarshal(e.Body, &in) != nil {
				break
			}
			if in.Kind != "receipt" && !l.Adopted && accepted > l.Limits.Steps {
				rep.fail("budget-limit", "event "+strconv.FormatInt(e.Seq, 10), "outside input accepted as step %d of a budget of %d", accepted, l.Limits.Steps)
			}
			if in.Usage != nil && (in.Usage.Check() != nil) {
				rep.fail("budget-usage", "event "+strconv.FormatInt(e.Seq, 10), "usage report out of range: %v", in.Usage.Check())
			}
			add(in.Usage)
			if in.Kind != "receipt" && in.Usage != nil && !l.Adopted && (reported.Tokens > l.Limits.Tokens || reported.CostMicros > l.Limits.CostMicros) {
				rep.fail("budget-limit", "event "+strconv.FormatInt(e.Seq, 10), "outside input accepted with a usage report that takes the run to %d tokens and %d cost_micros, over its budgets of %d and %d",
					reported.Tokens, reported.CostMicros, l.Limits.Tokens, l.Limits.CostMicros)
			}
		case runner.EventControl:
			var rec control.Record
			if mayHold(e.Body, "TIMEOUT", "BUDGET_EXHAUSTED") && json.Unmarshal(e.Body, &rec) == nil && budgetEvents[rec.Event] != "" && rec.ActorRole == budgetEvents[rec.Event] {
				issued = append(issued, rec)
			}
		}
	}
	for _, e := range body.Open {
		if e.Stage != "closed" { // a closed effect's report travels with its receipt
			add(e.Usage)
		}
	}
	for _, r := range body.Ingest {
		add(r.Usage)
	}
	countOK := func(recorded, counted int64) bool {
		if l.Adopted {
			return recorded <= counted // the ledger opened mid-run
		}
		return recorded == counted
	}
	if !countOK(l.Steps, accepted) {
		rep.fail("budget-count", where, "ledger counts %d steps; the log has %d accepted inputs", l.Steps, accepted)
	}
	if !countOK(l.ToolCalls, attempts) {
		rep.fail("budget-count", where, "ledger counts %d tool calls; %d attempts are recorded", l.ToolCalls, attempts)
	}
	if !countOK(l.Tokens, reported.Tokens) || !countOK(l.CostMicros, reported.CostMicros) {
		rep.fail("budget-count", where, "ledger counts %d tokens and %d cost_micros; the reports on record add up to %d and %d",
			l.Tokens, l.CostMicros, reported.Tokens, reported.CostMicros)
	}
	if l.ToolCalls > l.Limits.ToolCalls {
		rep.fail("budget-limit", where, "%d tool calls against a budget of %d", l.ToolCalls, l.Limits.ToolCalls)
	}
	switch {
	case len(issued) > 1:
		rep.fail("budget-breach", where, "the budget governor interrupted the run %d times", len(issued))
	case len(issued) == 1 && l.Breach == nil:
		rep.fail("budget-breach", where, "%s issued with no breach recorded", issued[0].Event)
	case len(issued) == 0 && l.Breach != nil:
		rep.fail("budget-breach", where, "a %s breach is recorded but %s was never issued", l.Breach.Dimension, l.Breach.Event)
	case len(issued) == 1:
		checkBreach(rep, l, issued[0])
	}
}

func slowCheckRetries(ctx context.Context, rep *Report, rec *record, cpBody []byte) error {
	run, evs := rec.run, rec.events
	var body struct {
		Budget *struct {
			Adopted          bool            `json:"adopted"`
			MaxAttempts      int64           `json:"max_attempts"`
			RetriesExhausted json.RawMessage `json:"retries_exhausted"`
		} `json:"budget"`
	}
	if cpBody == nil || json.Unmarshal(cpBody, &body) != nil || body.Budget == nil {
		return nil
	}
	l := body.Budget
	const where = "retries"
	var issued []control.Record
	accepted := map[string]bool{} // digests of accepted receipts
	for _, e := range evs {
		switch e.Kind {
		case runner.EventControl:
			var cr control.Record
			if mayHold(e.Body, retryEvent) && json.Unmarshal(e.Body, &cr) == nil && cr.Event == retryEvent {
				issued = append(issued, cr)
			}
		case runner.EventAccepted:
			var in struct {
				Kind   string `json:"kind"`
				Digest string `json:"digest"`
			}
			if mayHold(e.Body, "receipt") && json.Unmarshal(e.Body, &in) == nil && in.Kind == "receipt" {
				accepted[in.Digest] = true
			}
		}
	}
	if l.MaxAttempts <= 0 {
		if len(issued) > 0 {
			rep.fail("retries-exhausted", where, "%s issued by a run whose ledger records no attempt limit", retryEvent)
		}
		return nil
	}
	spent := map[string]map[string]any{}
	var order []string
	for _, in := range rec.intents {
		if in.Attempts != l.MaxAttempts {
			continue // the outbox count rules it out without reading the rows
		}
		ats, err := rec.attemptsOf(ctx, in.ID)
		if err != nil {
			return err
		}
		if a, ok := spentAttempts(ats, l.MaxAttempts); ok {
			spent[in.ID] = a
			order = append(order, in.ID)
		}
	}
	var recorded map[string]any
	if len(l.RetriesExhausted) > 0 && string(l.RetriesExhausted) != "null" {
		v, err := cjson.Decode(l.RetriesExhausted)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			rep.fail("retries-exhausted", where, "unreadable attempt ledger: %s", l.RetriesExhausted)
			return nil
		}
		recorded = m
		id, _ := m["intent"].(string)
		want, ok := spent[id]
		switch {
		case !ok:
			rep.fail("retries-exhausted", where, "the ledger says intent %q spent its retries; its attempt rows do not show %d retryable failures ending in a confirmed one", id, l.MaxAttempts)
		default:
			a, _ := cjson.Marshal(m)
			b, _ := cjson.Marshal(want)
			if string(a) != string(b) {
				rep.fail("retries-exhausted", where, "the attempt ledger %s differs from the attempt rows %s", a, b)
			}
		}
	} else if len(order) > 0 && !l.Adopted {
		rep.fail("retries-exhausted", where, "intent %s spent its %d attempts but the ledger does not say so", order[0], l.MaxAttempts)
	}
	switch {
	case len(issued) > 1:
		rep.fail("retries-exhausted", where, "the retry controller halted the run %d times", len(issued))
	case len(issued) == 1 && recorded == nil:
		rep.fail("retries-exhausted", where, "%s issued with no attempt ledger recorded", retryEvent)
	case len(issued) == 1:
		d, err := cjson.DigestOf(map[string]any{"evidence": "bounded_attempt_ledger", "value": recorded})
		if err != nil || issued[0].Evidence["bounded_attempt_ledger"] != d {
			rep.fail("retries-exhausted", where, "the evidence of %s is not the recorded attempt ledger", retryEvent)
		}
	}
	if len(order) == 0 {
		return nil
	}
	for _, rc := range rec.receipts {
		if spent[rc.IntentID] != nil && accepted[rc.Digest] {
			rep.fail("retries-exhausted", "intent "+rc.IntentID, "the failure receipt of an intent whose retries were spent was accepted as an input: the run should have halted %s first", retryEvent)
		}
	}
	switch run.State {
	case "", "RETRY_EXHAUSTED", "CANCELED", "TIMED_OUT", "BUDGET_EXHAUSTED", "EFFECT_OUTCOME_UNKNOWN":
	default:
		if run.Outcome != "" {
			rep.fail("retries-exhausted", where, "intent %s spent its retries but the run ended %s, not RETRY_EXHAUSTED", order[0], run.State)
		}
	}
	return nil
}

// editRecords rewrites, in every run of the database at path, the bodies
// of the events of kind and of the latest checkpoints that edit changes,
// then rebuilds digests and the hash chain so that only the deeper checks
// can tell.
func editRecords(t *testing.T, path string, ids []string, kind string, edit func(body string) string) int {
	t.Helper()
	n := 0
	if kind == "checkpoint" {
		for _, id := range ids {
			cp, err := open(t, path, true).Checkpoint(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if body := edit(string(cp.Body)); body != string(cp.Body) {
				forgeLedger(t, path, id, string(cp.Body), body)
				n++
			}
		}
		return n
	}
	st := open(t, path, false)
	for _, s := range []string{"DROP TRIGGER IF EXISTS events_no_update"} {
		if _, err := st.DB().Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind != kind {
				continue
			}
			if body := edit(string(e.Body)); body != string(e.Body) {
				if _, err := st.DB().Exec(`UPDATE events SET body = ? WHERE run_id = ? AND seq = ?`, []byte(body), id, e.Seq); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		rechain(t, path, id)
	}
	return n
}

// Over ordinary runs, honest and edited wherever a check reads a member
// only when it is spelled plainly, Run reports exactly what the oracle
// that decodes everything reports.
func TestRunMatchesTheSlowOracle(t *testing.T) {
	orig, _, ids := manyRuns(t, 20)
	text, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	replace := func(from, to string) func(string) string {
		return func(s string) string { return strings.Replace(s, from, to, 1) }
	}
	for _, c := range []struct {
		name, kind string
		edit       func(string) string
	}{
		{"honest", "", nil},
		{"a usage report on an input", runner.EventAccepted, replace(`"kind":"input"`, `"kind":"input","usage":{"cost_micros":5,"tokens":7}`)},
		{"a usage report out of range", runner.EventAccepted, replace(`"kind":"input"`, `"kind":"input","usage":{"cost_micros":-5,"tokens":7}`)},
		{"a usage report of another type", runner.EventAccepted, replace(`"kind":"input"`, `"kind":"input","usage":"lots"`)},
		{"a null usage report", runner.EventAccepted, replace(`"kind":"input"`, `"kind":"input","usage":null`)},
		{"a receipt's digest null", runner.EventAccepted, func(s string) string {
			if !strings.Contains(s, `"kind":"receipt"`) {
				return s
			}
			i := strings.LastIndex(s, `"digest":"`)
			return s[:i] + `"digest":null` + s[i+len(`"digest":"sha256:`)+64+1:]
		}},
		{"a receipt's digest escaped", runner.EventAccepted, replace(`"digest":"sha256:`, `"digest":"\u0073ha256:`)},
		{"a kind escaped", runner.EventAccepted, replace(`"kind":"receipt"`, `"kind":"rec\u0065ipt"`)},
		{"a kind of another type", runner.EventAccepted, replace(`"kind":"receipt"`, `"kind":7`)},
		{"a kind twice", runner.EventAccepted, replace(`"kind":"input"`, `"kind":"receipt","kind":"input"`)},
		{"a kind in another case", runner.EventAccepted, replace(`"kind":"input"`, `"Kind":"receipt"`)},
		{"a control event renamed TIMEOUT", runner.EventControl, replace(`"event":"VERIFIED_COMPLETE"`, `"event":"TIMEOUT"`)},
		{"a control event renamed RETRIES_EXHAUSTED", runner.EventControl, replace(`"event":"NO_EFFECTS"`, `"event":"RETRIES_EXHAUSTED"`)},
		{"a checkpoint's open member twice", "checkpoint", replace(`"open":[]`, `"open":[],"open":[{"stage":"committed","usage":{"cost_micros":1,"tokens":2}}]`)},
		{"a checkpoint's budget in another case", "checkpoint", func(s string) string {
			return replace(`"budget":`, `"Budget":`)(replace(`"tokens":0,"tool_calls"`, `"tokens":5,"tool_calls"`)(s))
		}},
		{"a checkpoint's attempt limit a string", "checkpoint", replace(`"max_attempts":4`, `"max_attempts":"4"`)},
		{"a checkpoint's tokens miscounted", "checkpoint", replace(`"tokens":0,"tool_calls"`, `"tokens":5,"tool_calls"`)},
		{"a checkpoint's usage on an input not yet accepted", "checkpoint", replace(`"ingest":[]`, `"ingest":[{"usage":{"cost_micros":1,"tokens":2}}]`)},
		{"a checkpoint's ingest of another type", "checkpoint", replace(`"ingest":[]`, `"ingest":{}`)},
		{"a checkpoint with a float", "checkpoint", func(s string) string {
			return replace(`"ingest":`, `"x":1.5,"ingest":`)(replace(`"tokens":0,"tool_calls"`, `"tokens":5,"tool_calls"`)(s))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "many.db")
			if err := os.WriteFile(path, text, 0o600); err != nil {
				t.Fatal(err)
			}
			if c.edit != nil && editRecords(t, path, ids, c.kind, c.edit) == 0 {
				t.Fatal("the edit changed nothing")
			}
			st := open(t, path, true)
			bad := 0
			for _, id := range ids {
				rep, err := Run(ctx, st, nil, id)
				if err != nil {
					t.Fatal(err)
				}
				slow, err := slowRun(ctx, st, nil, id)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rep, slow) {
					t.Fatalf("%s: verify reports\n%+v\nthe oracle\n%+v", id, rep, slow)
				}
				if !rep.OK() {
					bad++
				}
			}
			if c.edit == nil && bad > 0 {
				t.Fatalf("%d of %d honest runs have findings", bad, len(ids))
			}
			t.Logf("%d of %d runs have findings", bad, len(ids))
		})
	}
}

// storedEffects reads run id's intents and receipts, failing t on error.
func storedEffects(t *testing.T, st store.Store, id string) ([]store.Intent, []store.Receipt) {
	t.Helper()
	ins, err := st.Intents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := st.Receipts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return ins, rcs
}

// The struct reader reads every stored intent and receipt itself, exactly
// as encoding/json does, in the members it keeps.
func TestStructReaderReadsStoredEffects(t *testing.T) {
	st := open(t, recorded(t), true)
	n := 0
	for _, id := range []string{"small", "large"} {
		ins, rcs := storedEffects(t, st, id)
		for _, in := range ins {
			var got, want protocol.EffectIntent
			if read, err := intentCheck.Validate(in.Body, &got); !read || err != nil {
				t.Fatalf("the schema check did not read %s: %v", in.Body, err)
			}
			if err := json.Unmarshal(in.Body, &want); err != nil || !reflect.DeepEqual(got, keptOnly(want, intentKept)) {
				t.Fatalf("checked %+v, encoding/json %+v %v", got, want, err)
			}
			sameRead(t, in.Body)
			got = protocol.EffectIntent{}
			if !intentReader.Read(in.Body, &got) {
				t.Fatalf("gave up on %s", in.Body)
			}
			if err := json.Unmarshal(in.Body, &want); err != nil || !reflect.DeepEqual(got, keptOnly(want, intentKept)) {
				t.Fatalf("read %+v, encoding/json %+v %v", got, want, err)
			}
			n++
		}
		for _, rc := range rcs {
			var got, want protocol.ActionReceipt
			if read, err := receiptCheck.Validate(rc.Body, &got); !read || err != nil {
				t.Fatalf("the schema check did not read %s: %v", rc.Body, err)
			}
			if err := json.Unmarshal(rc.Body, &want); err != nil || !reflect.DeepEqual(got, keptOnly(want, receiptKept)) {
				t.Fatalf("checked %+v, encoding/json %+v %v", got, want, err)
			}
			sameRead(t, rc.Body)
			got = protocol.ActionReceipt{}
			if !receiptReader.Read(rc.Body, &got) {
				t.Fatalf("gave up on %s", rc.Body)
			}
			if err := json.Unmarshal(rc.Body, &want); err != nil || !reflect.DeepEqual(got, keptOnly(want, receiptKept)) {
				t.Fatalf("read %+v, encoding/json %+v %v", got, want, err)
			}
			n++
		}
	}
	if n < 4 {
		t.Fatalf("only %d intents and receipts", n)
	}
}

// previousReadIntent is how verify read an intent before readIntent: the
// schema check, then the struct reader, encoding/json where it gave up.
func previousReadIntent(b []byte) (intent protocol.EffectIntent, err error) {
	if err := protocol.Validate(protocol.KindEffectIntent, b); err != nil {
		return intent, err
	}
	if intentReader.Read(b, &intent) {
		return intent, nil
	}
	intent = protocol.EffectIntent{}
	return intent, json.Unmarshal(b, &intent)
}

// previousReadReceipt is previousReadIntent for a receipt.
func previousReadReceipt(b []byte) (receipt protocol.ActionReceipt, err error) {
	if err := protocol.Validate(protocol.KindActionReceipt, b); err != nil {
		return receipt, err
	}
	if receiptReader.Read(b, &receipt) {
		return receipt, nil
	}
	receipt = protocol.ActionReceipt{}
	return receipt, json.Unmarshal(b, &receipt)
}

// sameRead fails unless readIntent and readReceipt give what the
// previous reading gave for b: the same error, message included, and the
// same members the checks read (the previous reading filled the others
// only where it fell back to encoding/json).
func sameRead(t interface {
	Helper()
	Fatalf(string, ...any)
}, b []byte) {
	t.Helper()
	gi, gerr := readIntent(b)
	wi, werr := previousReadIntent(b)
	if !reflect.DeepEqual(keptOnly(gi, intentKept), keptOnly(wi, intentKept)) || fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("%q: intent %+v %v, previously %+v %v", b, gi, gerr, wi, werr)
	}
	gr, gerr := readReceipt(b)
	wr, werr := previousReadReceipt(b)
	if !reflect.DeepEqual(keptOnly(gr, receiptKept), keptOnly(wr, receiptKept)) || fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(gerr, werr) {
		t.Fatalf("%q: receipt %+v %v, previously %+v %v", b, gr, gerr, wr, werr)
	}
}

// The members the intent and receipt readers keep.
var (
	intentKept  = append(bindingMembers, "effect_type")
	receiptKept = append(bindingMembers, "outcome", "output_digests")
)

// keptOnly is v with every member whose JSON name is not in names zeroed.
func keptOnly[T any](v T, names []string) T {
	rv := reflect.ValueOf(&v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if !slices.Contains(names, name) {
			rv.Field(i).SetZero()
		}
	}
	return v
}

// changedMember is v with its member i set to a different value.
func changedMember[T any](v T, i int) T {
	f := reflect.ValueOf(&v).Elem().Field(i)
	switch f.Kind() {
	case reflect.String:
		f.SetString(f.String() + "-other")
	case reflect.Bool:
		f.SetBool(!f.Bool())
	case reflect.Pointer:
		other := "sha256:other"
		if f.IsNil() {
			f.Set(reflect.ValueOf(&other))
		} else {
			f.SetZero()
		}
	case reflect.Slice:
		f.Set(reflect.Append(f, reflect.Zero(f.Type().Elem())))
	case reflect.Struct:
		f.Field(0).SetString(f.Field(0).String() + "-other")
	}
	return v
}

// Every member of an intent or a receipt that the checks read is one the
// readers keep: changing any other member of a stored intent or receipt
// leaves the binding check's verdict, and the members checkEffects,
// checkApproval and checkReceipt read, unchanged.
func TestEffectReadersKeepWhatTheChecksRead(t *testing.T) {
	st := open(t, recorded(t), true)
	n := 0
	for _, id := range []string{"small", "large"} {
		ins, rcs := storedEffects(t, st, id)
		for _, in := range ins {
			var intent protocol.EffectIntent
			if err := json.Unmarshal(in.Body, &intent); err != nil {
				t.Fatal(err)
			}
			for _, rc := range rcs {
				if rc.IntentID != in.ID {
					continue
				}
				var receipt protocol.ActionReceipt
				if err := json.Unmarshal(rc.Body, &receipt); err != nil {
					t.Fatal(err)
				}
				if protocol.CheckReceiptBinding(intent, receipt) != nil {
					t.Fatalf("%s: the stored receipt is not bound to its intent", in.ID)
				}
				n++
				for i := 0; i < reflect.TypeOf(intent).NumField(); i++ {
					name, _, _ := strings.Cut(reflect.TypeOf(intent).Field(i).Tag.Get("json"), ",")
					if bound := protocol.CheckReceiptBinding(changedMember(intent, i), receipt) != nil; bound != slices.Contains(bindingMembers, name) {
						t.Errorf("intent member %s: changing it fails the binding: %v", name, bound)
					}
				}
				for i := 0; i < reflect.TypeOf(receipt).NumField(); i++ {
					name, _, _ := strings.Cut(reflect.TypeOf(receipt).Field(i).Tag.Get("json"), ",")
					if bound := protocol.CheckReceiptBinding(intent, changedMember(receipt, i)) != nil; bound && !slices.Contains(receiptKept, name) {
						t.Errorf("receipt member %s is read by the binding but not kept", name)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no intent with a receipt")
	}
}

// Generated bodies: the stored intents and receipts with a member's value
// replaced, a member dropped or repeated, or the text edited anywhere, read
// the same way as before (intents as receipts and the other way round too).
func TestReadEffectsAsBefore(t *testing.T) {
	st := open(t, recorded(t), true)
	var bodies [][]byte
	for _, id := range []string{"small", "large"} {
		ins, rcs := storedEffects(t, st, id)
		for _, in := range ins {
			bodies = append(bodies, in.Body)
		}
		for _, rc := range rcs {
			bodies = append(bodies, rc.Body)
		}
	}
	values := []string{
		`"x"`, `"sha256:` + strings.Repeat("a", 64) + `"`, `null`, `true`, `false`, `1`, `-0`, `1.5`, `[]`, `["sha256:` + strings.Repeat("b", 64) + `"]`,
		`{}`, `"\u0041"`, `"é"`, `"a\"b"`, `"high_risk_external"`, `"confirmed_success"`, `"outcome_unknown"`, `""`, `[1]`, `["a","a"]`,
	}
	tokens := []string{`"`, `\`, ",", ":", "]", "}", "{", "[", " ", "\x7f", "\xff", "null", `"Intent_ID"`, `"intent_id"`}
	rapid.Check(t, func(t *rapid.T) {
		b := slices.Clone(rapid.SampledFrom(bodies).Draw(t, "body"))
		for n := rapid.IntRange(1, 3).Draw(t, "edits"); n > 0; n-- {
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0: // a member's value replaced
				m := memberValue.FindAllIndex(b, -1)
				if len(m) == 0 {
					continue
				}
				at := m[rapid.IntRange(0, len(m)-1).Draw(t, "member")]
				v := rapid.SampledFrom(values).Draw(t, "value")
				b = slices.Concat(b[:at[0]], memberValue.ReplaceAll(b[at[0]:at[1]], []byte("${1}"+v)), b[at[1]:])
			case 1: // a member repeated under another name or the same
				m := memberValue.FindAllIndex(b, -1)
				if len(m) == 0 {
					continue
				}
				at := m[rapid.IntRange(0, len(m)-1).Draw(t, "member")]
				name := rapid.SampledFrom(append(slices.Clone(intentKept), "Outcome", "kind", "extra")).Draw(t, "name")
				b = slices.Concat(b[:at[1]], []byte(`,"`+name+`":`+rapid.SampledFrom(values).Draw(t, "value")), b[at[1]:])
			default: // the text edited
				at := rapid.IntRange(0, len(b)-1).Draw(t, "at")
				cut := rapid.IntRange(0, min(2, len(b)-at)).Draw(t, "cut")
				b = slices.Concat(b[:at], []byte(rapid.SampledFrom(tokens).Draw(t, "token")), b[at+cut:])
			}
		}
		sameRead(t, b)
	})
}

// memberValue finds a member whose value is a string, a literal or a
// number (the name and colon in group 1).
var memberValue = regexp.MustCompile(`("[a-z_]+"\s*:\s*)("[^"\\]*"|true|false|null|-?[0-9]+)`)
