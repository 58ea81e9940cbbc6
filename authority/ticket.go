package authority

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
)

// TicketVersion names the Action Ticket profile; it is part of every ticket
// preimage so a change of ticket semantics changes every digest.
const TicketVersion = "flrh-action-ticket/1"

// SideEffect is one declared consequence class of an action.
type SideEffect string

// The side-effect vocabulary. NONE must stand alone.
const (
	SideEffectNone         SideEffect = "NONE"
	SideEffectRead         SideEffect = "READ"
	SideEffectWrite        SideEffect = "WRITE"
	SideEffectExternal     SideEffect = "EXTERNAL"
	SideEffectIrreversible SideEffect = "IRREVERSIBLE"
)

// effectRank orders the side-effect vocabulary (NONE 0 to IRREVERSIBLE
// 4); ok is false for anything outside it. A switch rather than a map: it
// is read for every side effect of every ticket.
func effectRank(s SideEffect) (rank int, ok bool) {
	switch s {
	case SideEffectNone:
		return 0, true
	case SideEffectRead:
		return 1, true
	case SideEffectWrite:
		return 2, true
	case SideEffectExternal:
		return 3, true
	case SideEffectIrreversible:
		return 4, true
	}
	return 0, false
}

// Ticket statuses. EXECUTED means authorized dispatch crossed the commit
// boundary; it does not claim the external effect succeeded.
const (
	StatusDraft                = "DRAFT"
	StatusAwaitingPreview      = "AWAITING_PREVIEW"
	StatusAwaitingConfirmation = "AWAITING_CONFIRMATION"
	StatusReady                = "READY"
	StatusExecuted             = "EXECUTED"
	StatusRefused              = "REFUSED"
	StatusExpired              = "EXPIRED"
	StatusCanceled             = "CANCELED"
)

// Completeness values.
const (
	Complete   = "COMPLETE"
	Incomplete = "INCOMPLETE"
)

// TicketError is the typed refusal of a malformed ticket or an illegal
// ticket change. Field is a JSON pointer into the ticket.
type TicketError struct {
	Code  string
	Field string
	Msg   string
}

func (e *TicketError) Error() string {
	return fmt.Sprintf("ticket: %s at %s: %s", e.Code, e.Field, e.Msg)
}

// ValidateSideEffects checks a side-effect set: known values, no
// duplicates, at least one member, and NONE only on its own.
func ValidateSideEffects(set []SideEffect) error {
	if len(set) == 0 {
		return &TicketError{"SIDE_EFFECTS_EMPTY", "/side_effects", "a ticket declares at least one side-effect class (NONE for none)"}
	}
	var seen uint8 // bit r: the class of rank r was seen
	for i, s := range set {
		r, ok := effectRank(s)
		if !ok {
			return &TicketError{"SIDE_EFFECT_UNKNOWN", "/side_effects/" + strconv.Itoa(i), fmt.Sprintf("%q is not a side-effect class", s)}
		}
		if seen&(1<<r) != 0 {
			return &TicketError{"SIDE_EFFECT_DUPLICATE", "/side_effects/" + strconv.Itoa(i), fmt.Sprintf("%q appears twice", s)}
		}
		seen |= 1 << r
	}
	if seen&1 != 0 && len(set) > 1 {
		return &TicketError{"SIDE_EFFECT_NONE_NOT_ALONE", "/side_effects", "NONE cannot stand beside another side-effect class"}
	}
	return nil
}

// ToolManifest is what a tool (an effect type's adapter) declares about
// itself. It is operator configuration, never model output.
type ToolManifest struct {
	EffectType  string       `json:"effect_type"`
	SideEffects []SideEffect `json:"side_effects"`
	// Idempotent is recorded for the adapter; it has no bearing on
	// whether the tool is verification-class.
	Idempotent bool `json:"idempotent"`
	// RequiredParameters are the parameter names a complete ticket for
	// this effect type must carry.
	RequiredParameters []string `json:"required_parameters"`
	DeclaredRisk       string   `json:"declared_risk"`
}

// VerificationClass reports whether a tool may run in TEST and in Degraded
// Safe Mode: exactly when its manifest declares side_effects = [NONE].
// Idempotence alone is not enough.
func VerificationClass(m ToolManifest) bool {
	return len(m.SideEffects) == 1 && m.SideEffects[0] == SideEffectNone
}

// Constraint is one narrowing a SHAPE decision applies to a ticket: a
// numeric parameter capped at Max, or the scope replaced by a narrower one.
type Constraint struct {
	Gate  string `json:"gate"`
	Rule  string `json:"rule"`
	Field string `json:"field"` // "parameters/<name>" or "scope"
	Max   *int64 `json:"max"`
	Scope string `json:"scope"`
}

// Ticket is an Action Ticket: the accountable statement of what would
// happen if the system were allowed to act. It is a value; every change
// returns a new ticket with its digests recomputed.
type Ticket struct {
	Kind                 string         `json:"kind"`
	TicketVersion        string         `json:"ticket_version"`
	TicketID             string         `json:"ticket_id"`
	Action               string         `json:"action"`
	Destination          string         `json:"destination"`
	Scope                string         `json:"scope"`
	Parameters           map[string]any `json:"parameters"`
	ActionDigest         string         `json:"action_digest"`
	Preview              string         `json:"preview"`
	PreviewDigest        string         `json:"preview_digest"`
	SideEffects          []SideEffect   `json:"side_effects"`
	DeclaredRisk         string         `json:"declared_risk"`
	AssessedRisk         string         `json:"assessed_risk"`
	Completeness         string         `json:"ticket_completeness"`
	MissingFields        []string       `json:"missing_fields"`
	PreviewRequired      bool           `json:"preview_required"`
	PreviewShown         bool           `json:"preview_shown"`
	ConfirmationRequired bool           `json:"confirmation_required"`
	ConfirmationReceived bool           `json:"confirmation_received"`
	Constraints          []Constraint   `json:"constraints"`
	Status               string         `json:"ticket_status"`
	TicketDigest         string         `json:"ticket_digest"`
}

// TicketSpec is what a ticket is drafted from. Parameters must be in the
// canonical value model (as from cjson.Decode: strings, int64, bools, nil,
// []any, map[string]any).
type TicketSpec struct {
	TicketID     string
	Action       string
	Destination  string
	Scope        string
	Parameters   map[string]any
	SideEffects  []SideEffect
	DeclaredRisk string
	AssessedRisk string
	// RequiredParameters lists the parameter names the tool's manifest
	// requires; a missing one makes the ticket INCOMPLETE.
	RequiredParameters []string
}

// DraftTicket builds a ticket from a spec: it validates what must be valid
// (identifiers, side effects, risk vocabulary, canonical parameters),
// records what is missing rather than rejecting it, derives the preview
// and confirmation requirements from risk and side effects, renders the
// preview and computes every digest.
func DraftTicket(s TicketSpec) (Ticket, error) {
	t, err := buildTicket(s)
	if err != nil {
		return Ticket{}, err
	}
	return t.seal(), nil
}

// buildTicket validates a spec and derives everything but the digests and
// preview.
func buildTicket(s TicketSpec) (Ticket, error) { return buildTicketIn(s, nil) }

// buildTicketIn is buildTicket with room for the ticket's sorted side
// effects (see sortedEffectsIn).
func buildTicketIn(s TicketSpec, room []SideEffect) (Ticket, error) {
	if !ValidID(s.TicketID) {
		return Ticket{}, &TicketError{"MALFORMED_TICKET", "/ticket_id", "ticket id is not a protocol id"}
	}
	for _, f := range []struct{ v, ptr string }{{s.Action, "/action"}, {s.Destination, "/destination"}, {s.Scope, "/scope"}} {
		if f.v != "" && !ValidID(f.v) {
			return Ticket{}, &TicketError{"MALFORMED_TICKET", f.ptr, fmt.Sprintf("%q is not a protocol id", f.v)}
		}
	}
	if err := ValidateSideEffects(s.SideEffects); err != nil {
		return Ticket{}, err
	}
	for _, r := range []struct{ v, ptr string }{{s.DeclaredRisk, "/declared_risk"}, {s.AssessedRisk, "/assessed_risk"}} {
		switch r.v {
		case "", RiskReadOnly, RiskReversible, RiskHighRiskExternal:
		default:
			return Ticket{}, &TicketError{"MALFORMED_TICKET", r.ptr, fmt.Sprintf("%q is not a risk class", r.v)}
		}
	}
	params := s.Parameters
	if params == nil {
		params = map[string]any{}
	}
	if !flatASCII(params) {
		if _, err := cjson.Encode(params); err != nil {
			return Ticket{}, &TicketError{"MALFORMED_TICKET", "/parameters", err.Error()}
		}
	}
	t := Ticket{
		Kind: "ActionTicket", TicketVersion: TicketVersion, TicketID: s.TicketID,
		Action: s.Action, Destination: s.Destination, Scope: s.Scope,
		Parameters: params, SideEffects: sortedEffectsIn(room, s.SideEffects),
		DeclaredRisk: s.DeclaredRisk, AssessedRisk: s.AssessedRisk,
		Constraints: []Constraint{}, Status: StatusDraft,
	}
	t.MissingFields = missingFields(t, s.RequiredParameters)
	t.Completeness = Complete
	if len(t.MissingFields) > 0 {
		t.Completeness = Incomplete
	}
	t.PreviewRequired, t.ConfirmationRequired = requirements(t)
	return t, nil
}

// withRisk returns an unsealed ticket with its assessed risk set and its
// completeness and requirements derived again.
func (t Ticket) withRisk(risk string, required []string) Ticket {
	t.AssessedRisk = risk
	t.MissingFields = missingFields(t, required)
	t.Completeness = Complete
	if len(t.MissingFields) > 0 {
		t.Completeness = Incomplete
	}
	t.PreviewRequired, t.ConfirmationRequired = requirements(t)
	return t
}

func sortedEffects(in []SideEffect) []SideEffect { return sortedEffectsIn(nil, in) }

// sortedEffectsIn is sortedEffects copying into room's array while in
// fits it (the copy capped at room's capacity, so an append past it
// copies out, as one to sortedEffects' own copy would), else into a
// new array; an empty list is nil, as before.
func sortedEffectsIn(room, in []SideEffect) []SideEffect {
	var out []SideEffect
	if len(in) > 0 {
		out = append(room[:0:len(room)], in...)
	}
	// slices.SortFunc runs the same pattern-defeating quicksort as
	// sort.Slice (the generic copy of it), so equal ranks keep the order
	// they always had, without sort.Slice's reflective swapper.
	slices.SortFunc(out, func(a, b SideEffect) int {
		ra, _ := effectRank(a)
		rb, _ := effectRank(b)
		return cmp.Compare(ra, rb)
	})
	return out
}

func missingFields(t Ticket, required []string) []string {
	var missing []string
	if t.Action == "" {
		missing = append(missing, "action")
	}
	if t.Destination == "" {
		missing = append(missing, "destination")
	}
	if t.Scope == "" {
		missing = append(missing, "scope")
	}
	if t.AssessedRisk == "" {
		missing = append(missing, "assessed_risk")
	}
	req := required
	if !slices.IsSorted(req) {
		// Manifests normally list their parameters sorted; copy only
		// when they do not, so the caller's slice is never reordered.
		req = slices.Sorted(slices.Values(required))
	}
	for i, name := range req {
		if i > 0 && req[i-1] == name {
			continue
		}
		if v, ok := t.Parameters[name]; !ok || v == nil || v == "" {
			missing = append(missing, "parameters/"+name)
		}
	}
	if missing == nil {
		missing = []string{}
	}
	return missing
}

// requirements: anything that leaves the process, or cannot be undone,
// must be previewed; anything high-risk or irreversible must also be
// confirmed by a person.
func requirements(t Ticket) (preview, confirm bool) {
	for _, s := range t.SideEffects {
		switch s {
		case SideEffectExternal:
			preview = true
		case SideEffectIrreversible:
			preview, confirm = true, true
		}
	}
	if t.AssessedRisk == RiskHighRiskExternal {
		preview, confirm = true, true
	}
	return preview, confirm
}

// status derives the live status from completeness and the outstanding
// preview and confirmation; terminal statuses are kept.
func (t Ticket) status() string {
	switch t.Status {
	case StatusExecuted, StatusRefused, StatusExpired, StatusCanceled:
		return t.Status
	}
	switch {
	case t.Completeness != Complete:
		return StatusDraft
	case t.PreviewRequired && !t.PreviewShown:
		return StatusAwaitingPreview
	case t.ConfirmationRequired && !t.ConfirmationReceived:
		return StatusAwaitingConfirmation
	}
	return StatusReady
}

// flatASCII reports whether parameters certainly have a canonical encoding,
// without running the encoder: an object with no "kind" member (so no
// set-like arrays), ASCII keys, and only null, boolean, int64 and ASCII
// string values (ASCII is valid UTF-8 and in NFC). Anything else goes
// through cjson.Encode, whose error is the one reported.
func flatASCII(params map[string]any) bool {
	if _, ok := params["kind"]; ok {
		return false
	}
	//flrh:orderfree the answer is a conjunction over all members
	for k, v := range params {
		if !isASCII(k) {
			return false
		}
		switch x := v.(type) {
		case nil, bool, int64:
		case string:
			if !isASCII(x) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// seal recomputes the derived members: action digest, preview, preview
// digest, status and ticket digest.
func (t Ticket) seal() Ticket { return t.sealIn(nil) }

// sealIn is seal with the digests carved from a.
func (t Ticket) sealIn(a *strArena) Ticket { return t.sealKeyed(a, nil) }

// sealKeyed is sealIn given keys, the sorted names of t.Parameters (nil:
// sorted here), so that a decision sorts its ticket's parameter names
// once for its gates, the action digest and the preview instead of once
// for each.
func (t Ticket) sealKeyed(a *strArena, keys []string) Ticket {
	t.ActionDigest = t.computeActionDigestKeyed(a, keys)
	t.Preview = renderPreviewKeyed(a, t, t.ActionDigest, keys)
	w := a.writer(256 + len(t.Preview))
	w.previewPreimage(t)
	t.PreviewDigest = w.mustDigestIn(a)
	t.Status = t.status()
	t.TicketDigest = ""
	t.TicketDigest = t.computeTicketDigest(a)
	return t
}

// previewPreimage writes the preview digest's preimage, for a ticket
// whose action digest seal has just computed.
func (w *canonWriter) previewPreimage(t Ticket) {
	w.lit(`{"action_digest":`)
	w.ours(t.ActionDigest) // computed by seal
	w.lit(`,"kind":"ActionTicketPreviewPreimage","preview":`)
	w.lines(t.Preview)
	w.lit(`,"ticket_id":`)
	w.val(t.TicketID)
	w.lit(`,"ticket_version":"` + TicketVersion + `"}`)
}

// computeActionDigest binds exactly what would happen: action, destination,
// scope and the canonical parameters.
func (t Ticket) computeActionDigest(a *strArena) string { return t.computeActionDigestKeyed(a, nil) }

// computeActionDigestKeyed is computeActionDigest with the parameters'
// sorted names given (nil: sorted here).
func (t Ticket) computeActionDigestKeyed(a *strArena, keys []string) string {
	w := a.writer(512)
	w.cache = &actionOpenings
	w.actionPreimageKeyed(t, nil, keys)
	if w.err != nil {
		// Parameters outside the strict value model (say an int from a Go
		// caller): let the reflective encoder canonicalize them.
		params, err := cjson.Encode(t.Parameters)
		if err != nil {
			return invalidDigest(err)
		}
		w.release()
		w = a.writer(512 + len(params))
		w.actionPreimage(t, params)
	}
	return w.mustDigestIn(a)
}

// actionPreimage writes the action digest's preimage, with the
// parameters' canonical bytes when given and written from the map
// otherwise (a nil map is {} here, as in cjson).
func (w *canonWriter) actionPreimage(t Ticket, params []byte) { w.actionPreimageKeyed(t, params, nil) }

// actionPreimageKeyed is actionPreimage with the parameters' sorted names
// given (nil: sorted here).
func (w *canonWriter) actionPreimageKeyed(t Ticket, params []byte, keys []string) {
	w.lit(`{"action":`)
	w.val(t.Action)
	w.lit(`,"destination":`)
	w.val(t.Destination)
	w.lit(`,"kind":"ActionTicketActionPreimage","parameters":`)
	// The opening, what the decisions of one action at one destination
	// have in common, ends before the parameters.
	w.opening = len(w.b)
	if params != nil {
		w.lit(string(params))
	} else if keys != nil {
		w.object(t.Parameters, keys)
	} else {
		w.value(t.Parameters)
	}
	w.lit(`,"scope":`)
	w.val(t.Scope)
	w.lit(`,"ticket_version":"` + TicketVersion + `"}`)
}

// computeTicketDigest digests every member but the digest itself. The
// parameters enter through the action digest, the preview through the
// preview digest.
func (t Ticket) computeTicketDigest(a *strArena) string {
	w := a.writer(1024)
	w.ticketPreimage(t)
	return w.mustDigestIn(a)
}

// ticketPreimage writes the ticket digest's preimage, for a ticket seal
// has just given its action and preview digests and its status (one of
// the status constants).
func (w *canonWriter) ticketPreimage(t Ticket) {
	w.lit(`{"action":`)
	w.val(t.Action)
	w.lit(`,"action_digest":`)
	w.ours(t.ActionDigest)
	w.lit(`,"assessed_risk":`)
	w.val(t.AssessedRisk)
	w.lit(`,"confirmation_received":`)
	w.flag(t.ConfirmationReceived)
	w.lit(`,"confirmation_required":`)
	w.flag(t.ConfirmationRequired)
	w.lit(`,"constraints":[`)
	for i, c := range t.Constraints {
		if i > 0 {
			w.lit(`,`)
		}
		w.lit(`{"field":`)
		w.val(c.Field)
		w.lit(`,"gate":`)
		w.val(c.Gate)
		if c.Max != nil {
			w.lit(`,"max":`)
			w.int(*c.Max)
		} else {
			w.lit(`,"max":null`)
		}
		w.lit(`,"rule":`)
		w.val(c.Rule)
		w.lit(`,"scope":`)
		w.val(c.Scope)
		w.lit(`}`)
	}
	w.lit(`],"declared_risk":`)
	w.val(t.DeclaredRisk)
	w.lit(`,"destination":`)
	w.val(t.Destination)
	w.lit(`,"kind":"ActionTicketPreimage","missing_fields":`)
	w.vals(t.MissingFields)
	w.lit(`,"preview_digest":`)
	w.ours(t.PreviewDigest)
	w.lit(`,"preview_required":`)
	w.flag(t.PreviewRequired)
	w.lit(`,"preview_shown":`)
	w.flag(t.PreviewShown)
	w.lit(`,"scope":`)
	w.val(t.Scope)
	w.lit(`,"side_effects":[`)
	for i, e := range t.SideEffects {
		if i > 0 {
			w.lit(`,`)
		}
		w.val(string(e))
	}
	w.lit(`],"ticket_completeness":`)
	w.val(t.Completeness)
	w.lit(`,"ticket_id":`)
	w.val(t.TicketID)
	w.lit(`,"ticket_status":`)
	w.ours(t.Status)
	w.lit(`,"ticket_version":"` + TicketVersion + `"}`)
}

// Verify recomputes every derived member and reports the first that
// disagrees: a ticket read back from anywhere is checked before use.
func (t Ticket) Verify() error {
	want := t.seal()
	switch {
	case t.ActionDigest != want.ActionDigest:
		return &TicketError{"TICKET_DIGEST_MISMATCH", "/action_digest", "action digest does not match the ticket's content"}
	case t.Preview != want.Preview || t.PreviewDigest != want.PreviewDigest:
		return &TicketError{"TICKET_DIGEST_MISMATCH", "/preview_digest", "preview does not match the ticket's content"}
	case t.Status != want.Status:
		return &TicketError{"TICKET_STATUS_MISMATCH", "/ticket_status", fmt.Sprintf("status %s, derived %s", t.Status, want.Status)}
	case t.TicketDigest != want.TicketDigest:
		return &TicketError{"TICKET_DIGEST_MISMATCH", "/ticket_digest", "ticket digest does not match the ticket"}
	}
	return nil
}

// RenderPreview renders the human-readable preview of a ticket. It is a
// pure function of the ticket's content: the same ticket always previews
// to the same bytes, so the preview can be digested and approved.
func RenderPreview(t Ticket) string { return renderPreview(t, t.computeActionDigest(nil)) }

func renderPreview(t Ticket, actionDigest string) string {
	return renderPreviewIn(nil, t, actionDigest)
}

// renderPreviewIn is renderPreview with the preview carved from a (a new
// buffer for a nil a).
func renderPreviewIn(a *strArena, t Ticket, actionDigest string) string {
	return renderPreviewKeyed(a, t, actionDigest, nil)
}

// renderPreviewKeyed is renderPreviewIn with the parameters' sorted names
// given (nil: sorted here).
func renderPreviewKeyed(a *strArena, t Ticket, actionDigest string, keys []string) string {
	if n := 256 + 32*len(t.Parameters); a == nil {
		a = new(strArena)
		a.roomFor(n, n)
	} else {
		a.room(n)
	}
	b := &a.sb
	start := b.Len()
	line := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
		b.WriteByte('\n')
	}
	orMissing := func(s string) string {
		if s == "" {
			return "(missing)"
		}
		return s
	}
	line("Action: ", orMissing(t.Action))
	line("Destination: ", orMissing(t.Destination))
	line("Scope: ", orMissing(t.Scope))
	b.WriteString("Side effects: ")
	for i, s := range t.SideEffects {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	b.WriteByte('\n')
	declared := t.DeclaredRisk
	if declared == "" {
		declared = "(none)"
	}
	line("Risk: declared ", declared, ", assessed ", orMissing(t.AssessedRisk))
	b.WriteString("Parameters:\n")
	if keys == nil {
		keys = sortedKeys(t.Parameters)
	}
	if len(keys) == 0 {
		b.WriteString("  (none)\n")
	}
	if len(keys) > 0 {
		// One pooled buffer for every parameter's encoding, each written
		// from empty and copied into the preview.
		w := pooledWriter(128)
		for _, k := range keys {
			w.b, w.err = w.b[:0], nil
			w.value(t.Parameters[k])
			enc := w.b
			if w.err != nil {
				enc, _ = cjson.Encode(t.Parameters[k])
			}
			b.WriteString("  ")
			b.WriteString(k)
			b.WriteString(" = ")
			b.Write(enc)
			b.WriteByte('\n')
		}
		w.release()
	}
	for _, c := range t.Constraints {
		switch {
		case c.Max != nil:
			line("Constrained by ", c.Gate, " (", c.Rule, "): ", c.Field, " limited to ", strconv.FormatInt(*c.Max, 10))
		case c.Field == "scope":
			line("Constrained by ", c.Gate, " (", c.Rule, "): scope narrowed to ", c.Scope)
		}
	}
	if len(t.MissingFields) > 0 {
		line("Incomplete: missing ", strings.Join(t.MissingFields, ", "))
	}
	line("Action digest: ", actionDigest)
	return b.String()[start:]
}

// Shape applies SHAPE constraints and returns the constrained ticket. A
// numeric cap lowers a parameter that exceeds it (never raises one); a
// scope constraint replaces the scope. The shaped ticket is a different
// action: its action digest changes, the constraint is visible in the
// preview, and any preview already shown must be shown again.
func Shape(t Ticket, cs ...Constraint) (Ticket, error) {
	if len(cs) == 0 {
		return t, nil
	}
	params := make(map[string]any, len(t.Parameters))
	for k, v := range t.Parameters {
		params[k] = v
	}
	t.Parameters = params
	t.Constraints = append(append([]Constraint(nil), t.Constraints...), cs...)
	for i, c := range cs {
		switch {
		case c.Field == "scope":
			if !ValidID(c.Scope) {
				return Ticket{}, &TicketError{"MALFORMED_CONSTRAINT", fmt.Sprintf("/constraints/%d/scope", i), "scope constraint needs a narrower scope id"}
			}
			t.Scope = c.Scope
		case strings.HasPrefix(c.Field, "parameters/") && c.Max != nil:
			name := strings.TrimPrefix(c.Field, "parameters/")
			cur, ok := params[name].(int64)
			if !ok {
				return Ticket{}, &TicketError{"MALFORMED_CONSTRAINT", fmt.Sprintf("/constraints/%d/field", i), fmt.Sprintf("parameter %q is not an integer", name)}
			}
			if cur > *c.Max {
				params[name] = *c.Max
			}
		default:
			return Ticket{}, &TicketError{"MALFORMED_CONSTRAINT", fmt.Sprintf("/constraints/%d", i), "a constraint caps an integer parameter or narrows the scope"}
		}
	}
	t.PreviewShown, t.ConfirmationReceived = false, false
	return t.seal(), nil
}

// Ticket lifecycle events.
const (
	TicketShowPreview = "SHOW_PREVIEW"
	TicketConfirm     = "CONFIRM"
	TicketExecute     = "EXECUTE"
	TicketRefuse      = "REFUSE"
	TicketExpire      = "EXPIRE"
	TicketCancel      = "CANCEL"
)

// Advance applies one lifecycle event. A preview must be shown before a
// confirmation counts; only a READY ticket may be executed; terminal
// tickets accept nothing.
func Advance(t Ticket, event string) (Ticket, error) {
	u, err := t.apply(event)
	if err != nil {
		return t, err
	}
	return u.seal(), nil
}

// apply is Advance short of the seal: the event's change of t's
// lifecycle members (preview shown, confirmation received, status), with
// their status as seal sets it, or t and Advance's error.
func (t Ticket) apply(event string) (Ticket, error) {
	switch t.Status {
	case StatusExecuted, StatusRefused, StatusExpired, StatusCanceled:
		return t, &TicketError{"TICKET_TERMINAL", "/ticket_status", fmt.Sprintf("ticket is %s", t.Status)}
	}
	switch event {
	case TicketShowPreview:
		if t.Completeness != Complete {
			return t, &TicketError{"TICKET_INCOMPLETE", "/ticket_completeness", "an incomplete ticket cannot be previewed for approval"}
		}
		t.PreviewShown = true
	case TicketConfirm:
		if t.PreviewRequired && !t.PreviewShown {
			return t, &TicketError{"PREVIEW_NOT_SHOWN", "/preview_shown", "confirmation before the preview was shown"}
		}
		if t.Completeness != Complete {
			return t, &TicketError{"TICKET_INCOMPLETE", "/ticket_completeness", "an incomplete ticket cannot be confirmed"}
		}
		t.ConfirmationReceived = true
	case TicketExecute:
		if t.Status != StatusReady {
			return t, &TicketError{"TICKET_NOT_READY", "/ticket_status", fmt.Sprintf("ticket is %s", t.Status)}
		}
		t.Status = StatusExecuted
	case TicketRefuse:
		t.Status = StatusRefused
	case TicketExpire:
		t.Status = StatusExpired
	case TicketCancel:
		t.Status = StatusCanceled
	default:
		return t, &TicketError{"UNKNOWN_TICKET_EVENT", "/", fmt.Sprintf("%q is not a ticket event", event)}
	}
	t.Status = t.status()
	return t, nil
}

// applied is u, which is t with lifecycle events applied (apply), sealed:
// the last step of Advance for a ticket this package sealed. A lifecycle
// event changes none of what the action digest, the preview and the
// preview digest are computed from (action, destination, scope,
// parameters, side effects, risks, ticket id), so those of t are u's, and
// only the ticket digest is computed again; u with the lifecycle members
// of t is t itself. t must be as seal left it: a ticket from outside, its
// digests unchecked, goes through Advance. TestAppliedIsAdvance holds the
// two to each other.
func (t Ticket) applied(a *strArena, u Ticket) Ticket {
	if u.PreviewShown == t.PreviewShown && u.ConfirmationReceived == t.ConfirmationReceived && u.Status == t.Status {
		return t
	}
	u.TicketDigest = ""
	u.TicketDigest = u.computeTicketDigest(a)
	return u
}

// Reduced returns the reduced interface MRP reads.
func (t Ticket) Reduced() mrp.TicketView {
	return mrp.TicketView{
		TicketID:             t.TicketID,
		TicketDigest:         t.TicketDigest,
		Complete:             t.Completeness == Complete,
		MissingFields:        append([]string(nil), t.MissingFields...),
		PreviewRequired:      t.PreviewRequired,
		PreviewShown:         t.PreviewShown,
		ConfirmationRequired: t.ConfirmationRequired,
		ConfirmationReceived: t.ConfirmationReceived,
		Status:               t.Status,
		VerificationOnly:     len(t.SideEffects) == 1 && t.SideEffects[0] == SideEffectNone,
	}
}
