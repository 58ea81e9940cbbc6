// Package verify checks a run's durable record independently of the runner
// that wrote it, and replays its pure steps.
//
// Verify trusts nothing but the store's bytes: it recomputes every digest and
// the event hash chain, re-steps every control record through the FSM table
// and compares the result byte for byte, checks that every intent is a valid
// protocol object bound to its idempotency key and (when required) to the
// exact grant it consumed, whose ledger row says what its body says, that
// every receipt is bound to its intent and every receipt the run accepted
// as an input is in the receipts ledger, that attempts, outbox and
// receipts tell one coherent story, that no write came from a fenced-off
// lease generation, and that a run which ended has closed every effect it
// owes. Replay goes further: it feeds the run's accepted inputs to the
// workflow's pure Decide again and compares the state and the effects with
// what was recorded, and each consumed grant with the request it had to
// answer.
//
// Each table of a run is read once (Check verifies and replays from one
// read), and the checks compare bytes before they decode: a stored record
// equal, byte for byte, to what verify recomputes cannot fail a check, so
// only a record that differs is decoded strictly and its findings worded.
// Many and CheckMany check several runs at once and report in the caller's
// order, exactly as checking one run after another would.
//
// It only reads: open the store read-only.
package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Finding is one violated check.
type Finding struct {
	Check  string `json:"check"`  // which invariant, e.g. "event-chain"
	Where  string `json:"where"`  // the event, intent or approval concerned
	Detail string `json:"detail"` // what differs
}

// Report is the result of verifying one run.
type Report struct {
	RunID     string `json:"run_id"`
	State     string `json:"state"`
	Outcome   string `json:"outcome"`
	Events    int    `json:"events"`
	Controls  int    `json:"control_records"`
	Intents   int    `json:"intents"`
	Receipts  int    `json:"receipts"`
	Approvals int    `json:"approvals_consumed"`
	// Concurring counts the grants intents consumed beside the one each
	// names (a quorum's other approvals), as far as the store lists them:
	// one that reads no run's grants at once (no RunApprovals) lists
	// none, and they are not checked.
	Concurring int       `json:"concurring_approvals,omitempty"`
	Findings   []Finding `json:"findings"`
	// Pruned is set when the store no longer holds the run's record but
	// its header: it was pruned (store.Pruner), archived first unless it
	// was discarded. Nothing of the record was checked here; its archive
	// is checked by Record.
	Pruned *Pruned `json:"pruned,omitempty"`
}

// Pruned is what a store recorded of a run it pruned.
type Pruned struct {
	At       time.Time `json:"at"`
	HeadHash string    `json:"head_hash"`
	Archive  string    `json:"archive"` // the archive's digest; "" when the record was discarded
	// OpenEffects counts the effects pruned with their outbox not done
	// (abandoned, outcome unknown), open in the archive as they were.
	OpenEffects int64 `json:"open_effects,omitempty"`
}

// PrunedOf is a store's pruning as a report shows it.
func PrunedOf(p store.Pruning) *Pruned {
	return &Pruned{At: p.At, HeadHash: p.HeadHash, Archive: p.Archive, OpenEffects: p.Open}
}

// OK reports whether every check passed.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

func (r *Report) fail(check, where, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Check: check, Where: where, Detail: fmt.Sprintf(format, args...)})
}

// Run verifies one run in st against the FSM table m (nil: the default).
func Run(ctx context.Context, st store.Store, m *control.Machine, runID string) (*Report, error) {
	rec, err := load(ctx, st, runID, withRun|withEffects)
	if err != nil {
		return nil, err
	}
	rep, _, err := checkRecord(ctx, rec, m, nil, runID)
	return rep, err
}

// checkRecord is Run, or with a workflow Check, of a run already read by
// load (withRun|withEffects).
func checkRecord(ctx context.Context, rec *record, m *control.Machine, wf runner.Workflow, runID string) (*Report, *ReplayReport, error) {
	defer rec.releaseKnown()
	if p, err := rec.pruned(ctx); err != nil || p != nil {
		if err != nil {
			return nil, nil, err
		}
		rep := &Report{RunID: runID, State: rec.run.State, Outcome: rec.run.Outcome, Findings: []Finding{}, Pruned: p}
		if wf == nil {
			return rep, nil, nil
		}
		return rep, &ReplayReport{RunID: runID, Findings: []Finding{}, Pruned: true}, nil
	}
	rep, err := verifyRecord(ctx, rec, m, runID)
	if err != nil || wf == nil {
		return rep, nil, err
	}
	state, err := wf.Init(runID)
	if err != nil {
		return nil, nil, fmt.Errorf("workflow init: %w", err)
	}
	rp, err := replayRecord(ctx, rec, wf, runID, state)
	if err != nil {
		return nil, nil, err
	}
	return rep, rp, nil
}

// Record verifies a run's record read elsewhere than from a store (an
// archive: package archive) as Run verifies a stored one, and, with wf,
// replays it as Check does. The record must hold the run's header and its
// effects (attempts and the grants its intents name, as store.RunRecord
// says); a grant an intent names that the record lacks is missing from
// the ledger.
func Record(ctx context.Context, m *control.Machine, wf runner.Workflow, r store.RunRecord) (*Report, *ReplayReport, error) {
	return checkRecord(ctx, fromRunRecord(nil, r, withRun|withEffects), m, wf, r.Run.ID)
}

// Check verifies a run and replays it with wf, reading the run from the
// store once: its reports are exactly those of Run and of Replay.
func Check(ctx context.Context, st store.Store, m *control.Machine, wf runner.Workflow, runID string) (*Report, *ReplayReport, error) {
	rec, err := load(ctx, st, runID, withRun|withEffects)
	if err != nil {
		return nil, nil, err
	}
	return checkRecord(ctx, rec, m, wf, runID)
}

func verifyRecord(ctx context.Context, rec *record, m *control.Machine, runID string) (*Report, error) {
	if m == nil {
		m = control.Default()
	}
	run, evs := rec.run, rec.events
	rep := &Report{RunID: runID, State: run.State, Outcome: run.Outcome, Findings: []Finding{}}
	rep.Events = len(evs)
	known := rec.takeKnown(len(evs))
	cfg := checkEvents(rep, m, run, evs, known)
	cp := checkCheckpoint(rep, rec, cfg)
	attempts, err := checkEffects(ctx, rep, rec)
	if err != nil {
		return nil, err
	}
	checkBudgets(rep, cp, evs, known, attempts)
	if err := checkRetries(ctx, rep, rec, cp, known); err != nil {
		return nil, err
	}
	checkAcceptedReceipts(rep, rec, known)
	return rep, nil
}

// checkAcceptedReceipts holds every receipt the run accepted as an input
// to the receipts ledger, which must hold a receipt with its digest. An
// effect removed whole from the tables (its intent, outbox row, attempts
// and receipt, its grant put back) leaves no trace the other checks of
// the effects can see; its receipt, accepted into the chained log, stays.
func checkAcceptedReceipts(rep *Report, rec *record, known []vouched) {
	for i, e := range rec.events {
		if e.Kind != runner.EventAccepted {
			continue
		}
		d, ok := acceptedReceiptOf(known, i, e.Body)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(rec.receipts, func(rc store.Receipt) bool { return rc.Digest == d }) {
			rep.fail("receipt-accepted", "event "+strconv.FormatInt(e.Seq, 10), "the run accepted receipt %s as an input; the receipts ledger holds none with that digest", d)
		}
	}
}

// checkEvents verifies bytes, digests and the chain, and re-steps every
// control record through the FSM. It returns the configuration the records
// lead to. When known is not nil (it then has one entry per event), it
// holds for each control record whose stored bytes are exactly the
// recomputed record that record, read: the later checks take it from
// there instead of decoding the bytes again.
func checkEvents(rep *Report, m *control.Machine, run store.Run, evs []store.Event, known []vouched) control.Configuration {
	prev := store.GenesisHash
	var gen int64
	cfg := m.Initial()
	var scratch Report // the control findings of one event, held back to keep the report's order
	var buf []byte     // a recomputed record's bytes, reused
	step := stepPool.Get().(*stepScratch)
	defer step.release()
	for i, e := range evs {
		// The stored digest, when it is the body's, is the text the body's
		// digest would be: it is used as that text rather than building it.
		sum := step.bodySum(e.Kind, e.Body)
		digestOK := store.SumMatches(e.Digest, sum)
		digest := e.Digest
		if !digestOK {
			digest = store.SumText(sum)
		}
		// A control record is re-stepped first: when the recomputed record,
		// which cjson encodes canonically, equals the stored bytes, those
		// bytes are canonical and need not be canonicalized again. That
		// check is most of the cost per event; the findings are the same.
		isControl := e.Kind == runner.EventControl || e.Kind == runner.EventRejected
		canonical := false
		scratch.Findings = scratch.Findings[:0]
		if e.Kind == runner.EventControl {
			// The cheapest path: an ordinary accepted transition, which
			// Recheck recomputes without Step's effects and copies, and
			// whose digest is the one computed above. RecheckStored reads
			// the step's inputs as it compares the record; a record it does
			// not vouch for, or one whose evidence a ledger check reads
			// (ledgerEvent), is read by stepInputsInto for Recheck.
			from := cfg.State
			if next, in, ok := m.RecheckStored(cfg, e.Body, digest); ok && !ledgerEvent(in.Event) && readWhileRechecking {
				cfg, canonical = next, true
				if known != nil {
					known[i] = vouched{rec: control.Record{Event: in.Event, ActorRole: in.ActorRole, Capability: in.Capability,
						From: from}, ok: true}
				}
			} else if in, ok := stepInputsInto(m, e.Body, step); ok {
				var next control.Configuration
				if next, canonical, buf = m.Recheck(cfg, control.StepInputs{Event: in.Event, ActorRole: in.ActorRole,
					Capability: in.Capability, EventID: in.EventID, Evidence: in.Evidence, GuardInputs: in.GuardInputs}, e.Body, digest, buf); canonical {
					cfg = next
					if known != nil {
						in.From = from
						known[i] = vouched{rec: kept(in), ok: true}
					}
				}
			}
		}
		if isControl && !canonical {
			// The fast path reads only the step's inputs and compares
			// bytes; when it cannot vouch for the record, the strict path
			// decides and words every finding.
			where := "event " + strconv.FormatInt(e.Seq, 10)
			var res control.Result
			if res, canonical, buf = restepFast(m, cfg, e, buf); canonical {
				if res.Rejection == nil {
					cfg = res.Next
					cfg.Context = nil
				}
				if known != nil {
					known[i] = vouched{rec: res.Record, ok: true}
				}
			} else {
				var rec control.Record
				if err := strictDecode(e.Body, &rec); err != nil {
					scratch.fail("control-record", where, "not a control record: %v", err)
				} else {
					cfg, canonical = restep(&scratch, m, cfg, rec, e, where)
				}
			}
		}
		// Named only when a check fails: most events pass every check.
		where := func() string { return "event " + strconv.FormatInt(e.Seq, 10) }
		if e.Seq != int64(i+1) {
			rep.fail("event-sequence", where(), "expected sequence %d", i+1)
		}
		if !digestOK {
			rep.fail("event-digest", where(), "digest %s does not match the stored bytes", e.Digest)
		}
		// IsCanonical vouches for canonical bytes without building the
		// value; anything else is canonicalized, whose error is reported.
		if !canonical && !cjson.IsCanonical(e.Body) {
			if c, err := cjson.Canonicalize(e.Body); err != nil || !bytes.Equal(c, e.Body) {
				rep.fail("event-canonical", where(), "body is not flrh-cjson/1 canonical (%v)", err)
			} else {
				canonical = true
			}
		} else {
			canonical = true
		}
		if known != nil {
			known[i].canonical = canonical
		}
		if e.PrevHash != prev || !store.SumMatches(e.ChainHash, store.ChainSum(prev, e.Seq, e.Digest)) {
			rep.fail("event-chain", where(), "hash chain broken")
		}
		prev = e.ChainHash
		if e.Generation < gen {
			rep.fail("fencing", where(), "written by lease generation %d after generation %d had written", e.Generation, gen)
		}
		gen = max(gen, e.Generation)
		if e.Generation > run.Lease.Generation {
			rep.fail("fencing", where(), "written by generation %d, beyond the run's %d", e.Generation, run.Lease.Generation)
		}
		if !isControl {
			continue
		}
		rep.Controls++
		rep.Findings = append(rep.Findings, scratch.Findings...)
	}
	if run.Head != int64(len(evs)) || (len(evs) > 0 && run.HeadHash != prev) {
		rep.fail("run-head", "run", "header says head %d %s; the log has %d events ending %s", run.Head, run.HeadHash, len(evs), prev)
	}
	if run.State != cfg.State {
		rep.fail("run-state", "run", "header says %s; the control records lead to %s", run.State, cfg.State)
	}
	if want := m.Outcome(cfg); run.Outcome != want {
		rep.fail("run-outcome", "run", "header says outcome %q; the FSM's final state means %q", run.Outcome, want)
	}
	return cfg
}

// vouched is a control record checkEvents found, byte for byte, to be the
// record it recomputed (ok false: none): its event, actor role and
// capability as read, the state it left, and, for a record Step
// recomputed, every other field. Its event id, evidence and guard inputs
// as read are kept for the events the ledger checks read them from (see
// kept), and for a record Step recomputed.
type vouched struct {
	rec control.Record
	ok  bool
	// canonical is whether the event's stored bytes are canonical (no
	// event-canonical finding), for any kind of event: replay, run from
	// the same read (Check), then need not prove an accepted input's
	// body canonical again.
	canonical bool
	// input is an accepted input's members as readAcceptedInput reads
	// them, once inputRead (acceptedInputOf).
	input     acceptedInput
	inputRead bool
	// members are an accepted input's record's acceptedRecordMembers,
	// when acceptedInputOf read the record by them (nil otherwise).
	members [][]byte
}

// kept is a record read by stepInputsInto as a vouched entry keeps it:
// its maps are the reader's, refilled by the next record, so they are
// copied for the records the ledger checks read them from (the budget and
// retry controllers' events) and dropped from the others, which no check
// reads them from; so is their event id, which RecheckStored, vouching
// for most records, does not return.
func kept(rec control.Record) control.Record {
	if !ledgerEvent(rec.Event) {
		rec.EventID, rec.Evidence, rec.GuardInputs = "", nil, nil
		return rec
	}
	rec.Evidence, rec.GuardInputs = maps.Clone(rec.Evidence), maps.Clone(rec.GuardInputs)
	return rec
}

// readWhileRechecking is whether checkEvents asks RecheckStored before
// it reads a control record for Recheck; TestRecheckStoredVouchesAsReading
// turns it off to hold the two paths to each other.
var readWhileRechecking = true

// ledgerEvent reports whether the ledger checks read the evidence and
// guard inputs of a control record of the event: the budget and retry
// controllers' events.
func ledgerEvent(event string) bool { return budgetEvents[event] != "" || event == retryEvent }

// restepFast re-steps a control record read by stepInputs and reports
// whether the recomputed record is, byte for byte, the stored one, with
// the step's result. A record equal to its recomputation is canonical, a
// valid control record, and exactly what the FSM says, so none of the
// checks the strict path makes can fail on it. Anything else (ok false)
// goes to the strict path.
func restepFast(m *control.Machine, cfg control.Configuration, e store.Event, buf []byte) (control.Result, bool, []byte) {
	rec, ok := stepInputs(m, e.Body)
	if !ok {
		return control.Result{}, false, buf
	}
	in := cfg
	in.Context = rec.GuardInputs
	res := m.Step(in, stepEvent(rec))
	if accepted := res.Rejection == nil; accepted != (e.Kind == runner.EventControl) {
		return control.Result{}, false, buf
	}
	buf, err := res.Record.AppendCanonical(buf[:0])
	if err != nil || !bytes.Equal(buf, e.Body) {
		return control.Result{}, false, buf
	}
	return res, true, buf
}

// stepEvent is the FSM event a control record says it met.
func stepEvent(rec control.Record) control.Event {
	ev := control.Event{Type: rec.Event, ActorRole: rec.ActorRole, Capability: rec.Capability, EventID: rec.EventID, Payload: map[string]any{}}
	if len(rec.Evidence) > 0 {
		evd := make(map[string]any, len(rec.Evidence))
		for k, v := range rec.Evidence {
			evd[k] = v
		}
		ev.Payload["evidence"] = evd
	}
	return ev
}

// restep recomputes one control record from the configuration before it.
// It reports whether the recomputed record's canonical bytes are exactly
// the stored ones.
func restep(rep *Report, m *control.Machine, cfg control.Configuration, rec control.Record, e store.Event, where string) (control.Configuration, bool) {
	in := cfg
	in.Context = rec.GuardInputs
	res := m.Step(in, stepEvent(rec))
	got, err := cjson.Marshal(res.Record)
	if err != nil {
		rep.fail("control-replay", where, "cannot encode the recomputed record: %v", err)
		return cfg, false
	}
	if accepted := res.Rejection == nil; accepted != (e.Kind == runner.EventControl) {
		rep.fail("control-replay", where, "%s was recorded as accepted=%v; the FSM says %v", rec.Event, e.Kind == runner.EventControl, accepted)
		return cfg, false
	}
	same := bytes.Equal(got, e.Body)
	if !same {
		rep.fail("control-replay", where, "recorded %s differs from the recomputed record at byte %d", rec.Event, firstDiff(got, e.Body))
	}
	if res.Rejection != nil {
		return cfg, same
	}
	next := res.Next
	next.Context = nil
	return next, same
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// checkCheckpoint checks the latest checkpoint against the replayed
// control configuration and returns its body, read for the later checks
// (nil without one, or when it is unreadable).
func checkCheckpoint(rep *Report, rec *record, cfg control.Configuration) *checkpoint {
	run, cp := rec.run, rec.cp
	if !rec.hasCP {
		if run.Head > 0 {
			rep.fail("checkpoint", "run", "the run has events but no checkpoint")
		}
		return nil
	}
	if !store.DigestMatches(cp.Body, cp.Digest) {
		rep.fail("checkpoint", "checkpoint", "digest does not match its bytes")
	}
	if cp.Seq != run.Head {
		rep.fail("checkpoint", "checkpoint", "follows event %d; the run is at %d", cp.Seq, run.Head)
	}
	// A stored configuration that is, byte for byte, the canonical form
	// of the replayed one decodes to it: nothing to report, and no need
	// to decode the checkpoint (which holds the whole workflow state).
	c := rec.checkpointOf()
	if c.read {
		var buf [512]byte
		if b, ok := appendConfiguration(buf[:0], cfg); ok && bytes.Equal(c.control, b) {
			return c
		}
	}
	b, err := cjson.Marshal(cfg)
	if c.read && err == nil && bytes.Equal(c.control, b) {
		return c
	}
	var body struct {
		Control control.Configuration `json:"control"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil {
		rep.fail("checkpoint", "checkpoint", "unreadable: %v", err)
		return nil
	}
	a, _ := cjson.Marshal(body.Control)
	if !bytes.Equal(a, b) {
		rep.fail("checkpoint", "checkpoint", "control configuration %s differs from the replayed %s", a, b)
	}
	return c
}

// appendConfiguration appends cjson.Marshal's encoding of c, without
// reflection, for the configuration the FSM's steps lead to: no guard
// inputs, a pending list (possibly empty, not nil), and every string plain
// (cjson.Plain: printable ASCII with nothing to escape, written as it is).
// Anything else is not written (ok false), for cjson.Marshal to encode.
// TestAppendConfigurationMatchesMarshal holds it to cjson.Marshal.
func appendConfiguration(b []byte, c control.Configuration) ([]byte, bool) {
	if len(c.Context) > 0 || c.Pending == nil || !cjson.Plain(c.State) ||
		(c.Head != "" && !cjson.Plain(c.Head)) || (c.Table != "" && !cjson.Plain(c.Table)) {
		return b, false
	}
	b = append(b, '{')
	if c.Head != "" {
		b = append(b, `"head":"`...)
		b = append(b, c.Head...)
		b = append(b, '"', ',')
	}
	b = append(b, `"pending_interrupts":[`...)
	for i, p := range c.Pending {
		if !cjson.Plain(p) {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, p...)
		b = append(b, '"')
	}
	b = append(b, `],"seq":`...)
	b = strconv.AppendInt(b, c.Seq, 10)
	b = append(b, `,"state":"`...)
	b = append(b, c.State...)
	b = append(b, '"')
	if c.Table != "" {
		b = append(b, `,"table":"`...)
		b = append(b, c.Table...)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// The readers of intents and receipts: encoding/json's reading of them,
// without reflection over the plain members. Each accepts exactly what
// encoding/json accepts but keeps only the members the checks below read
// (bindingMembers, and what checkEffects, checkApproval and checkReceipt
// read besides); the schema check has already read every member, and the
// rest (an intent's versions and preconditions, a receipt's attempt,
// platform and trace) are not built only to be dropped.
var (
	intentReader  = jsonread.NewReader(protocol.EffectIntent{}).Keeping(append(bindingMembers, "effect_type")...)
	receiptReader = jsonread.NewReader(protocol.ActionReceipt{}).Keeping(append(bindingMembers, "outcome", "output_digests")...)
)

// The schema check of intents and receipts, which reads the same members
// as it checks a text on protocol's text path, so that such a text (every
// intent and receipt the runtime writes) is read once; the readers above
// read the others.
var (
	intentCheck  = protocol.NewTextReader[protocol.EffectIntent](protocol.KindEffectIntent, append(bindingMembers, "effect_type")...)
	receiptCheck = protocol.NewTextReader[protocol.ActionReceipt](protocol.KindActionReceipt, append(bindingMembers, "outcome", "output_digests")...)
)

// readIntent checks an intent's text against the schema and reads the
// members the checks use: the schema's error, or encoding/json's (with
// what it read before it), or none.
func readIntent(b []byte) (intent protocol.EffectIntent, err error) {
	read, err := intentCheck.Validate(b, &intent)
	if err != nil || read {
		return intent, err
	}
	if intent = (protocol.EffectIntent{}); intentReader.Read(b, &intent) {
		return intent, nil
	}
	intent = protocol.EffectIntent{}
	return intent, json.Unmarshal(b, &intent)
}

// readReceipt is readIntent for a receipt.
func readReceipt(b []byte) (receipt protocol.ActionReceipt, err error) {
	read, err := receiptCheck.Validate(b, &receipt)
	if err != nil || read {
		return receipt, err
	}
	if receipt = (protocol.ActionReceipt{}); receiptReader.Read(b, &receipt) {
		return receipt, nil
	}
	receipt = protocol.ActionReceipt{}
	return receipt, json.Unmarshal(b, &receipt)
}

// bindingMembers are the members protocol.CheckReceiptBinding compares.
var bindingMembers = []string{
	"intent_id", "action_digest", "cause_id", "correlation_id", "capability", "authority_digest",
	"destination_digest", "goal_id", "obligation_id", "adapter_version", "assessed_risk",
	"approval_required", "approval_digest", "idempotency_key",
}

// checkEffects checks every intent, its attempts and its receipt, and
// returns how many attempts the run recorded.
func checkEffects(ctx context.Context, rep *Report, rec *record) (int64, error) {
	run, ins, rcs := rec.run, rec.intents, rec.receipts
	var attempts int64
	rep.Intents, rep.Receipts = len(ins), len(rcs)
	few := len(ins) <= fewEffects && len(rcs) <= fewEffects && fewEffectsScanned
	var byIntent map[string]store.Receipt // nil when few: found by a scan
	if few {
		for j, rc := range rcs {
			if receiptIn(rcs[:j], rc.IntentID) >= 0 {
				rep.fail("receipt-unique", rc.IntentID, "more than one receipt")
			}
		}
	} else {
		byIntent = make(map[string]store.Receipt, len(rcs))
		for _, rc := range rcs {
			if _, dup := byIntent[rc.IntentID]; dup {
				rep.fail("receipt-unique", rc.IntentID, "more than one receipt")
			}
			byIntent[rc.IntentID] = rc
		}
	}
	// receiptOf is an intent's receipt: the last with its id, as filing
	// them by intent keeps it.
	receiptOf := func(id string) (store.Receipt, bool) {
		if !few {
			rc, ok := byIntent[id]
			return rc, ok
		}
		if j := receiptIn(rcs, id); j >= 0 {
			return rcs[j], true
		}
		return store.Receipt{}, false
	}
	var intentIDs map[string]bool // nil when few
	if !few {
		intentIDs = make(map[string]bool, len(ins))
	}
	if len(ins) <= len(rec.approvalBuf) {
		rec.approvalRead = rec.approvalBuf[:len(ins):len(ins)]
		clear(rec.approvalRead)
	} else {
		rec.approvalRead = make([]approvalHint, len(ins))
	}
	for i, in := range ins {
		if !few {
			intentIDs[in.ID] = true
		}
		if !store.DigestMatches(in.Body, in.Digest) {
			rep.fail("intent-digest", intentWhere(in.ID), "digest does not match its bytes")
		}
		intent, err := readIntent(in.Body)
		if err != nil {
			rep.fail("intent-protocol", intentWhere(in.ID), "%v", err)
		} else {
			rec.approvalRead[i] = approvalHint{digest: intent.ApprovalDigest, ok: true}
		}
		if intent.IdempotencyKey != in.IdempotencyKey || intent.IntentID != in.ID || intent.EffectType != in.EffectType {
			rep.fail("intent-binding", intentWhere(in.ID), "stored columns disagree with the intent's own fields")
		}
		if err := checkApproval(ctx, rep, rec, in, intent); err != nil {
			return 0, err
		}
		ats, err := rec.attemptsOf(ctx, in.ID)
		if err != nil {
			return 0, err
		}
		attempts += int64(len(ats))
		checkAttempts(rep, run, in, ats)
		rc, hasReceipt := receiptOf(in.ID)
		switch {
		case hasReceipt != (in.Outbox == store.OutboxDone):
			rep.fail("outbox", intentWhere(in.ID), "outbox %s but receipt present=%v", in.Outbox, hasReceipt)
		case hasReceipt:
			if checkReceipt(rep, intent, rc, ats, in.ID) {
				if rec.hashed == nil {
					rec.hashed = rec.hashedBuf[:0]
				}
				rec.hashed = append(rec.hashed, hashedBody{digest: rc.Digest, body: rc.Body})
			}
		}
		if run.Outcome != "" && !hasReceipt && run.State != "EFFECT_OUTCOME_UNKNOWN" {
			rep.fail("closure", intentWhere(in.ID), "the run ended %s but this effect has no receipt", run.State)
		}
	}
	for j, rc := range rcs { // in commit order, so that reports compare
		if few {
			// Reported once: an earlier receipt of the same intent was.
			if intentIn(ins, rc.IntentID) < 0 && receiptIn(rcs[:j], rc.IntentID) < 0 {
				rep.fail("receipt-orphan", rc.IntentID, "receipt for an intent this run never committed")
			}
		} else if !intentIDs[rc.IntentID] {
			rep.fail("receipt-orphan", rc.IntentID, "receipt for an intent this run never committed")
			intentIDs[rc.IntentID] = true // reported once
		}
	}
	if run.Outcome == "success" {
		for _, in := range ins {
			if rc, ok := receiptOf(in.ID); !ok || rc.Outcome == protocol.OutcomeUnknown {
				rep.fail("closure", "intent "+in.ID, "a successful run has an effect without a confirmed receipt")
			}
		}
	}
	return attempts, nil
}

// fewEffects is how many intents and receipts a run may have for
// checkEffects and replayRecord to find them by id with a scan rather
// than file them in maps: most runs commit one or two effects, and the
// maps were four allocations a run. fewEffectsScanned is whether they do;
// tests turn it off to compare.
const fewEffects = 8

var fewEffectsScanned = true

// receiptIn is the index of the last receipt in rcs for intent id, or -1.
func receiptIn(rcs []store.Receipt, id string) int {
	for j := len(rcs) - 1; j >= 0; j-- {
		if rcs[j].IntentID == id {
			return j
		}
	}
	return -1
}

// intentIn is the index of the last intent in ins with id, or -1.
func intentIn(ins []store.Intent, id string) int {
	for k := len(ins) - 1; k >= 0; k-- {
		if ins[k].ID == id {
			return k
		}
	}
	return -1
}

func checkApproval(ctx context.Context, rep *Report, rec *record, in store.Intent, intent protocol.EffectIntent) error {
	if !intent.ApprovalRequired {
		if in.ApprovalID != "" {
			rep.fail("approval", intentWhere(in.ID), "consumed approval %s although none was required", in.ApprovalID)
		}
		return nil
	}
	if in.ApprovalID == "" {
		rep.fail("approval", intentWhere(in.ID), "approval required but none consumed")
		return nil
	}
	a, err := rec.approval(ctx, in.ApprovalID)
	if store.CodeOf(err) == store.CodeNotFound {
		rep.fail("approval", intentWhere(in.ID), "approval %s is not in the ledger", in.ApprovalID)
		return nil
	} else if err != nil {
		return err
	}
	rep.Approvals++
	if !store.DigestMatches(a.Body, a.Digest) {
		rep.fail("approval", intentWhere(in.ID), "grant %s digest does not match its bytes", a.ID)
	}
	if err := runner.CheckGrant(a); err != nil {
		rep.fail("approval", intentWhere(in.ID), "%v", err)
	}
	if a.Status != store.ApprovalConsumed || a.ConsumedBy != in.ID {
		rep.fail("approval", intentWhere(in.ID), "grant %s is %s by %q, not consumed by this intent", a.ID, a.Status, a.ConsumedBy)
	}
	if a.RunID != rec.run.ID {
		rep.fail("approval", intentWhere(in.ID), "grant %s belongs to run %s", a.ID, a.RunID)
	}
	if intent.ApprovalDigest == nil || *intent.ApprovalDigest != a.Digest {
		rep.fail("approval", intentWhere(in.ID), "the intent does not name the grant it consumed")
	}
	// The grants it consumed with that one (a quorum's) answer the same
	// request, in this run, each from another person.
	others := rec.concurring(in)
	if len(others) == 0 {
		return nil
	}
	people := []string{runner.GrantActor(a)}
	for _, c := range others {
		rep.Concurring++
		if !store.DigestMatches(c.Body, c.Digest) {
			rep.fail("approval", intentWhere(in.ID), "concurring grant %s digest does not match its bytes", c.ID)
		}
		if err := runner.CheckGrant(c); err != nil {
			rep.fail("approval", intentWhere(in.ID), "%v", err)
		}
		if c.RequestDigest != a.RequestDigest {
			rep.fail("approval", intentWhere(in.ID), "concurring grant %s answers request %s, not %s as grant %s does", c.ID, c.RequestDigest, a.RequestDigest, a.ID)
		}
		if c.RunID != rec.run.ID {
			rep.fail("approval", intentWhere(in.ID), "concurring grant %s belongs to run %s", c.ID, c.RunID)
		}
		who := runner.GrantActor(c)
		if slices.Contains(people, who) {
			rep.fail("approval", intentWhere(in.ID), "concurring grant %s is a second approval by %q", c.ID, who)
		}
		people = append(people, who)
	}
	return nil
}

func checkAttempts(rep *Report, run store.Run, in store.Intent, ats []store.Attempt) {
	if int64(len(ats)) != in.Attempts {
		rep.fail("attempts", intentWhere(in.ID), "outbox counts %d attempts, %d recorded", in.Attempts, len(ats))
	}
	succeeded := false
	for i, a := range ats {
		if a.N != int64(i+1) {
			rep.fail("attempts", intentWhere(in.ID), "attempt numbers are not 1..n")
		}
		if a.Status == store.AttemptStarted && i != len(ats)-1 {
			rep.fail("attempts", intentWhere(in.ID), "attempt %d never finished but a later one began", a.N)
		}
		if succeeded {
			rep.fail("attempts", intentWhere(in.ID), "attempt %d began after a confirmed success", a.N)
		}
		succeeded = a.Status == store.AttemptSucceeded || a.Status == store.AttemptReconciledApplied
		if a.Generation > run.Lease.Generation {
			rep.fail("fencing", intentWhere(in.ID), "attempt %d from generation %d, beyond the run's %d", a.N, a.Generation, run.Lease.Generation)
		}
	}
	if len(ats) == 0 && in.Outbox != store.OutboxPending {
		rep.fail("attempts", intentWhere(in.ID), "outbox %s with no attempt recorded", in.Outbox)
	}
}

// checkReceipt checks a receipt against its intent and attempts, and
// reports whether its bytes have its digest.
func checkReceipt(rep *Report, intent protocol.EffectIntent, rc store.Receipt, ats []store.Attempt, id string) (digestOK bool) {
	if digestOK = store.DigestMatches(rc.Body, rc.Digest); !digestOK {
		rep.fail("receipt-digest", intentWhere(id), "digest does not match its bytes")
	}
	receipt, err := readReceipt(rc.Body)
	if err != nil {
		rep.fail("receipt-protocol", intentWhere(id), "%v", err)
		return digestOK
	}
	if err := protocol.CheckReceiptBinding(intent, receipt); err != nil {
		rep.fail("receipt-binding", intentWhere(id), "%v", err)
	}
	if receipt.Outcome != rc.Outcome {
		rep.fail("receipt-binding", intentWhere(id), "stored outcome %s, receipt says %s", rc.Outcome, receipt.Outcome)
	}
	if receipt.Outcome == protocol.OutcomeConfirmedSuccess {
		ok := false
		for _, a := range ats {
			ok = ok || a.Status == store.AttemptSucceeded || a.Status == store.AttemptReconciledApplied
		}
		if !ok {
			rep.fail("verified-success-only", intentWhere(id), "a confirmed success with no succeeded or reconciled-applied attempt")
		}
		if len(receipt.OutputDigests) == 0 {
			rep.fail("verified-success-only", intentWhere(id), "a confirmed success that names no destination evidence")
		}
	}
	return digestOK
}

// intentWhere names an intent in a finding; it is made only when a check
// of the intent fails, where most intents pass every check.
func intentWhere(id string) string { return "intent " + id }
