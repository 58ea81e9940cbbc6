package authority

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// Versions of the singleton projection contract this package speaks. The
// projection is the reference's M4A slice: one exact published stable batch
// plus supplied authority evidence becomes either an approval request or an
// EffectIntent candidate, never both and never anything durable.
const (
	ContractVersion  = "flrh-h-authority/1"
	CommandSchema    = "flrh-h-project-intent-command/1"
	ResultSchema     = "flrh-h-projection-result/1"
	Canonicalization = "flrh-cjson/1"

	reactiveContract = "flrh-r-kernel/1"
)

// Control states and events of the run FSM that a projection reads or emits.
const (
	StatePlanEffects  = "PLAN_EFFECTS"
	StateWaitApproval = "WAIT_APPROVAL"
	StateCommitIntent = "COMMIT_INTENT"

	EventEffectAuthorized = "EFFECT_AUTHORIZED"
	EventApprovalRequired = "APPROVAL_REQUIRED"
	EventApprovalGranted  = "APPROVAL_GRANTED"
	EventNoEffects        = "NO_EFFECTS"
)

// Assessed risk classes, ordered from least to most consequential.
const (
	RiskReadOnly         = "read_only"
	RiskReversible       = "reversible"
	RiskHighRiskExternal = "high_risk_external"
)

// The exact member sets of every object the projection admits. An object
// with a missing or an extra member is malformed: nothing is defaulted.
var (
	commandKeys   = keySet("kind", "schema_version", "contract_version", "control_state", "r_profile_digest", "published_batch", "authority_snapshot", "approval_context", "approval_request", "approval", "observed_at", "effect_sequence", "command_digest")
	publishedKeys = keySet("kind", "batch", "effect_proposals", "eligibility_verdicts", "published_batch_digest")
	batchKeys     = keySet("kind", "batch_id", "logical_time", "low_watermark", "proposal_ids", "eligibility_verdict_ids", "batch_digest", "cause_id", "dataflow_version")
	proposalKeys  = keySet("kind", "proposal_id", "effect_type", "action_digest", "cause_id", "correlation_id", "proposal_dedup_key", "destination_digest", "goal_id", "obligation_id", "declared_risk_hint", "preconditions", "versions")
	verdictKeys   = keySet("kind", "verdict_id", "proposal_id", "status", "support_derivation_ids", "rule_set_version", "cause_id")
	snapshotKeys  = keySet("kind", "authority_version", "proposal_id", "effect_type", "capability", "decision", "assessed_risk", "adapter_version", "destination_digest", "valid_from", "valid_until", "revoked", "authority_digest")
	versionKeys   = keySet("workflow", "state_schema", "event_schema", "graph_schema", "rule_set", "dataflow", "canonicalization", "tool", "model", "oracle", "gate", "resolver", "composition_profile")

	// loopBindingKeys are the eleven approval binding fields of the loop
	// contract, in their wire spelling, sorted.
	loopBindingKeys = []string{"action_digest", "actor", "artifact_digest", "destination_digest", "expires_at", "nonce", "rationale", "run_id", "scope", "visibility", "workflow_version"}

	contextKeys  = keySet(append([]string{"kind", "policy_version", "approver_scope", "requested_at", "context_digest"}, loopBindingKeys...)...)
	requestKeys  = keySet(append([]string{"kind", "request_id", "proposal_id", "capability", "authority_digest", "adapter_version", "requested_at", "context_digest", "policy_version", "approver_scope", "request_digest"}, loopBindingKeys...)...)
	approvalKeys = keySet(append([]string{"kind", "request_digest", "decision", "capability", "authority_digest", "adapter_version", "issued_at", "revoked", "consumed", "context_digest", "policy_version", "approver_scope", "approval_digest"}, loopBindingKeys...)...)
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

type object = map[string]any

// Rejection is the typed refusal of a projection command. Code is one of
// the reference's registered rejection codes; Path is a JSON pointer into
// the command; CommandDigest is the recomputed command digest once the
// command's envelope was trusted enough to compute it ("" before that).
type Rejection struct {
	Code          string
	Path          string
	CommandDigest string
	Expected      any
	Actual        any
}

func (r *Rejection) Error() string {
	if r.Expected != nil || r.Actual != nil {
		return fmt.Sprintf("authority: %s at %s (expected %v, got %v)", r.Code, r.Path, r.Expected, r.Actual)
	}
	return fmt.Sprintf("authority: %s at %s", r.Code, r.Path)
}

// Wire renders the rejection as the reference's HRejection object.
func (r *Rejection) Wire() map[string]any {
	ctx := map[string]any{}
	if v := scalar(r.Expected); v != nil {
		ctx["expected"] = v
	}
	if v := scalar(r.Actual); v != nil {
		ctx["actual"] = v
	}
	var cd any
	if r.CommandDigest != "" {
		cd = r.CommandDigest
	}
	path := r.Path
	if path == "" {
		path = "/"
	}
	return map[string]any{"kind": "HRejection", "schema_version": ResultSchema, "contract_version": ContractVersion, "code": r.Code, "path": path, "command_digest": cd, "context": ctx}
}

func reject(code, path string) *Rejection { return &Rejection{Code: code, Path: path} }

// ControlEvent is the run-FSM event a projection implies, with the sole
// actor-role/capability pair that may issue it and its evidence payload.
type ControlEvent struct {
	Type       string            `json:"type"`
	ActorRole  string            `json:"actor_role"`
	Capability string            `json:"capability"`
	EventID    string            `json:"event_id"`
	Payload    map[string]string `json:"payload"`
}

// Projection is a successful projection: exactly one of Intent and
// ApprovalRequest is set.
type Projection struct {
	Kind             string                 `json:"kind"`
	SchemaVersion    string                 `json:"schema_version"`
	ContractVersion  string                 `json:"contract_version"`
	CommandDigest    string                 `json:"command_digest"`
	Event            string                 `json:"event"`
	ControlEvent     ControlEvent           `json:"control_event"`
	NextControlState string                 `json:"next_control_state"`
	Intent           *protocol.EffectIntent `json:"intent"`
	ApprovalRequest  *ApprovalRequest       `json:"approval_request"`
	ProjectionDigest string                 `json:"projection_digest"`
}

type projectionPreimage struct {
	Kind             string                 `json:"kind"`
	SchemaVersion    string                 `json:"schema_version"`
	ContractVersion  string                 `json:"contract_version"`
	CommandDigest    string                 `json:"command_digest"`
	Event            string                 `json:"event"`
	ControlEvent     ControlEvent           `json:"control_event"`
	NextControlState string                 `json:"next_control_state"`
	Intent           *protocol.EffectIntent `json:"intent"`
	ApprovalRequest  *ApprovalRequest       `json:"approval_request"`
}

// ProjectIntentJSON decodes a command strictly and projects it. A command
// that is not canonical-JSON-decodable is a CANONICALIZATION_VIOLATION.
func ProjectIntentJSON(command []byte) (*Projection, *Rejection) {
	v, err := cjson.Decode(command)
	if err != nil {
		r := reject("CANONICALIZATION_VIOLATION", "/")
		if ce, ok := err.(*cjson.Error); ok {
			r.Path = ce.Pointer
			r.Expected = string(ce.Code)
		}
		return nil, r
	}
	return ProjectIntent(v)
}

// ProjectIntent projects one supplied stable proposal/verdict pair plus
// supplied authority and approval evidence into an approval request or an
// EffectIntent candidate. The command is a decoded JSON value (as from
// cjson.Decode) and is never modified. Every failure is a typed Rejection.
func ProjectIntent(command any) (proj *Projection, rej *Rejection) {
	trusted := ""
	defer func() {
		if rej != nil {
			rej.CommandDigest = trusted
		}
	}()
	cmd, r := exact(command, commandKeys, "MALFORMED_COMMAND", "")
	if r != nil {
		return nil, r
	}
	if r := same(cmd["kind"], "HProjectIntentCommand", "MALFORMED_COMMAND", "/kind"); r != nil {
		return nil, r
	}
	if r := same(cmd["schema_version"], CommandSchema, "UNSUPPORTED_COMMAND_SCHEMA", "/schema_version"); r != nil {
		return nil, r
	}
	if r := same(cmd["contract_version"], ContractVersion, "UNSUPPORTED_CONTRACT_VERSION", "/contract_version"); r != nil {
		return nil, r
	}
	d, r := selfDigest(cmd, "command_digest")
	if r != nil {
		return nil, r
	}
	trusted = d
	if r := same(cmd["command_digest"], trusted, "COMMAND_DIGEST_MISMATCH", "/command_digest"); r != nil {
		return nil, r
	}
	observed, r := logicalTime(cmd["observed_at"], "MALFORMED_COMMAND", "/observed_at")
	if r != nil {
		return nil, r
	}
	sequence, r := logicalTime(cmd["effect_sequence"], "MALFORMED_COMMAND", "/effect_sequence")
	if r != nil {
		return nil, r
	}
	if sequence < 1 {
		return nil, reject("MALFORMED_COMMAND", "/effect_sequence")
	}
	profile, r := digestField(cmd["r_profile_digest"], "MALFORMED_COMMAND", "/r_profile_digest")
	if r != nil {
		return nil, r
	}
	pub, r := parsePublished(cmd["published_batch"], profile)
	if r != nil {
		return nil, r
	}
	switch pub.verdict.Status {
	case "eligible":
	case "ineligible":
		return nil, reject("PROPOSAL_INELIGIBLE", "/published_batch/eligibility_verdicts/0/status")
	case "conflicted":
		return nil, reject("PROPOSAL_CONFLICTED", "/published_batch/eligibility_verdicts/0/status")
	default:
		return nil, reject("MALFORMED_VERDICT", "/published_batch/eligibility_verdicts/0/status")
	}
	snap, r := parseSnapshot(cmd["authority_snapshot"], pub.proposal, observed)
	if r != nil {
		return nil, r
	}
	pubDigest := pub.digest
	switch cmd["control_state"] {
	case StatePlanEffects:
		if cmd["approval_request"] != nil || cmd["approval"] != nil {
			return nil, reject("APPROVAL_FIELD_DRIFT", "/approval_request")
		}
		if snap.AssessedRisk == RiskHighRiskExternal {
			ctx, r := parseContext(cmd["approval_context"], observed, pub.proposal)
			if r != nil {
				return nil, r
			}
			req := buildRequest(nil, pub.proposal, snap, ctx)
			return project(trusted, EventApprovalRequired, StateWaitApproval, nil, &req, map[string]string{
				"action_digest":           pub.proposal.ActionDigest,
				"risk_classification":     snap.AssessedRisk,
				"published_batch_digest":  pubDigest,
				"authority_digest":        snap.AuthorityDigest,
				"approval_context_digest": ctx.ContextDigest,
				"approval_request_digest": req.RequestDigest,
			})
		}
		if cmd["approval_context"] != nil {
			return nil, reject("APPROVAL_FIELD_DRIFT", "/approval_context")
		}
		intent := buildIntent(nil, nil, &pub.proposal, &pub.batch, snap, sequence, nil)
		return project(trusted, EventEffectAuthorized, StateCommitIntent, &intent, nil, map[string]string{
			"policy_verdict":         policyVerdictDigest(profile, pub.verdictRaw, snap),
			"capability_digest":      capabilityEvidenceDigest(nil, &pub.proposal, &snap),
			"published_batch_digest": pubDigest,
			"authority_digest":       snap.AuthorityDigest,
			"intent_id":              intent.IntentID,
		})
	case StateWaitApproval:
	default:
		return nil, reject("INVALID_CONTROL_STATE", "/control_state")
	}
	if snap.AssessedRisk != RiskHighRiskExternal {
		return nil, reject("APPROVAL_FIELD_DRIFT", "/authority_snapshot/assessed_risk")
	}
	// In WAIT_APPROVAL the context was recorded when the request was made,
	// so it is checked against its own request time, not against now.
	at := observed
	if m, ok := cmd["approval_context"].(object); ok {
		if t, ok := m["requested_at"].(int64); ok {
			at = t
		}
	}
	ctx, r := parseContext(cmd["approval_context"], at, pub.proposal)
	if r != nil {
		return nil, r
	}
	want := buildRequest(nil, pub.proposal, snap, ctx)
	supplied, r := exact(cmd["approval_request"], requestKeys, "MALFORMED_APPROVAL_REQUEST", "/approval_request")
	if r != nil {
		return nil, r
	}
	if !reflect.DeepEqual(supplied, want.object()) {
		return nil, reject("APPROVAL_REQUEST_DRIFT", "/approval_request")
	}
	grant, r := parseGrant(cmd["approval"], want, snap, ctx, observed)
	if r != nil {
		return nil, r
	}
	intent := buildIntent(nil, nil, &pub.proposal, &pub.batch, snap, sequence, &grant.ApprovalDigest)
	return project(trusted, EventApprovalGranted, StateCommitIntent, &intent, nil, map[string]string{
		"exact_hash_approval_digest": grant.ApprovalDigest,
		"published_batch_digest":     pubDigest,
		"authority_digest":           snap.AuthorityDigest,
		"approval_context_digest":    ctx.ContextDigest,
		"approval_request_digest":    want.RequestDigest,
		"approval_digest":            grant.ApprovalDigest,
		"intent_id":                  intent.IntentID,
	})
}

// eventAuthority is the sole actor-role/capability pair the run FSM admits
// for each event a projection can imply.
var eventAuthority = map[string][2]string{
	EventEffectAuthorized: {"policy_evaluator", "effect.authorize_low_risk"},
	EventApprovalRequired: {"policy_evaluator", "approval.request"},
	EventApprovalGranted:  {"human_approver", "approval.grant_exact_hash"},
}

func project(commandDigest, event, next string, intent *protocol.EffectIntent, req *ApprovalRequest, evidence map[string]string) (*Projection, *Rejection) {
	auth := eventAuthority[event]
	payload := make(map[string]string, len(evidence)+1)
	for k, v := range evidence {
		payload[k] = v
	}
	payload["command_digest"] = commandDigest
	eventDigest := controlEventDigest(event, auth, payload)
	p := &Projection{
		Kind:             "HProjection",
		SchemaVersion:    ResultSchema,
		ContractVersion:  ContractVersion,
		CommandDigest:    commandDigest,
		Event:            event,
		ControlEvent:     ControlEvent{Type: event, ActorRole: auth[0], Capability: auth[1], EventID: "event:" + hexOf(eventDigest), Payload: payload},
		NextControlState: next,
		Intent:           intent,
		ApprovalRequest:  req,
	}
	// The projection's own kind stands in the preimage (the reference
	// merges the object over its domain tag, so the object's kind wins).
	p.ProjectionDigest = mustDigest(projectionPreimage{
		Kind: p.Kind, SchemaVersion: p.SchemaVersion, ContractVersion: p.ContractVersion,
		CommandDigest: p.CommandDigest, Event: p.Event, ControlEvent: p.ControlEvent,
		NextControlState: p.NextControlState, Intent: p.Intent, ApprovalRequest: p.ApprovalRequest,
	})
	return p, nil
}

// ---- parsing helpers -------------------------------------------------------

func exact(v any, keys map[string]bool, code, path string) (object, *Rejection) {
	m, ok := v.(object)
	if !ok || len(m) != len(keys) {
		return nil, reject(code, pathOrRoot(path))
	}
	//flrh:orderfree every stray key gives the same rejection
	for k := range m {
		if !keys[k] {
			return nil, reject(code, pathOrRoot(path))
		}
	}
	return m, nil
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func same(actual, expected any, code, path string) *Rejection {
	if !reflect.DeepEqual(actual, expected) {
		return &Rejection{Code: code, Path: path, Expected: expected, Actual: scalar(actual)}
	}
	return nil
}

func scalar(v any) any {
	switch v.(type) {
	case string, int64, bool:
		return v
	}
	return nil
}

func idField(v any, code, path string) (string, *Rejection) {
	s, ok := v.(string)
	if !ok || !ValidID(s) {
		return "", reject(code, path)
	}
	return s, nil
}

// ValidID reports whether s is a protocol identifier: the Id pattern and at
// most 128 bytes.
func ValidID(s string) bool { return cjson.ValidID(s) }

func versionField(v any, code, path string) (string, *Rejection) {
	s, ok := v.(string)
	if !ok || !cjson.ValidVersion(s) {
		return "", reject(code, path)
	}
	return s, nil
}

func digestField(v any, code, path string) (string, *Rejection) {
	s, ok := v.(string)
	if !ok || !cjson.ValidDigest(s) {
		return "", reject(code, path)
	}
	return s, nil
}

func logicalTime(v any, code, path string) (int64, *Rejection) {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, reject(code, path)
	}
	return n, nil
}

func uniqueIDs(v any, code, path string) ([]string, *Rejection) {
	list, ok := v.([]any)
	if !ok {
		return nil, reject(code, path)
	}
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, item := range list {
		s, r := idField(item, code, path)
		if r != nil {
			return nil, r
		}
		if seen[s] {
			return nil, reject(code, path)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

// selfDigest digests an object without its own digest member, with the
// contract version standing in it: the reference's preimage convention for
// objects that carry their own kind.
func selfDigest(m object, digestKey string) (string, *Rejection) {
	pre := make(object, len(m)+1)
	for k, v := range m {
		if k != digestKey {
			pre[k] = v
		}
	}
	pre["contract_version"] = ContractVersion
	d, err := cjson.DigestOf(pre)
	if err != nil {
		r := reject("CANONICALIZATION_VIOLATION", "/")
		if ce, ok := err.(*cjson.Error); ok {
			r.Path = pathOrRoot(ce.Pointer)
			r.Expected = string(ce.Code)
		}
		return "", r
	}
	return d, nil
}

// mustDigest digests a value built by this package. A value that is not
// canonical (which validated input never produces) yields a marker that
// is not a digest, so every comparison against it fails closed rather than
// panicking.
func mustDigest(v any) string {
	d, err := cjson.DigestOf(v)
	if err != nil {
		return invalidDigest(err)
	}
	return d
}

func invalidDigest(err error) string {
	if ce, ok := err.(*cjson.Error); ok {
		return "invalid:" + string(ce.Code)
	}
	return "invalid:digest"
}

func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

// ---- published batch -------------------------------------------------------

type published struct {
	batch      protocol.StableProposalBatch
	proposal   protocol.EffectProposal
	verdict    protocol.EligibilityVerdict
	verdictRaw object
	digest     string
}

func parsePublished(v any, profile string) (*published, *Rejection) {
	const root = "/published_batch"
	pm, r := exact(v, publishedKeys, "MALFORMED_PUBLISHED_BATCH", root)
	if r != nil {
		return nil, r
	}
	if r := same(pm["kind"], "RPublishedBatch", "MALFORMED_PUBLISHED_BATCH", root+"/kind"); r != nil {
		return nil, r
	}
	bm, r := exact(pm["batch"], batchKeys, "MALFORMED_PUBLISHED_BATCH", root+"/batch")
	if r != nil {
		return nil, r
	}
	props, ok1 := pm["effect_proposals"].([]any)
	verds, ok2 := pm["eligibility_verdicts"].([]any)
	if !ok1 || !ok2 {
		return nil, reject("MALFORMED_PUBLISHED_BATCH", root)
	}
	if len(props) != 1 || len(verds) != 1 {
		return nil, &Rejection{Code: "NON_SINGLETON_BATCH", Path: root, Expected: int64(1), Actual: int64(max(len(props), len(verds)))}
	}
	const pp, vp = root + "/effect_proposals/0", root + "/eligibility_verdicts/0"
	prm, r := exact(props[0], proposalKeys, "MALFORMED_PROPOSAL", pp)
	if r != nil {
		return nil, r
	}
	vm, r := exact(verds[0], verdictKeys, "MALFORMED_VERDICT", vp)
	if r != nil {
		return nil, r
	}
	for _, c := range []struct {
		v          any
		want, code string
		path       string
	}{
		{bm["kind"], "StableProposalBatch", "MALFORMED_PUBLISHED_BATCH", root + "/batch/kind"},
		{prm["kind"], "EffectProposal", "MALFORMED_PROPOSAL", pp + "/kind"},
		{vm["kind"], "EligibilityVerdict", "MALFORMED_VERDICT", vp + "/kind"},
	} {
		if r := same(c.v, c.want, c.code, c.path); r != nil {
			return nil, r
		}
	}
	out := published{
		batch:    protocol.StableProposalBatch{Kind: "StableProposalBatch"},
		proposal: protocol.EffectProposal{Kind: "EffectProposal"},
		verdict:  protocol.EligibilityVerdict{Kind: "EligibilityVerdict"},
	}
	b := &out.batch
	if b.LogicalTime, r = logicalTime(bm["logical_time"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/logical_time"); r != nil {
		return nil, r
	}
	if b.LowWatermark, r = logicalTime(bm["low_watermark"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/low_watermark"); r != nil {
		return nil, r
	}
	// A batch is stable only once the watermark passed its logical time.
	if b.LowWatermark <= b.LogicalTime {
		return nil, reject("MALFORMED_PUBLISHED_BATCH", root+"/batch/low_watermark")
	}
	if b.BatchID, r = idField(bm["batch_id"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/batch_id"); r != nil {
		return nil, r
	}
	if b.CauseID, r = idField(bm["cause_id"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/cause_id"); r != nil {
		return nil, r
	}
	if b.DataflowVersion, r = versionField(bm["dataflow_version"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/dataflow_version"); r != nil {
		return nil, r
	}
	p := &out.proposal
	for _, f := range []struct {
		key string
		dst *string
	}{{"proposal_id", &p.ProposalID}, {"effect_type", &p.EffectType}, {"cause_id", &p.CauseID}, {"correlation_id", &p.CorrelationID}, {"proposal_dedup_key", &p.ProposalDedupKey}, {"goal_id", &p.GoalID}, {"obligation_id", &p.ObligationID}} {
		if *f.dst, r = idField(prm[f.key], "MALFORMED_PROPOSAL", pp+"/"+f.key); r != nil {
			return nil, r
		}
	}
	hint, _ := prm["declared_risk_hint"].(string)
	switch hint {
	case RiskReadOnly, RiskReversible, RiskHighRiskExternal, "unknown":
		p.DeclaredRiskHint = hint
	default:
		return nil, reject("MALFORMED_PROPOSAL", pp+"/declared_risk_hint")
	}
	if p.Preconditions, r = uniqueIDs(prm["preconditions"], "MALFORMED_PROPOSAL", pp+"/preconditions"); r != nil {
		return nil, r
	}
	vd := &out.verdict
	for _, f := range []struct {
		key string
		dst *string
	}{{"verdict_id", &vd.VerdictID}, {"proposal_id", &vd.ProposalID}, {"cause_id", &vd.CauseID}} {
		if *f.dst, r = idField(vm[f.key], "MALFORMED_VERDICT", vp+"/"+f.key); r != nil {
			return nil, r
		}
	}
	if vd.SupportDerivationIDs, r = uniqueIDs(vm["support_derivation_ids"], "MALFORMED_VERDICT", vp+"/support_derivation_ids"); r != nil {
		return nil, r
	}
	if vd.RuleSetVersion, r = versionField(vm["rule_set_version"], "MALFORMED_VERDICT", vp+"/rule_set_version"); r != nil {
		return nil, r
	}
	vd.Status, _ = vm["status"].(string)
	if r := same(bm["proposal_ids"], []any{p.ProposalID}, "BATCH_IDENTITY_MISMATCH", root+"/batch/proposal_ids"); r != nil {
		return nil, r
	}
	if r := same(bm["eligibility_verdict_ids"], []any{vd.VerdictID}, "BATCH_IDENTITY_MISMATCH", root+"/batch/eligibility_verdict_ids"); r != nil {
		return nil, r
	}
	if vd.ProposalID != p.ProposalID {
		return nil, &Rejection{Code: "BATCH_IDENTITY_MISMATCH", Path: vp + "/proposal_id", Expected: p.ProposalID, Actual: vd.ProposalID}
	}
	b.ProposalIDs, b.EligibilityVerdictIDs = []string{p.ProposalID}, []string{vd.VerdictID}
	vmap, r := exact(prm["versions"], versionKeys, "MALFORMED_PROPOSAL", pp+"/versions")
	if r != nil {
		return nil, r
	}
	for _, k := range sortedKeys(vmap) {
		if _, r := versionField(vmap[k], "MALFORMED_PROPOSAL", pp+"/versions/"+k); r != nil {
			return nil, r
		}
	}
	p.Versions = envelope(vmap)
	if r := same(p.Versions.Canonicalization, Canonicalization, "UNSUPPORTED_CANONICALIZATION", pp+"/versions/canonicalization"); r != nil {
		return nil, r
	}
	if r := same(p.Versions.Dataflow, b.DataflowVersion, "VERSION_MISMATCH", root+"/batch/dataflow_version"); r != nil {
		return nil, r
	}
	if r := same(p.Versions.RuleSet, vd.RuleSetVersion, "VERSION_MISMATCH", vp+"/rule_set_version"); r != nil {
		return nil, r
	}
	if out.digest, r = digestField(pm["published_batch_digest"], "MALFORMED_PUBLISHED_BATCH", root+"/published_batch_digest"); r != nil {
		return nil, r
	}
	if b.BatchDigest, r = digestField(bm["batch_digest"], "MALFORMED_PUBLISHED_BATCH", root+"/batch/batch_digest"); r != nil {
		return nil, r
	}
	if p.ActionDigest, r = digestField(prm["action_digest"], "MALFORMED_PUBLISHED_BATCH", pp+"/action_digest"); r != nil {
		return nil, r
	}
	if p.DestinationDigest, r = digestField(prm["destination_digest"], "MALFORMED_PUBLISHED_BATCH", pp+"/destination_digest"); r != nil {
		return nil, r
	}
	wantBatch := StableBatchDigest(profile, b.LogicalTime, b.LowWatermark, b.ProposalIDs, b.EligibilityVerdictIDs, b.DataflowVersion)
	if r := same(b.BatchDigest, wantBatch, "BATCH_DIGEST_MISMATCH", root+"/batch/batch_digest"); r != nil {
		return nil, r
	}
	if r := same(b.BatchID, "batch:"+hexOf(wantBatch), "BATCH_DIGEST_MISMATCH", root+"/batch/batch_id"); r != nil {
		return nil, r
	}
	if r := same(b.CauseID, "reaction:"+hexOf(wantBatch), "BATCH_DIGEST_MISMATCH", root+"/batch/cause_id"); r != nil {
		return nil, r
	}
	wantPub := mustDigest(object{
		"kind":                         "M3PublishedBatchPreimage",
		"contract_version":             reactiveContract,
		"batch":                        bm,
		"ordered_effect_proposals":     []any{prm},
		"ordered_eligibility_verdicts": []any{vm},
	})
	if r := same(out.digest, wantPub, "PUBLISHED_BATCH_DIGEST_MISMATCH", root+"/published_batch_digest"); r != nil {
		return nil, r
	}
	out.verdictRaw = vm
	return &out, nil
}

// StableBatchDigest is the stable-batch digest of the scalar-frontier
// profile: the batch id and cause id are derived from it.
func StableBatchDigest(profile string, logicalTime, lowWatermark int64, proposalIDs, verdictIDs []string, dataflow string) string {
	w := pooledWriter(512)
	w.stableBatchPreimage(profile, logicalTime, lowWatermark, proposalIDs, verdictIDs, dataflow)
	d, err := w.digest()
	if err != nil {
		return invalidDigest(err)
	}
	return d
}

// stableBatchSum is StableBatchDigest as a fixed array, for the check
// against the digest and id a batch carries; on an error the caller falls
// back to StableBatchDigest's string.
func stableBatchSum(profile string, logicalTime, lowWatermark int64, proposalIDs, verdictIDs []string, dataflow string, a *strArena) ([7 + 64]byte, error) {
	w := a.writer(512)
	w.stableBatchPreimage(profile, logicalTime, lowWatermark, proposalIDs, verdictIDs, dataflow)
	return w.sum()
}

// stableBatchPreimage writes what a stable batch's digest binds: the R
// profile, the logical time and watermark, both id sets and the dataflow.
func (w *canonWriter) stableBatchPreimage(profile string, logicalTime, lowWatermark int64, proposalIDs, verdictIDs []string, dataflow string) {
	w.from = stableBatchMidstate
	w.lit(`{"contract_version":"` + reactiveContract + `","dataflow_version":`)
	w.val(dataflow)
	w.lit(`,"kind":"M3StableBatchPreimage","logical_time":`)
	w.int(logicalTime)
	w.lit(`,"low_watermark":`)
	w.int(lowWatermark)
	w.lit(`,"ordered_eligibility_verdict_ids":`)
	w.vals(verdictIDs)
	w.lit(`,"ordered_proposal_ids":`)
	w.vals(proposalIDs)
	w.lit(`,"profile_digest":`)
	w.val(profile)
	w.lit(`}`)
}

// envelope reads a validated versions object.
func envelope(m object) protocol.VersionEnvelope {
	s := func(k string) string { v, _ := m[k].(string); return v }
	return protocol.VersionEnvelope{
		Workflow: s("workflow"), StateSchema: s("state_schema"), EventSchema: s("event_schema"),
		GraphSchema: s("graph_schema"), RuleSet: s("rule_set"), Dataflow: s("dataflow"),
		Canonicalization: s("canonicalization"), Tool: s("tool"), Model: s("model"),
		Oracle: s("oracle"), Gate: s("gate"), Resolver: s("resolver"), CompositionProfile: s("composition_profile"),
	}
}

func sortStrings(s []string) { sort.Strings(s) }

func sortedKeys[V any](m map[string]V) []string {
	return appendSortedKeys(make([]string, 0, len(m)), m)
}

// appendSortedKeys appends m's keys, sorted, to keys: with a caller's
// array on the stack, the keys of a small map cost no allocation.
func appendSortedKeys[V any](keys []string, m map[string]V) []string {
	start := len(keys)
	//flrh:orderfree the keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys[start:])
	return keys
}
