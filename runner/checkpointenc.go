package runner

import (
	"crypto/sha256"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
)

// The checkpoint's canonical bytes, written member by member from its
// typed members: what cjson.Marshal writes of it, without its reflection,
// its sorting of map keys and its scan of every kept document (an intent,
// a payload, a pending receipt) for canonical form on every write. Member
// names are written in the byte order of their JSON names. A member held
// as anything but a canonJSON (a value read from a stored checkpoint, an
// intent an approval edited) is written by cjson at the depth it sits at
// (appendAt). Whatever would make cjson refuse the checkpoint (a string
// not in NFC, a map key to escape, a document nested too deep) makes the
// writer give up, and the caller takes the general path, which refuses it
// as it always has. TestCheckpointWriterMatchesMarshal holds the two to the
// same bytes; TestCheckpointWriterKnowsEveryMember fails when a member is
// added to one of the types written here.

// Depths at which the checkpoint's documents sit: the checkpoint is at 0,
// its open and ingest lists at 1, their items at 2, an item's intent,
// payload or receipt at 3.
const keptDepth = 3

// ckWriter writes canonical members; ok turns false on anything it does
// not write as cjson would.
type ckWriter struct {
	cjson.Members
	ok bool
}

// appendCanonical appends c's canonical bytes to b, with state (State's
// bytes as embedded, stateEmbedded) as the state member's value. ok is
// false when it gave up; b is then of no use.
func (c *checkpoint) appendCanonical(b, state []byte) ([]byte, bool) {
	w := ckWriter{Members: cjson.Members{B: b}, ok: true}
	w.Open()
	w.Int("accepted", c.Accepted)
	if c.Budget != nil {
		w.Key("budget")
		w.budget(c.Budget)
	}
	w.Str("completion", string(c.Completion))
	w.Key("control")
	w.control(&c.Control)
	w.Int("format", c.Format)
	w.Key("ingest")
	w.ingest(c.Ingest, keptDepth)
	w.Str("kind", c.Kind)
	w.Key("open")
	w.open(c.Open, keptDepth)
	w.Key("progress")
	w.progress(&c.Progress)
	w.Int("round_receipts", c.RoundReceipts)
	if c.RoundSteered {
		w.Bool("round_steered", true)
	}
	w.Key("state")
	w.B = append(w.B, state...)
	w.Int("transitions", c.Transitions)
	w.Str("workflow_digest", c.WorkflowDigest)
	w.Str("workflow_id", c.WorkflowID)
	w.Close()
	return w.B, w.ok && w.Err == nil
}

// item starts the i-th item of a list (its comma).
func (w *ckWriter) item(i int) {
	if i > 0 {
		w.B = append(w.B, ',')
	}
}

// list writes l as an array, null when l is nil, each item by f.
func list[T any](w *ckWriter, l []T, f func(*T)) {
	if l == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.B = append(w.B, '[')
	for i := range l {
		w.item(i)
		f(&l[i])
	}
	w.B = append(w.B, ']')
}

func (w *ckWriter) strings(l []string, k string) {
	list(w, l, func(s *string) { w.Quote(*s, k) })
}

func (w *ckWriter) control(cf *control.Configuration) {
	w.Open()
	if len(cf.Context) > 0 {
		w.Key("context")
		var kb [8]string
		keys := kb[:0]
		for k := range cf.Context { //flrh:orderfree the keys are sorted below
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.B = append(w.B, '{')
		for i, k := range keys {
			if !cjson.Plain(k) {
				w.ok = false // a key to escape, or not ASCII: cjson's to judge
			}
			w.item(i)
			w.B = append(w.B, '"')
			w.B = append(w.B, k...)
			w.B = append(w.B, '"', ':')
			if cf.Context[k] {
				w.B = append(w.B, "true"...)
			} else {
				w.B = append(w.B, "false"...)
			}
		}
		w.B = append(w.B, '}')
	}
	if cf.Head != "" {
		w.Str("head", cf.Head)
	}
	w.Key("pending_interrupts")
	w.strings(cf.Pending, "pending_interrupts")
	w.Int("seq", cf.Seq)
	w.Str("state", cf.State)
	if cf.Table != "" {
		w.Str("table", cf.Table)
	}
	w.Close()
}

func (w *ckWriter) progress(p *control.ProgressWindow) {
	w.Open()
	w.Key("rounds")
	list(w, p.Rounds, func(r *control.RoundVerdict) {
		w.Open()
		w.Str("fingerprint", r.Fingerprint)
		w.Bool("stalled", r.Stalled)
		w.Bool("unchanged", r.Unchanged)
		w.Int("weighted_gain", r.Weighted)
		w.Close()
	})
	w.Close()
}

func (w *ckWriter) usage(u *Usage) {
	w.Open()
	w.Int("cost_micros", u.CostMicros)
	w.Int("tokens", u.Tokens)
	w.Close()
}

func (w *ckWriter) budget(l *budgetLedger) {
	w.Open()
	w.Bool("adopted", l.Adopted)
	w.Key("breach")
	if br := l.Breach; br == nil {
		w.B = append(w.B, "null"...)
	} else {
		w.Open()
		w.Str("dimension", string(br.Dimension))
		w.Str("event", br.Event)
		w.Int("limit", br.Limit)
		w.Int("requested", br.Requested)
		w.Str("state", br.State)
		w.Int("used", br.Used)
		w.Close()
	}
	w.Int("clock_millis", l.ClockMillis)
	w.Str("contract", l.Contract)
	w.Int("cost_micros", l.CostMicros)
	w.Str("jitter_seed", l.JitterSeed)
	w.Key("limits")
	w.Open()
	w.Int("cost_micros", l.Limits.CostMicros)
	w.Int("parallelism", l.Limits.Parallelism)
	w.Int("recursion_depth", l.Limits.RecursionDepth)
	w.Int("steps", l.Limits.Steps)
	w.Int("suspended_seconds", l.Limits.SuspendedSeconds)
	w.Int("tokens", l.Limits.Tokens)
	w.Int("tool_calls", l.Limits.ToolCalls)
	w.Int("wall_seconds", l.Limits.WallSeconds)
	w.Close()
	if l.MaxAttempts != 0 {
		w.Int("max_attempts", l.MaxAttempts)
	}
	w.Int("max_transitions", l.MaxTransitions)
	w.Bool("resting", l.Resting)
	if a := l.RetriesExhausted; a != nil {
		w.Key("retries_exhausted")
		w.Open()
		w.Int("attempts", a.Attempts)
		w.Str("intent", a.Intent)
		w.Int("limit", a.Limit)
		w.Key("outcomes")
		w.strings(a.Outcomes, "outcomes")
		w.Close()
	}
	w.Int("started_millis", l.StartedMillis)
	w.Int("steps", l.Steps)
	w.Int("suspended_millis", l.SuspendMillis)
	w.Int("tokens", l.Tokens)
	w.Int("tool_calls", l.ToolCalls)
	w.Int("wall_millis", l.WallMillis)
	w.Close()
}

// open writes the open effects, their documents at depth d.
func (w *ckWriter) open(open []openEffect, d int) {
	list(w, open, func(e *openEffect) {
		w.Open()
		w.Key("approval")
		if a := e.Approval; a == nil {
			w.B = append(w.B, "null"...)
		} else {
			w.Open()
			if len(a.ApprovedBy) > 0 {
				w.Key("approved_by")
				w.strings(a.ApprovedBy, "approved_by")
			}
			if a.Approver != "" {
				w.Str("approver", a.Approver)
			}
			if a.Awaiting != "" {
				w.Str("awaiting", a.Awaiting)
			}
			w.Str("intent_id", a.IntentID)
			w.Str("preview", a.Preview)
			if a.Quorum != 0 {
				w.Int("quorum", int64(a.Quorum))
			}
			w.Str("request_digest", a.RequestDigest)
			w.Str("request_id", a.RequestID)
			if a.WhoMayApprove != "" {
				w.Str("who_may_approve", a.WhoMayApprove)
			}
			w.Close()
		}
		w.Str("approval_id", e.ApprovalID)
		if len(e.Concurring) > 0 {
			w.Key("concurring")
			list(w, e.Concurring, func(c *concurrence) {
				w.Open()
				w.Str("actor", c.Actor)
				w.Str("approval_id", c.ApprovalID)
				w.Close()
			})
		}
		w.Str("content_digest", e.ContentDigest)
		w.Key("intent")
		if e.intentBytes.kept() {
			// The intent's own bytes, which Intent (when decoded from
			// them) encodes to: keptOpen.
			w.doc(e.intentBytes, d)
		} else {
			w.value(e.Intent, d)
		}
		w.Str("intent_id", e.IntentID)
		w.Key("payload")
		w.value(e.Payload, d)
		w.Str("stage", e.Stage)
		if e.Usage != nil {
			w.Key("usage")
			w.usage(e.Usage)
		}
		w.Close()
	})
}

// ingest writes the pending receipts, their documents at depth d.
func (w *ckWriter) ingest(in []pendingReceipt, d int) {
	list(w, in, func(p *pendingReceipt) {
		w.Open()
		w.Str("digest", p.Digest)
		w.Str("intent_id", p.IntentID)
		w.Key("receipt")
		w.value(p.Receipt, d)
		if p.Usage != nil {
			w.Key("usage")
			w.usage(p.Usage)
		}
		w.Close()
	})
}

// doc writes proved bytes at depth d, or gives up where cjson would
// refuse them there.
func (w *ckWriter) doc(k canonJSON, d int) {
	if !k.fitsAt(d) {
		w.ok = false
		return
	}
	w.B = append(w.B, k.b...)
}

// value writes a document held as v at depth d: proved bytes as they
// are, anything else through cjson.
func (w *ckWriter) value(v any, d int) {
	if k, ok := asKept(v); ok {
		w.doc(k, d)
		return
	}
	var ok bool
	if w.B, ok = appendAt(w.B, v, d); !ok {
		w.ok = false
	}
}

// Holders put a value d containers deep below a root that names no kind,
// for cjson to write it as it does there.
type (
	holder1 struct {
		V any `json:"v"`
	}
	holder2 struct {
		V holder1 `json:"v"`
	}
	holder3 struct {
		V holder2 `json:"v"`
	}
)

// appendAt appends cjson's bytes for v as written depth containers deep
// (1 to 3) below a root whose kind names no set-like members: v is
// wrapped in that many one-member objects, written, and unwrapped in
// place.
func appendAt(b []byte, v any, depth int) ([]byte, bool) {
	var h any
	switch depth {
	case 1:
		h = holder1{V: v}
	case 2:
		h = holder2{V: holder1{V: v}}
	case 3:
		h = holder3{V: holder2{V: holder1{V: v}}}
	default:
		return b, false
	}
	n := len(b)
	out, err := cjson.AppendMarshal(b, h)
	if err != nil {
		return b, false
	}
	head := depth * len(`{"v":`)
	m := copy(out[n:], out[n+head:len(out)-depth])
	return out[:n+m], true
}

// openDigest is cjson.DigestOf(open), the digest of the open effects the
// no-progress fingerprint reads, written by the checkpoint's writer (the
// list at the root, its items' documents two containers deep).
func openDigest(open []openEffect) (string, error) { return openDigestIn(nil, open) }

// openDigestIn is openDigest, its text spelled in texts when there are
// any (store.DigestTexts).
func openDigestIn(texts *store.DigestTexts, open []openEffect) (string, error) {
	var ok bool
	sum := cjson.SumWritten(func(b []byte) []byte {
		w := ckWriter{Members: cjson.Members{B: b}, ok: true}
		w.open(open, 2)
		ok = w.ok && w.Err == nil
		return w.B
	})
	if ok {
		return sumText(texts, sum), nil
	}
	return cjson.DigestOf(open)
}

// sumText is store.SumText(sum), spelled in texts when there are any.
func sumText(texts *store.DigestTexts, sum [sha256.Size]byte) string {
	if texts == nil {
		return store.SumText(sum)
	}
	return texts.Sum(sum)
}

// intentsEvidence is evidenceItem(name, intents) for intents, the Intent
// members of open effects, as EFFECT_AUTHORIZED digests them: each item
// written as the checkpoint's writer writes an intent (its kept bytes
// where it has them, which is what Intent encodes to), two containers
// deep in {"evidence": name, "value": [...]}.
func intentsEvidence(name string, open []openEffect, idx []int) string {
	return intentsEvidenceIn(nil, name, open, idx)
}

// intentsEvidenceIn is intentsEvidence, its text spelled in texts when
// there are any (store.DigestTexts).
func intentsEvidenceIn(texts *store.DigestTexts, name string, open []openEffect, idx []int) string {
	if cjson.Plain(name) {
		var ok bool
		sum := cjson.SumWritten(func(b []byte) []byte {
			w := ckWriter{Members: cjson.Members{B: evidenceHead(b, name)}, ok: true}
			w.B = append(w.B, '[')
			for n, i := range idx {
				w.item(n)
				if e := &open[i]; e.intentBytes.kept() {
					w.doc(e.intentBytes, 2)
				} else {
					w.value(e.Intent, 2)
				}
			}
			w.B = append(w.B, ']', '}')
			ok = w.ok && w.Err == nil
			return w.B
		})
		if ok {
			return sumText(texts, sum)
		}
	}
	intents := make([]any, 0, len(idx))
	for _, i := range idx {
		intents = append(intents, open[i].Intent)
	}
	return evidenceItem(name, intents)
}
