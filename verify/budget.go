package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// ledger is the budget account a runner keeps in each checkpoint, read
// here on its own terms: verify trusts the numbers only as far as the
// record confirms them.
type ledger struct {
	Limits         control.Usage `json:"limits"`
	MaxTransitions int64         `json:"max_transitions"`
	Adopted        bool          `json:"adopted"`
	StartedMillis  int64         `json:"started_millis"`
	ClockMillis    int64         `json:"clock_millis"`
	WallMillis     int64         `json:"wall_millis"`
	SuspendMillis  int64         `json:"suspended_millis"`
	Steps          int64         `json:"steps"`
	ToolCalls      int64         `json:"tool_calls"`
	Tokens         int64         `json:"tokens"`
	CostMicros     int64         `json:"cost_micros"`
	Breach         *breach       `json:"breach"`
}

// breach is a ledger's recorded budget breach.
type breach struct {
	Dimension control.Dimension `json:"dimension"`
	Limit     int64             `json:"limit"`
	Used      int64             `json:"used"`
	Requested int64             `json:"requested"`
	Event     string            `json:"event"`
	State     string            `json:"state"`
}

// retryLedger is what the retry check reads of the budget ledger.
type retryLedger struct {
	Adopted          bool            `json:"adopted"`
	MaxAttempts      int64           `json:"max_attempts"`
	RetriesExhausted json.RawMessage `json:"retries_exhausted"`
}

// ledgers is the ledger as the budget and the retry checks read it: the
// members of ledger and of retryLedger, each named and typed as there
// (TestLedgersHoldsBothViews), read in one pass over the checkpoint's
// budget member instead of one pass for each view.
type ledgers struct {
	Limits           control.Usage   `json:"limits"`
	MaxTransitions   int64           `json:"max_transitions"`
	Adopted          bool            `json:"adopted"`
	StartedMillis    int64           `json:"started_millis"`
	ClockMillis      int64           `json:"clock_millis"`
	WallMillis       int64           `json:"wall_millis"`
	SuspendMillis    int64           `json:"suspended_millis"`
	Steps            int64           `json:"steps"`
	ToolCalls        int64           `json:"tool_calls"`
	Tokens           int64           `json:"tokens"`
	CostMicros       int64           `json:"cost_micros"`
	Breach           *breach         `json:"breach"`
	MaxAttempts      int64           `json:"max_attempts"`
	RetriesExhausted json.RawMessage `json:"retries_exhausted"`
}

// budget is the budget check's view of l.
func (l *ledgers) budget() ledger {
	return ledger{Limits: l.Limits, MaxTransitions: l.MaxTransitions, Adopted: l.Adopted, StartedMillis: l.StartedMillis,
		ClockMillis: l.ClockMillis, WallMillis: l.WallMillis, SuspendMillis: l.SuspendMillis, Steps: l.Steps,
		ToolCalls: l.ToolCalls, Tokens: l.Tokens, CostMicros: l.CostMicros, Breach: l.Breach}
}

// retry is the retry check's view of l.
func (l *ledgers) retry() retryLedger {
	return retryLedger{Adopted: l.Adopted, MaxAttempts: l.MaxAttempts, RetriesExhausted: l.RetriesExhausted}
}

// The readers of the two checks' views of the ledger, and of both at once.
// Where the reader of both reads a text, each view is what its own reader
// (or encoding/json) reads of it: every member is read as encoding/json
// reads it into a field of the same name and type, and a member neither
// view names is passed over by each. Where it does not (a key matching a
// member only case-insensitively, say), each check reads the text on its
// own, as before.
var (
	ledgerReader      = jsonread.NewReader(ledger{})
	retryLedgerReader = jsonread.NewReader(retryLedger{})
	ledgersReader     = jsonread.NewReader(ledgers{})
)

// ledgersShared says whether the two checks take their views from one
// reading (checkpoint.ledgers); tests turn it off to compare.
var ledgersShared = true

// budgetEvents are the interrupts a budget breach issues, with the role
// that issues each.
var budgetEvents = map[string]string{"TIMEOUT": "deadline_controller", "BUDGET_EXHAUSTED": "budget_governor"}

// checkpoint is a checkpoint's body with the members the budget, retry
// and control checks read. When read is false (the member reader gave up)
// each check decodes the whole body with encoding/json, as it always did;
// when it is true each member is decoded on its own, which encoding/json
// does exactly as it would within the body (members gives up wherever the
// two could differ).
type checkpoint struct {
	body                                 []byte
	read                                 bool
	budget, control, ingest, open, state []byte // nil: absent
	// The budget member's two views as ledgersReader read it, once
	// bothRead, held here rather than allocated each; bothOK is false
	// when it cannot read it.
	bothRead, bothOK bool
	budgetView       ledger
	retryView        retryLedger
}

// ledgers returns the views of the budget member, a ledger present and not
// null in a body read by members, as ledgersReader reads it; ok is false
// when it cannot, and each check then reads the member with its own
// reader.
func (cp *checkpoint) ledgers() (budget *ledger, retry *retryLedger, ok bool) {
	if !cp.bothRead && ledgersShared {
		cp.bothRead = true
		var l ledgers
		if cp.bothOK = ledgersReader.Read(cp.budget, &l); cp.bothOK {
			cp.budgetView, cp.retryView = l.budget(), l.retry()
		}
	}
	return &cp.budgetView, &cp.retryView, cp.bothOK
}

func readCheckpoint(body []byte) *checkpoint {
	c := new(checkpoint)
	readCheckpointInto(c, body)
	return c
}

// readCheckpointInto is readCheckpoint into c, which it sets whole.
func readCheckpointInto(c *checkpoint, body []byte) {
	*c = checkpoint{body: body}
	m, ok := jsonread.Members(body, "budget", "control", "ingest", "open", "state")
	if ok {
		c.read = true
		c.budget, c.control, c.ingest, c.open, c.state = m[0], m[1], m[2], m[3], m[4]
	}
}

// budgetBody is what the budget check reads of a checkpoint.
type budgetBody struct {
	Budget *ledger `json:"budget"`
	// Reported usage the log does not hold yet: adapters' reports on
	// effects still open, and on receipts not yet accepted.
	Open   []openReport   `json:"open"`
	Ingest []ingestReport `json:"ingest"`
}

type openReport struct {
	Stage string        `json:"stage"`
	Usage *runner.Usage `json:"usage"`
}

type ingestReport struct {
	Usage *runner.Usage `json:"usage"`
}

// readBudgetBody reads cp as checkBudgets reads it (ok false: it cannot,
// and there is nothing to check). Each decode into a variable of its own
// is made only where the fast readers cannot read, so that the variables
// the common case fills stay off the heap.
func readBudgetBody(cp *checkpoint) (body budgetBody, ok bool) {
	if !cp.read {
		var whole budgetBody
		if json.Unmarshal(cp.body, &whole) != nil {
			return budgetBody{}, false
		}
		return whole, true
	}
	if cp.budget != nil && string(cp.budget) != "null" {
		if l, _, ok := cp.ledgers(); ok {
			body.Budget = l
		} else if l := new(ledger); ledgerReader.Read(cp.budget, l) {
			body.Budget = l
		} else {
			var decoded *ledger
			if json.Unmarshal(cp.budget, &decoded) != nil {
				return budgetBody{}, false
			}
			body.Budget = decoded
		}
	}
	// An empty list, as most checkpoints hold, adds nothing: it is left
	// nil rather than decoded by reflection to an empty slice. The lists
	// are decoded in the order cp.unmarshal decodes them.
	if cp.open != nil && string(cp.open) != "[]" {
		var open []openReport
		if json.Unmarshal(cp.open, &open) != nil {
			return budgetBody{}, false
		}
		body.Open = open
	}
	if cp.ingest != nil && string(cp.ingest) != "[]" {
		var ingest []ingestReport
		if json.Unmarshal(cp.ingest, &ingest) != nil {
			return budgetBody{}, false
		}
		body.Ingest = ingest
	}
	return body, true
}

// checkBudgets checks the run's budget ledger against the record, without
// a clock: the counters equal what the log and the attempt rows show
// (tokens and cost: the usage reports on the accepted inputs, with those
// on effects and receipts the checkpoint still holds);
// every outside input was accepted within the step budget; tool calls
// never exceeded theirs; wall and suspended time add up to exactly the
// span of the recorded clock readings; and a TIMEOUT or BUDGET_EXHAUSTED
// the governor issued rests on a recorded breach that is really over its
// limit (and none is recorded without it). A checkpoint written before runs
// kept a ledger has nothing to check.
func checkBudgets(rep *Report, cp *checkpoint, evs []store.Event, known []vouched, attempts int64) {
	if cp == nil {
		return
	}
	body, ok := readBudgetBody(cp)
	if !ok {
		return
	}
	if body.Budget == nil {
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
	for i, e := range evs {
		switch e.Kind {
		case runner.EventAccepted:
			accepted++
			in, ok := acceptedUsage(known, i, e.Body)
			if !ok {
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
			// The record vouched for is read where it is; only one
			// decoded here is made (a control.Record per event was most
			// of what this check allocated).
			var rec *control.Record
			if known[i].ok {
				rec = &known[i].rec
			} else if rec = new(control.Record); !mayHold(e.Body, "TIMEOUT", "BUDGET_EXHAUSTED") || json.Unmarshal(e.Body, rec) != nil {
				break
			}
			if budgetEvents[rec.Event] != "" && rec.ActorRole == budgetEvents[rec.Event] {
				issued = append(issued, *rec)
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

// usageInput is what the budget check reads of an accepted input.
type usageInput struct {
	Kind  string        `json:"kind"`
	Usage *runner.Usage `json:"usage"`
}

// acceptedUsage reads an accepted input's kind and usage report as
// encoding/json reads them (ok false: it cannot), from the members
// acceptedInputOf read where it could.
func acceptedUsage(known []vouched, i int, body []byte) (usageInput, bool) {
	a := acceptedInputOf(known, i, body)
	if !a.read {
		var in usageInput
		if json.Unmarshal(body, &in) != nil {
			return usageInput{}, false
		}
		return in, true
	}
	in := usageInput{Kind: a.kind}
	if a.usage != nil {
		var u *runner.Usage
		if json.Unmarshal(a.usage, &u) != nil {
			return usageInput{}, false
		}
		in.Usage = u
	}
	return in, true
}

func checkBreach(rep *Report, l *ledger, rec control.Record) {
	b := l.Breach
	const where = "budget"
	if b.Event != rec.Event || b.State != rec.From {
		rep.fail("budget-breach", where, "breach says %s in %s; the log has %s in %s", b.Event, b.State, rec.Event, rec.From)
	}
	var limit, now int64
	event := "BUDGET_EXHAUSTED"
	switch b.Dimension {
	case control.DimSteps:
		limit, now = l.Limits.Steps, l.Steps
	case control.DimToolCalls:
		limit, now = l.Limits.ToolCalls, l.ToolCalls
	case control.DimTokens:
		limit, now = l.Limits.Tokens, l.Tokens
	case control.DimCostMicros:
		limit, now = l.Limits.CostMicros, l.CostMicros
	case control.DimWallSeconds:
		limit, now, event = l.Limits.WallSeconds, control.MillisToSeconds(l.WallMillis), "TIMEOUT"
	case control.DimSuspendedSeconds:
		limit, now, event = l.Limits.SuspendedSeconds, control.MillisToSeconds(l.SuspendMillis), "TIMEOUT"
	case runner.DimTransitions:
		limit, now = l.MaxTransitions, b.Used
	default:
		rep.fail("budget-breach", where, "breach of unknown budget %q", b.Dimension)
		return
	}
	if b.Event != event {
		rep.fail("budget-breach", where, "a %s breach issues %s, not %s", b.Dimension, event, b.Event)
	}
	if b.Limit != limit {
		rep.fail("budget-breach", where, "breach names limit %d; the run's %s budget is %d", b.Limit, b.Dimension, limit)
	}
	if b.Requested < 0 || b.Used+b.Requested <= b.Limit {
		rep.fail("budget-breach", where, "%d used + %d requested is within the limit %d", b.Used, b.Requested, b.Limit)
	}
	if b.Used > now {
		rep.fail("budget-breach", where, "breach claims %d %s used; the ledger has only %d", b.Used, b.Dimension, now)
	}
}

// retryEvent is the event the retry controller issues when an intent's
// retries are spent (the loop contract's retry.exhausted_event).
const retryEvent = "RETRIES_EXHAUSTED"

// spentAttempts recounts an intent's attempt rows as the bounded attempt
// ledger the runner records when its retries are spent: limit attempts,
// every one a retryable failure (transient, or a lookup's confirmation
// that nothing was applied), the last closed by the destination's
// confirmation. It reports false for anything else: an attempt that
// succeeded, failed for good, or whose unknown outcome a person settled.
func spentAttempts(ats []store.Attempt, limit int64) (map[string]any, bool) {
	if limit <= 0 || int64(len(ats)) != limit {
		return nil, false
	}
	outcomes := make([]any, 0, len(ats))
	for _, a := range ats {
		if a.Status != store.AttemptFailedTransient && a.Status != store.AttemptReconciledNotApplied {
			return nil, false
		}
		outcomes = append(outcomes, string(a.Status))
	}
	last := ats[len(ats)-1]
	if last.Status != store.AttemptReconciledNotApplied || last.Detail != runner.RetryExhaustedDetail {
		return nil, false
	}
	return map[string]any{"intent": last.IntentID, "attempts": limit, "limit": limit, "outcomes": outcomes}, true
}

// readRetryLedger reads what the retry check reads of cp's budget ledger
// (nil: none; ok false: unreadable), decoding into variables of its own
// only where the fast reader cannot read (see readBudgetBody).
func readRetryLedger(cp *checkpoint) (*retryLedger, bool) {
	if !cp.read {
		var body struct {
			Budget *retryLedger `json:"budget"`
		}
		if json.Unmarshal(cp.body, &body) != nil {
			return nil, false
		}
		return body.Budget, true
	}
	if cp.budget == nil || string(cp.budget) == "null" {
		return nil, true
	}
	if _, l, ok := cp.ledgers(); ok {
		return l, true
	}
	l := new(retryLedger)
	if !retryLedgerReader.Read(cp.budget, l) {
		var decoded *retryLedger
		if json.Unmarshal(cp.budget, &decoded) != nil {
			return nil, false
		}
		l = decoded
	}
	return l, true
}

// checkRetries recounts the attempt ledger behind RETRIES_EXHAUSTED from
// the attempt rows: the event is issued at most once, only on the
// recorded ledger of an intent whose attempt rows show its retries spent,
// with evidence that is the digest of exactly that ledger; and a run with
// such an intent never accepts its failure receipt as an input, and does
// not end otherwise than RETRY_EXHAUSTED unless an interrupt ended it
// first. Runs whose ledger does not record the attempt limit have nothing
// to check.
func checkRetries(ctx context.Context, rep *Report, rec *record, cp *checkpoint, known []vouched) error {
	run, evs := rec.run, rec.events
	if cp == nil {
		return nil
	}
	l, ok := readRetryLedger(cp)
	if !ok || l == nil {
		return nil
	}
	const where = "retries"
	var issued []control.Record
	accepted := map[string]bool{} // digests of accepted receipts
	for i, e := range evs {
		switch e.Kind {
		case runner.EventControl:
			var cr *control.Record // as in checkBudgets
			if known[i].ok {
				cr = &known[i].rec
			} else if cr = new(control.Record); !mayHold(e.Body, retryEvent) || json.Unmarshal(e.Body, cr) != nil {
				break
			}
			if cr.Event == retryEvent {
				issued = append(issued, *cr)
			}
		case runner.EventAccepted:
			if d, ok := acceptedReceiptOf(known, i, e.Body); ok {
				accepted[d] = true
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

// acceptedReceiptOf is the digest of event i's accepted input when it is a
// receipt (ok false otherwise): as acceptedInputOf reads it, or, where its
// member reader gave up, as acceptedReceiptDigest decodes it.
func acceptedReceiptOf(known []vouched, i int, body []byte) (string, bool) {
	if a := acceptedInputOf(known, i, body); a.read && a.digestRead {
		return a.digest, a.kind == "receipt"
	}
	return acceptedReceiptDigest(body)
}

// acceptedReceiptDigest is the digest of an accepted input that
// encoding/json reads as a receipt's (ok false: it reads none).
func acceptedReceiptDigest(body []byte) (string, bool) {
	var in struct {
		Kind   string `json:"kind"`
		Digest string `json:"digest"`
	}
	if !mayHold(body, "receipt") || json.Unmarshal(body, &in) != nil || in.Kind != "receipt" {
		return "", false
	}
	return in.Digest, true
}

// mayHold reports whether a JSON text could decode to hold one of the
// strings as a string value. It is false only when the text has none of
// them between quotes and no \u escape (the one way JSON can spell a
// letter or '_' otherwise), so a check that acts only on those strings may
// skip decoding a text it says false of: most of a run's records name
// none of the events the budget checks look for, and decoding each of
// them was a third of what verify cost.
func mayHold(text []byte, strs ...string) bool {
	if bytes.Contains(text, []byte(`\u`)) {
		return true
	}
	for _, s := range strs {
		if bytes.Contains(text, []byte(`"`+s+`"`)) {
			return true
		}
	}
	return false
}

// acceptedInput is what the budget and retry checks read of an accepted
// input's record: its kind, its usage report's text, its digest. read is
// false when the member reader gave up on the record or its kind was not a
// plain string; the checks then decode it with encoding/json as they
// always did. The digest is read for a receipt only, the one kind the
// retry check reads it of; digestRead is false when a receipt's digest
// member is not a plain string (encoding/json would then fail or read it
// otherwise).
type acceptedInput struct {
	read       bool
	kind       string
	usage      []byte
	digest     string
	digestRead bool
}

// acceptedInputOf is readAcceptedInput of event i's body, read once for
// the budget and the retry checks (known holds it; see vouched). A record
// made of the members an accepted input's record has, and no other, is
// read once for replay too: its members are kept (vouched.members) for
// replay to decode the input from.
func acceptedInputOf(known []vouched, i int, body []byte) acceptedInput {
	v := &known[i]
	if !v.inputRead {
		// When the record holds no member but these, the member reader
		// reads kind, usage and digest exactly as Members does (it gives
		// up on a key repeated, folded or not ASCII either way), and the
		// others exactly as replay's OnlyMembers of acceptedMembers does
		// when usage is absent (TestAcceptedRecordReadOnce).
		if m, ok := jsonread.OnlyMembers(body, acceptedRecordMembers...); ok {
			v.input, v.members = acceptedInputFrom(m[1], m[7], m[5]), m
		} else {
			v.input = readAcceptedInput(body)
		}
		v.inputRead = true
	}
	return v.input
}

// acceptedRecordMembers are acceptedMembers and a usage report, in that
// order.
var acceptedRecordMembers = append(acceptedMembers[:len(acceptedMembers):len(acceptedMembers)], "usage")

func readAcceptedInput(b []byte) acceptedInput {
	m, ok := jsonread.Members(b, "kind", "usage", "digest")
	if !ok {
		return acceptedInput{}
	}
	return acceptedInputFrom(m[0], m[1], m[2])
}

// acceptedInputFrom is the acceptedInput of a record's kind, usage and
// digest members as the member reader read them (nil: absent).
func acceptedInputFrom(kind, usage, digest []byte) acceptedInput {
	a := acceptedInput{read: true, usage: usage, digestRead: true}
	// The runner's kinds are named without a copy of their text.
	switch string(kind) {
	case "":
	case `"` + runner.KindInput + `"`:
		a.kind = runner.KindInput
	case `"receipt"`:
		a.kind = "receipt"
	default:
		var ok bool
		if a.kind, ok = jsonread.PlainString(kind); !ok {
			return acceptedInput{}
		}
	}
	if digest != nil && a.kind == "receipt" {
		a.digest, a.digestRead = jsonread.PlainString(digest)
	}
	return a
}
