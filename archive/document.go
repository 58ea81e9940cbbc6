package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/label"
	"flrh.dev/flrh/store"
)

// Error is a document Decode refuses: what is wrong, and where (a JSON
// Pointer into the document, "" for the whole of it).
type Error struct {
	Where  string
	Detail string
}

func (e *Error) Error() string {
	if e.Where == "" {
		return "archive: " + e.Detail
	}
	return fmt.Sprintf("archive: %s: %s", e.Where, e.Detail)
}

func errorf(where, format string, args ...any) *Error {
	return &Error{Where: where, Detail: fmt.Sprintf(format, args...)}
}

// The document's members. A body is exactly one of Body (its bytes are
// canonical JSON, embedded as they are) and Base64 (any other bytes).
type (
	// document's members are pointers so that Decode tells a member
	// missing (nil) from one empty; Checkpoint is null for none.
	document struct {
		Kind       string       `json:"kind"`
		Run        *docRun      `json:"run"`
		Events     *[]docEvent  `json:"events"`
		Checkpoint optionalCP   `json:"checkpoint"`
		Intents    *[]docIntent `json:"intents"`
		Attempts   *[]docAtt    `json:"attempts"`
		Receipts   *[]docRcpt   `json:"receipts"`
		Grants     *[]docGrant  `json:"grants"`
		Inbox      *[]docIn     `json:"inbox"`
		Trace      *[]docTrace  `json:"trace"`
	}
	// optionalCP is the checkpoint member: null (CP nil) when the run has
	// no checkpoint; present says Decode found the member.
	optionalCP struct {
		CP      *docCP
		present bool
	}
	docBody struct {
		Body   json.RawMessage `json:"body,omitempty"`
		Base64 *string         `json:"body_base64,omitempty"`
	}
	docRun struct {
		ID              string `json:"id"`
		WorkflowID      string `json:"workflow_id"`
		WorkflowVersion string `json:"workflow_version"`
		WorkflowDigest  string `json:"workflow_digest"`
		State           string `json:"state"`
		Outcome         string `json:"outcome"`
		Head            int64  `json:"head"`
		HeadHash        string `json:"head_hash"`
		LeaseOwner      string `json:"lease_owner"`
		LeaseGeneration int64  `json:"lease_generation"`
		LeaseExpiresAt  string `json:"lease_expires_at"`
		Quarantine      string `json:"quarantine"`
		CreatedAt       string `json:"created_at"`
		UpdatedAt       string `json:"updated_at"`
		DueAt           string `json:"due_at"`
		// Labels, not evidence, travel with the header; omitted when none
		// (as in documents written before runs had them).
		Labels map[string]string `json:"labels,omitempty"`
	}
	docEvent struct {
		Seq        int64  `json:"seq"`
		Kind       string `json:"kind"`
		Digest     string `json:"digest"`
		PrevHash   string `json:"prev_hash"`
		ChainHash  string `json:"chain_hash"`
		Generation int64  `json:"generation"`
		RecordedAt string `json:"recorded_at"`
		docBody
	}
	docCP struct {
		Seq           int64  `json:"seq"`
		FormatVersion int64  `json:"format_version"`
		BuildDigest   string `json:"build_digest"`
		Digest        string `json:"digest"`
		docBody
	}
	docIntent struct {
		ID             string `json:"id"`
		RunID          string `json:"run_id"`
		Seq            int64  `json:"seq"`
		EffectType     string `json:"effect_type"`
		IdempotencyKey string `json:"idempotency_key"`
		ContentDigest  string `json:"content_digest"`
		ApprovalID     string `json:"approval_id"`
		Digest         string `json:"digest"`
		Outbox         string `json:"outbox"`
		Route          string `json:"route"`
		Attempts       int64  `json:"attempts"`
		docBody
	}
	docAtt struct {
		IntentID   string `json:"intent_id"`
		N          int64  `json:"n"`
		Status     string `json:"status"`
		Generation int64  `json:"generation"`
		Detail     string `json:"detail"`
		StartedAt  string `json:"started_at"`
		FinishedAt string `json:"finished_at"`
	}
	docRcpt struct {
		IntentID string `json:"intent_id"`
		Outcome  string `json:"outcome"`
		Digest   string `json:"digest"`
		docBody
	}
	docGrant struct {
		ID            string `json:"id"`
		RunID         string `json:"run_id"`
		RequestDigest string `json:"request_digest"`
		Nonce         string `json:"nonce"`
		Digest        string `json:"digest"`
		ExpiresAt     string `json:"expires_at"`
		Status        string `json:"status"`
		ConsumedBy    string `json:"consumed_by"`
		docBody
	}
	docIn struct {
		ID         string `json:"id"`
		RunID      string `json:"run_id"`
		Kind       string `json:"kind"`
		ActorRole  string `json:"actor_role"`
		Actor      string `json:"actor"`
		Capability string `json:"capability"`
		Digest     string `json:"digest"`
		Seq        int64  `json:"seq"`
		Consumed   bool   `json:"consumed"`
		docBody
	}
	docTrace struct {
		Kind string `json:"kind"`
		docBody
	}
)

func (o *optionalCP) UnmarshalJSON(b []byte) error {
	o.present = true
	if string(b) == "null" {
		return nil
	}
	o.CP = &docCP{}
	return json.Unmarshal(b, o.CP)
}

func (o optionalCP) MarshalJSON() ([]byte, error) { return json.Marshal(o.CP) }

// bodyDepth is how deep a body is embedded in the document (the root
// object, an array, the record's object): a body may nest at most
// cjson.MaxDepth less that deep to be embedded as JSON.
const bodyDepth = 3

func body(b []byte) docBody {
	if len(b) > 0 && nesting(b) <= cjson.MaxDepth-bodyDepth && cjson.IsCanonical(b) {
		return docBody{Body: json.RawMessage(b)}
	}
	s := base64.StdEncoding.EncodeToString(b)
	return docBody{Base64: &s}
}

// nesting is how deeply b's containers nest, outside its strings.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func (d docBody) bytes(where string) ([]byte, error) {
	switch {
	case d.Body != nil && d.Base64 != nil:
		return nil, errorf(where, "both body and body_base64")
	case d.Body != nil:
		return bytes.Clone(d.Body), nil
	case d.Base64 != nil:
		b, err := base64.StdEncoding.Strict().DecodeString(*d.Base64)
		if err != nil {
			return nil, errorf(where+"/body_base64", "%v", err)
		}
		return b, nil
	}
	return nil, errorf(where, "neither body nor body_base64")
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(where, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		return time.Time{}, errorf(where, "%q is not an RFC 3339 time in UTC", s)
	}
	return time.Unix(0, t.UnixNano()).UTC(), nil
}

// Encode returns a's document: canonical JSON, the same bytes for the
// same archive. It refuses an archive whose grants disagree (one id, two
// contents) or a record that is not one run's.
func Encode(a *Archive) ([]byte, error) {
	r := &a.Record
	var (
		events   = []docEvent{}
		intents  = []docIntent{}
		attempts = []docAtt{}
		receipts = []docRcpt{}
		grantsD  = []docGrant{}
		inbox    = []docIn{}
		trace    = []docTrace{}
	)
	d := document{Kind: KindV1, Events: &events, Intents: &intents, Attempts: &attempts, Receipts: &receipts,
		Grants: &grantsD, Inbox: &inbox, Trace: &trace}
	h := r.Run
	if h.ID == "" {
		return nil, errorf("", "the record has no run header")
	}
	d.Run = &docRun{ID: h.ID, WorkflowID: h.WorkflowID, WorkflowVersion: h.WorkflowVersion, WorkflowDigest: h.WorkflowDigest,
		State: h.State, Outcome: h.Outcome, Head: h.Head, HeadHash: h.HeadHash, LeaseOwner: h.Lease.Owner,
		LeaseGeneration: h.Lease.Generation, LeaseExpiresAt: timeText(h.Lease.ExpiresAt), Quarantine: h.Quarantine,
		CreatedAt: timeText(h.CreatedAt), UpdatedAt: timeText(h.UpdatedAt), DueAt: timeText(h.DueAt), Labels: h.Labels}
	for _, e := range r.Events {
		events = append(events, docEvent{Seq: e.Seq, Kind: e.Kind, Digest: e.Digest, PrevHash: e.PrevHash, ChainHash: e.ChainHash,
			Generation: e.Generation, RecordedAt: timeText(e.RecordedAt), docBody: body(e.Body)})
	}
	if r.HasCheckpoint {
		c := r.Checkpoint
		d.Checkpoint.CP = &docCP{Seq: c.Seq, FormatVersion: c.FormatVersion, BuildDigest: c.BuildDigest, Digest: c.Digest, docBody: body(c.Body)}
	}
	for _, in := range r.Intents {
		intents = append(intents, docIntent{ID: in.ID, RunID: in.RunID, Seq: in.Seq, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey,
			ContentDigest: in.ContentDigest, ApprovalID: in.ApprovalID, Digest: in.Digest, Outbox: string(in.Outbox), Route: in.Route,
			Attempts: in.Attempts, docBody: body(in.Body)})
	}
	for _, at := range r.Attempts {
		attempts = append(attempts, docAtt{IntentID: at.IntentID, N: at.N, Status: string(at.Status), Generation: at.Generation,
			Detail: at.Detail, StartedAt: timeText(at.StartedAt), FinishedAt: timeText(at.FinishedAt)})
	}
	for _, rc := range r.Receipts {
		receipts = append(receipts, docRcpt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest, docBody: body(rc.Body)})
	}
	// The grants the intents name and the run's own, each once.
	grants := map[string]store.Approval{}
	for _, g := range slices.Concat(r.Approvals, a.Grants) {
		if old, ok := grants[g.ID]; ok && !sameGrant(old, g) {
			return nil, errorf("/grants", "grant %s was read twice with different contents", g.ID)
		}
		grants[g.ID] = g
	}
	ids := make([]string, 0, len(grants))
	for id := range grants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g := grants[id]
		grantsD = append(grantsD, docGrant{ID: g.ID, RunID: g.RunID, RequestDigest: g.RequestDigest, Nonce: g.Nonce, Digest: g.Digest,
			ExpiresAt: timeText(g.ExpiresAt), Status: string(g.Status), ConsumedBy: g.ConsumedBy, docBody: body(g.Body)})
	}
	for _, in := range a.Inbox {
		inbox = append(inbox, docIn{ID: in.ID, RunID: in.RunID, Kind: in.Kind, ActorRole: in.ActorRole, Actor: in.Actor,
			Capability: in.Capability, Digest: in.Digest, Seq: in.Seq, Consumed: in.Consumed, docBody: body(in.Body)})
	}
	for _, t := range a.Trace {
		trace = append(trace, docTrace{Kind: t.Kind, docBody: body(t.Body)})
	}
	b, err := cjson.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("archive: run %s: %w", h.ID, err)
	}
	return b, nil
}

func sameGrant(a, b store.Approval) bool {
	return a.ID == b.ID && a.RunID == b.RunID && a.RequestDigest == b.RequestDigest && a.Nonce == b.Nonce && bytes.Equal(a.Body, b.Body) &&
		a.Digest == b.Digest && a.ExpiresAt.Equal(b.ExpiresAt) && a.Status == b.Status && a.ConsumedBy == b.ConsumedBy
}

// Decode reads a document Encode wrote. It refuses, with an *Error, text
// that is not canonical JSON, a document of another kind, a member it
// does not know or lacks, a body given both ways or neither, and a time
// that is not RFC 3339 in UTC. It checks no digest or hash: that is
// verify's work (verify.Record), which finds what a changed byte breaks.
func Decode(text []byte) (*Archive, error) {
	if !cjson.IsCanonical(text) {
		if _, err := cjson.Canonicalize(text); err != nil {
			return nil, errorf("", "not canonical JSON: %v", err)
		}
		return nil, errorf("", "not in canonical form (flrh-cjson/1): a document is read only as Encode wrote it")
	}
	var d document
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, errorf("", "%v", err)
	}
	if d.Kind != KindV1 {
		return nil, errorf("/kind", "kind %q, want %q", d.Kind, KindV1)
	}
	for _, m := range []struct {
		name    string
		present bool
	}{{"run", d.Run != nil}, {"events", d.Events != nil}, {"checkpoint", d.Checkpoint.present}, {"intents", d.Intents != nil},
		{"attempts", d.Attempts != nil}, {"receipts", d.Receipts != nil}, {"grants", d.Grants != nil}, {"inbox", d.Inbox != nil}, {"trace", d.Trace != nil}} {
		if !m.present {
			return nil, errorf("/"+m.name, "missing")
		}
	}
	a := &Archive{}
	r := &a.Record
	h := *d.Run
	if h.ID == "" {
		return nil, errorf("/run/id", "a run id is required")
	}
	r.Run = store.Run{ID: h.ID, WorkflowID: h.WorkflowID, WorkflowVersion: h.WorkflowVersion, WorkflowDigest: h.WorkflowDigest,
		State: h.State, Outcome: h.Outcome, Head: h.Head, HeadHash: h.HeadHash, Quarantine: h.Quarantine,
		Lease: store.Lease{RunID: h.ID, Owner: h.LeaseOwner, Generation: h.LeaseGeneration}}
	if err := label.Check(h.Labels); err != nil {
		return nil, errorf("/run/labels", "%v", err)
	}
	if len(h.Labels) > 0 {
		r.Run.Labels = h.Labels
	}
	var err error
	for _, t := range []struct {
		where, text string
		to          *time.Time
	}{
		{"/run/lease_expires_at", h.LeaseExpiresAt, &r.Run.Lease.ExpiresAt},
		{"/run/created_at", h.CreatedAt, &r.Run.CreatedAt},
		{"/run/updated_at", h.UpdatedAt, &r.Run.UpdatedAt},
		{"/run/due_at", h.DueAt, &r.Run.DueAt},
	} {
		if *t.to, err = parseTime(t.where, t.text); err != nil {
			return nil, err
		}
	}
	for i, e := range *d.Events {
		where := fmt.Sprintf("/events/%d", i)
		ev := store.Event{Seq: e.Seq, Kind: e.Kind, Digest: e.Digest, PrevHash: e.PrevHash, ChainHash: e.ChainHash, Generation: e.Generation}
		if ev.Body, err = e.bytes(where); err != nil {
			return nil, err
		}
		if ev.RecordedAt, err = parseTime(where+"/recorded_at", e.RecordedAt); err != nil {
			return nil, err
		}
		r.Events = append(r.Events, ev)
	}
	if cp := d.Checkpoint.CP; cp != nil {
		r.HasCheckpoint = true
		r.Checkpoint = store.Checkpoint{Seq: cp.Seq, FormatVersion: cp.FormatVersion, BuildDigest: cp.BuildDigest, Digest: cp.Digest}
		if r.Checkpoint.Body, err = cp.bytes("/checkpoint"); err != nil {
			return nil, err
		}
	}
	named := map[string]bool{}
	for i, in := range *d.Intents {
		it := store.Intent{ID: in.ID, RunID: in.RunID, Seq: in.Seq, EffectType: in.EffectType, IdempotencyKey: in.IdempotencyKey,
			ContentDigest: in.ContentDigest, ApprovalID: in.ApprovalID, Digest: in.Digest, Outbox: store.OutboxStatus(in.Outbox),
			Route: in.Route, Attempts: in.Attempts}
		if it.Body, err = in.bytes(fmt.Sprintf("/intents/%d", i)); err != nil {
			return nil, err
		}
		if it.ApprovalID != "" {
			named[it.ApprovalID] = true
		}
		r.Intents = append(r.Intents, it)
	}
	for i, at := range *d.Attempts {
		where := fmt.Sprintf("/attempts/%d", i)
		x := store.Attempt{IntentID: at.IntentID, N: at.N, Status: store.AttemptStatus(at.Status), Generation: at.Generation, Detail: at.Detail}
		if x.StartedAt, err = parseTime(where+"/started_at", at.StartedAt); err != nil {
			return nil, err
		}
		if x.FinishedAt, err = parseTime(where+"/finished_at", at.FinishedAt); err != nil {
			return nil, err
		}
		r.Attempts = append(r.Attempts, x)
	}
	for i, rc := range *d.Receipts {
		x := store.Receipt{IntentID: rc.IntentID, Outcome: rc.Outcome, Digest: rc.Digest}
		if x.Body, err = rc.bytes(fmt.Sprintf("/receipts/%d", i)); err != nil {
			return nil, err
		}
		r.Receipts = append(r.Receipts, x)
	}
	for i, g := range *d.Grants {
		where := fmt.Sprintf("/grants/%d", i)
		if i > 0 && (*d.Grants)[i-1].ID >= g.ID {
			return nil, errorf(where+"/id", "grants are not ordered by id, each once")
		}
		x := store.Approval{ID: g.ID, RunID: g.RunID, RequestDigest: g.RequestDigest, Nonce: g.Nonce, Digest: g.Digest,
			Status: store.ApprovalStatus(g.Status), ConsumedBy: g.ConsumedBy}
		if x.Body, err = g.bytes(where); err != nil {
			return nil, err
		}
		if x.ExpiresAt, err = parseTime(where+"/expires_at", g.ExpiresAt); err != nil {
			return nil, err
		}
		if named[x.ID] {
			r.Approvals = append(r.Approvals, x)
		}
		if x.RunID == h.ID {
			a.Grants = append(a.Grants, x)
		}
	}
	for i, in := range *d.Inbox {
		x := store.Inbound{ID: in.ID, RunID: in.RunID, Kind: in.Kind, ActorRole: in.ActorRole, Actor: in.Actor, Capability: in.Capability,
			Digest: in.Digest, Seq: in.Seq, Consumed: in.Consumed}
		if x.Body, err = in.bytes(fmt.Sprintf("/inbox/%d", i)); err != nil {
			return nil, err
		}
		a.Inbox = append(a.Inbox, x)
	}
	for i, t := range *d.Trace {
		x := store.TraceRecord{Kind: t.Kind}
		if x.Body, err = t.bytes(fmt.Sprintf("/trace/%d", i)); err != nil {
			return nil, err
		}
		a.Trace = append(a.Trace, x)
	}
	return a, nil
}
