package store

import (
	"slices"

	"flrh.dev/flrh/label"
)

// ValidateTick checks everything about a tick that needs no database: digests
// match their bytes (hashed, unless a record carries ProveDigest's proof of
// its own), required fields are present, every approval an intent
// names is consumed in the same tick and nothing else is. Backends call it
// first, so malformed input is refused without a transaction.
func ValidateTick(runID string, t Tick) error {
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidInput, "commit", runID, nil, format, args...)
	}
	if t.ExpectHead < 0 {
		return bad("negative head %d", t.ExpectHead)
	}
	for i, ev := range t.Events {
		if ev.Kind == "" || len(ev.Body) == 0 {
			return bad("event %d lacks a kind or body", i)
		}
		if !digestHolds(ev.Proof, ev.Body, ev.Digest) {
			return bad("event %d digest %s does not match its body", i, ev.Digest)
		}
	}
	if cp := t.Checkpoint; cp != nil && !digestHolds(cp.Proof, cp.Body, cp.Digest) {
		return bad("checkpoint digest %s does not match its body", cp.Digest)
	}
	uses := map[string]bool{}
	named := map[string]string{} // intent id → the grant it names, for this tick's intents
	for i, in := range t.Intents {
		if in.ID == "" || in.IdempotencyKey == "" || in.ContentDigest == "" || in.EffectType == "" {
			return bad("intent %d lacks an id, effect type, idempotency key or content digest", i)
		}
		if !digestHolds(in.Proof, in.Body, in.Digest) {
			return bad("intent %s digest does not match its body", in.ID)
		}
		if in.ApprovalID != "" {
			uses[in.ApprovalID+"\x00"+in.ID] = true
			named[in.ID] = in.ApprovalID
		}
	}
	// Every approval an intent names must be consumed in the same commit,
	// and every consumption must belong to one of the tick's intents: the
	// grant it names, or (Concurs) another grant it consumes with that one.
	// A concurring grant is used once, and is no intent's named grant.
	var concurs map[string]bool
	for _, u := range t.Approvals {
		if !u.Concurs {
			continue
		}
		if g, ok := named[u.IntentID]; !ok || g == u.ApprovalID {
			return bad("approval %s concurs for intent %s, which names no other approval in this tick", u.ApprovalID, u.IntentID)
		}
		for _, g := range named {
			if g == u.ApprovalID {
				return bad("approval %s concurs for intent %s and is named by another", u.ApprovalID, u.IntentID)
			}
		}
		if concurs[u.ApprovalID] {
			return bad("approval %s concurs twice in this tick", u.ApprovalID)
		}
		if concurs == nil {
			concurs = map[string]bool{}
		}
		concurs[u.ApprovalID] = true
	}
	for _, u := range t.Approvals {
		if u.Concurs {
			continue
		}
		key := u.ApprovalID + "\x00" + u.IntentID
		if !uses[key] {
			return bad("approval %s is consumed for intent %s, which does not name it in this tick", u.ApprovalID, u.IntentID)
		}
		delete(uses, key)
	}
	if len(uses) > 0 {
		return bad("an intent names an approval that the tick does not consume")
	}
	for i, rc := range t.Receipts {
		if rc.IntentID == "" || rc.Outcome == "" || !digestHolds(rc.Proof, rc.Body, rc.Digest) {
			return bad("receipt %d lacks an intent or outcome, or its digest does not match", i)
		}
	}
	// Inbound events submitted by the tick are consumed by it, each once.
	submitted := map[string]bool{}
	for i, in := range t.Submit {
		if in.ID == "" || in.Kind == "" || in.ActorRole == "" || len(in.Body) == 0 {
			return bad("submitted inbound %d lacks an id, kind, actor role or body", i)
		}
		if in.RunID != "" && in.RunID != runID {
			return bad("submitted inbound %s belongs to run %s", in.ID, in.RunID)
		}
		if !digestHolds(in.Proof, in.Body, in.Digest) {
			return bad("submitted inbound %s digest does not match its body", in.ID)
		}
		if in.Grant != nil || in.Seen != nil {
			return bad("submitted inbound %s carries a grant or a guard: they ride with Submit only", in.ID)
		}
		if submitted[in.ID] {
			return bad("inbound %s is submitted twice", in.ID)
		}
		submitted[in.ID] = true
	}
	for _, id := range t.Consume {
		delete(submitted, id)
	}
	if len(submitted) > 0 {
		return bad("an inbound event the tick submits is not consumed by it")
	}
	for i, r := range t.Results {
		switch r.Outbox {
		case OutboxRetry, OutboxReconcile, OutboxHuman, OutboxDone, OutboxPending:
		default:
			return bad("attempt result %d moves the outbox to %q", i, r.Outbox)
		}
		if r.Status == AttemptStarted {
			return bad("attempt result %d does not finish the attempt", i)
		}
	}
	if why := checkNotices(t.Notices); why != "" {
		return bad("%s", why)
	}
	if t.MayLag {
		switch {
		case len(t.Notices) > 0:
			return bad("a tick that writes a notice must be durable: the notice may be delivered at once")
		case len(t.Intents) > 0, len(t.Approvals) > 0, len(t.Begin) > 0:
			return bad("a tick that commits an intent, consumes an approval or begins an attempt must be durable before anything is sent")
		case len(t.Submit) > 0:
			return bad("a tick that submits an inbound event must be durable: its sender is told it was accepted")
		case t.Outcome != "":
			return bad("a tick that ends the run must be durable")
		}
	}
	return nil
}

// FromInbox is the part of a tick's Consume that must already be pending in
// the run's inbox: every entry but those the tick submits itself.
func FromInbox(t Tick) []string {
	if len(t.Submit) == 0 {
		return t.Consume
	}
	out := make([]string, 0, len(t.Consume))
	for _, id := range t.Consume {
		own := false
		for _, in := range t.Submit {
			own = own || in.ID == id
		}
		if !own {
			out = append(out, id)
		}
	}
	return out
}

// ValidateInbound checks what Submit checks before touching the database:
// the required fields are present and the digest matches the body.
func ValidateInbound(op string, in Inbound) error {
	if in.ID == "" || in.Kind == "" || in.ActorRole == "" || len(in.Body) == 0 {
		return Errorf(CodeInvalidInput, op, in.RunID, nil, "id, kind, actor role and body are required")
	}
	if !digestHolds(in.Proof, in.Body, in.Digest) {
		return Errorf(CodeInvalidInput, op, in.RunID, nil, "digest does not match the body")
	}
	if g := in.Seen; g != nil && (slices.Contains(g.IDs, "") || slices.Contains(g.Kinds, "")) {
		return Errorf(CodeInvalidInput, op, in.RunID, nil, "inbound %s names an entry without an id, or an empty kind, among those seen", in.ID)
	}
	if g := in.Grant; g != nil {
		if g.RunID != in.RunID {
			return Errorf(CodeInvalidInput, op, in.RunID, nil, "inbound %s carries a grant for run %q", in.ID, g.RunID)
		}
		if err := ValidateGrant(op, *g); err != nil {
			return err
		}
	}
	return nil
}

// ValidateGrant checks what GrantApproval checks before touching the
// database: the fields a grant needs, and its digest against its body.
func ValidateGrant(op string, a Approval) error {
	if a.ID == "" || a.RunID == "" || a.Nonce == "" || a.RequestDigest == "" || a.ExpiresAt.IsZero() {
		return Errorf(CodeInvalidInput, op, a.RunID, nil, "id, run, nonce, request digest and expiry are required")
	}
	if BodyDigest(a.Body) != a.Digest {
		return Errorf(CodeInvalidInput, op, a.RunID, nil, "digest does not match the grant body")
	}
	return nil
}

// ValidateNewRun checks a run header and its first inbound events for
// CreateRun: the header's required fields, each event as Submit would,
// each naming the run, and no id twice.
func ValidateNewRun(run Run, first []Inbound) error {
	const op = "create run"
	if run.ID == "" || run.WorkflowID == "" || run.State == "" {
		return Errorf(CodeInvalidInput, op, run.ID, nil, "run id, workflow id and state are required")
	}
	if err := label.Check(run.Labels); err != nil {
		return Errorf(CodeInvalidInput, op, run.ID, err, "%v", err)
	}
	seen := make(map[string]bool, len(first))
	for _, in := range first {
		if err := ValidateInbound(op, in); err != nil {
			return err
		}
		if in.RunID != run.ID {
			return Errorf(CodeInvalidInput, op, run.ID, nil, "inbound %s names run %q", in.ID, in.RunID)
		}
		if in.Grant != nil || in.Seen != nil {
			return Errorf(CodeInvalidInput, op, run.ID, nil, "inbound %s carries a grant or a guard: they ride with Submit only", in.ID)
		}
		if seen[in.ID] {
			return Errorf(CodeInvalidInput, op, run.ID, nil, "inbound %s given twice", in.ID)
		}
		seen[in.ID] = true
	}
	return nil
}
