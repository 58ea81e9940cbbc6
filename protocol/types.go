package protocol

// Kind names: the value of the "kind" member that every wire object carries.
// The kind selects the schema an object is validated against and, for
// flrh-cjson/1, which of its arrays are set-like.
const (
	KindAcceptedEvent              = "AcceptedEvent"
	KindFactDelta                  = "FactDelta"
	KindEffectProposal             = "EffectProposal"
	KindEligibilityVerdict         = "EligibilityVerdict"
	KindStableProposalBatch        = "StableProposalBatch"
	KindEffectIntent               = "EffectIntent"
	KindGraphEnvelope              = "GraphEnvelope"
	KindGraphDelta                 = "GraphDelta"
	KindActionReceipt              = "ActionReceipt"
	KindResolvedCompositionReceipt = "ResolvedCompositionReceipt"
)

// Kinds lists every wire kind this package knows, in a fixed order.
var Kinds = []string{
	KindAcceptedEvent,
	KindFactDelta,
	KindEffectProposal,
	KindEligibilityVerdict,
	KindStableProposalBatch,
	KindEffectIntent,
	KindGraphEnvelope,
	KindGraphDelta,
	KindActionReceipt,
	KindResolvedCompositionReceipt,
}

// Risk classes. A proposal may only hint at its risk (RiskUnknown allowed);
// the authority assesses it (RiskUnknown not allowed on intents or receipts).
const (
	RiskReadOnly         = "read_only"
	RiskReversible       = "reversible"
	RiskHighRiskExternal = "high_risk_external"
	RiskUnknown          = "unknown"
)

// Eligibility statuses, as projected from the four-valued logic state.
const (
	VerdictEligible   = "eligible"
	VerdictIneligible = "ineligible"
	VerdictConflicted = "conflicted"
)

// Effect outcomes recorded on a receipt. OutcomeUnknown is never success.
const (
	OutcomeConfirmedSuccess = "confirmed_success"
	OutcomeConfirmedFailure = "confirmed_failure"
	OutcomeUnknown          = "outcome_unknown"
)

// Equivalence statuses of a resolved composition.
const (
	EquivalenceEquivalent    = "equivalent"
	EquivalenceNotEquivalent = "not_equivalent"
	EquivalenceInconclusive  = "inconclusive"
)

// Graph kinds of the flrh-graph/v0 profile.
const (
	GraphSemantic   = "G_sem"
	GraphDependency = "G_dep"
	GraphComponent  = "G_comp"
	GraphAction     = "G_action"
	GraphTrace      = "G_trace"
	GraphProvenance = "G_prov"
	GraphSchema     = "G_schema"
)

// GraphProfileVersion is the only graph profile this protocol version knows.
const GraphProfileVersion = "flrh-graph/v0"

// VersionEnvelope pins every versioned artefact an object was produced
// under. Two objects can only be compared, replayed or combined when their
// envelopes agree; nothing in the envelope is optional.
type VersionEnvelope struct {
	Workflow           string `json:"workflow"`
	StateSchema        string `json:"state_schema"`
	EventSchema        string `json:"event_schema"`
	GraphSchema        string `json:"graph_schema"`
	RuleSet            string `json:"rule_set"`
	Dataflow           string `json:"dataflow"`
	Canonicalization   string `json:"canonicalization"`
	Tool               string `json:"tool"`
	Model              string `json:"model"`
	Oracle             string `json:"oracle"`
	Gate               string `json:"gate"`
	Resolver           string `json:"resolver"`
	CompositionProfile string `json:"composition_profile"`
}

// AcceptedEvent is an input that crossed the ingress boundary and was
// durably accepted. Payload is application data: its arrays keep their order.
type AcceptedEvent struct {
	Kind           string          `json:"kind"`
	EventID        string          `json:"event_id"`
	Payload        Object          `json:"payload"`
	OccurredAt     string          `json:"occurred_at"`
	ReceivedAt     string          `json:"received_at"`
	LogicalTime    int64           `json:"logical_time"`
	CorrelationID  string          `json:"correlation_id"`
	CausationID    *string         `json:"causation_id"`
	IdempotencyKey string          `json:"idempotency_key"`
	Versions       VersionEnvelope `json:"versions"`
}

// FactDelta is one signed unit change of one base fact: Diff is +1 (insert a
// support) or -1 (retract exactly that support, named by DerivationID).
type FactDelta struct {
	Kind            string `json:"kind"`
	Tuple           Object `json:"tuple"`
	LogicalTime     int64  `json:"logical_time"`
	Diff            int64  `json:"diff"`
	DerivationID    string `json:"derivation_id"`
	CausationID     string `json:"causation_id"`
	ProvenanceDelta Object `json:"provenance_delta"`
	RuleSetVersion  string `json:"rule_set_version"`
	DataflowVersion string `json:"dataflow_version"`
}

// EffectProposal is an inert, authority-free suggestion that an effect be
// performed. It carries a risk hint, never an assessed risk, and never an
// effect idempotency key, capability or approval: those belong to H.
type EffectProposal struct {
	Kind              string          `json:"kind"`
	ProposalID        string          `json:"proposal_id"`
	EffectType        string          `json:"effect_type"`
	ActionDigest      string          `json:"action_digest"`
	CauseID           string          `json:"cause_id"`
	CorrelationID     string          `json:"correlation_id"`
	ProposalDedupKey  string          `json:"proposal_dedup_key"`
	DestinationDigest string          `json:"destination_digest"`
	GoalID            string          `json:"goal_id"`
	ObligationID      string          `json:"obligation_id"`
	DeclaredRiskHint  string          `json:"declared_risk_hint"`
	Preconditions     IDSet           `json:"preconditions"`
	Versions          VersionEnvelope `json:"versions"`
}

// EligibilityVerdict is L's judgement of one proposal, with the derivations
// that support it.
type EligibilityVerdict struct {
	Kind                 string `json:"kind"`
	VerdictID            string `json:"verdict_id"`
	ProposalID           string `json:"proposal_id"`
	Status               string `json:"status"`
	SupportDerivationIDs IDSet  `json:"support_derivation_ids"`
	CauseID              string `json:"cause_id"`
	RuleSetVersion       string `json:"rule_set_version"`
}

// StableProposalBatch is R's atomic publication of the proposals and
// verdicts of one epoch whose frontier has passed.
type StableProposalBatch struct {
	Kind                  string `json:"kind"`
	BatchID               string `json:"batch_id"`
	LogicalTime           int64  `json:"logical_time"`
	LowWatermark          int64  `json:"low_watermark"`
	ProposalIDs           IDSet  `json:"proposal_ids"`
	EligibilityVerdictIDs IDSet  `json:"eligibility_verdict_ids"`
	BatchDigest           string `json:"batch_digest"`
	CauseID               string `json:"cause_id"`
	DataflowVersion       string `json:"dataflow_version"`
}

// EffectIntent is H's durable, authorised decision to perform one effect.
// Only an intent committed with the checkpoint may be dispatched.
// ApprovalDigest is nil exactly when ApprovalRequired is false.
type EffectIntent struct {
	Kind              string          `json:"kind"`
	IntentID          string          `json:"intent_id"`
	ProposalID        string          `json:"proposal_id"`
	BatchID           string          `json:"batch_id"`
	EffectType        string          `json:"effect_type"`
	ActionDigest      string          `json:"action_digest"`
	Capability        string          `json:"capability"`
	AuthorityDigest   string          `json:"authority_digest"`
	CauseID           string          `json:"cause_id"`
	CorrelationID     string          `json:"correlation_id"`
	IdempotencyKey    string          `json:"idempotency_key"`
	DestinationDigest string          `json:"destination_digest"`
	GoalID            string          `json:"goal_id"`
	ObligationID      string          `json:"obligation_id"`
	AdapterVersion    string          `json:"adapter_version"`
	AssessedRisk      string          `json:"assessed_risk"`
	ApprovalRequired  bool            `json:"approval_required"`
	ApprovalDigest    *string         `json:"approval_digest"`
	Preconditions     IDSet           `json:"preconditions"`
	Versions          VersionEnvelope `json:"versions"`
}

// ActionReceipt is the external witness of one attempt to perform an
// intent. It repeats the intent's binding fields so that a receipt can be
// checked against its intent without trusting the adapter (see
// CheckReceiptBinding).
type ActionReceipt struct {
	Kind              string    `json:"kind"`
	IntentID          string    `json:"intent_id"`
	ActionDigest      string    `json:"action_digest"`
	CommandDigest     string    `json:"command_digest"`
	InputRootDigest   string    `json:"input_root_digest"`
	PlatformDigest    string    `json:"platform_digest"`
	CauseID           string    `json:"cause_id"`
	CorrelationID     string    `json:"correlation_id"`
	Capability        string    `json:"capability"`
	AuthorityDigest   string    `json:"authority_digest"`
	DestinationDigest string    `json:"destination_digest"`
	GoalID            string    `json:"goal_id"`
	ObligationID      string    `json:"obligation_id"`
	AdapterVersion    string    `json:"adapter_version"`
	AssessedRisk      string    `json:"assessed_risk"`
	ApprovalRequired  bool      `json:"approval_required"`
	ApprovalDigest    *string   `json:"approval_digest"`
	AttemptID         string    `json:"attempt_id"`
	IdempotencyKey    string    `json:"idempotency_key"`
	OutputDigests     DigestSet `json:"output_digests"`
	Outcome           string    `json:"outcome"`
	TraceRef          *string   `json:"trace_ref"`
	RecordedAt        string    `json:"recorded_at"`
}

// CanonicalizationProfile names how a graph's envelope or content was
// canonicalised before it was digested.
type CanonicalizationProfile struct {
	Algorithm string `json:"algorithm"`
	Version   string `json:"version"`
	MediaType string `json:"media_type"`
}

// GraphEnvelope identifies one immutable revision of a typed graph.
// BaseRevisionID distinguishes absent (a root revision not saying so) from
// null (explicitly no base): see NullableID.
type GraphEnvelope struct {
	Kind                     string                  `json:"kind"`
	ProfileVersion           string                  `json:"profile_version"`
	GraphKind                string                  `json:"graph_kind"`
	GraphID                  string                  `json:"graph_id"`
	RevisionID               string                  `json:"revision_id"`
	BaseRevisionID           NullableID              `json:"base_revision_id,omitzero"`
	SchemaRef                string                  `json:"schema_ref"`
	SchemaDigest             string                  `json:"schema_digest"`
	RuleBundleDigest         *string                 `json:"rule_bundle_digest,omitempty"`
	ResolverDigest           *string                 `json:"resolver_digest,omitempty"`
	EnvironmentProfileDigest *string                 `json:"environment_profile_digest,omitempty"`
	EnvelopeCanonicalization CanonicalizationProfile `json:"envelope_canonicalization"`
	ContentCanonicalization  CanonicalizationProfile `json:"content_canonicalization"`
	ContentDigest            string                  `json:"content_digest"`
	SourceSnapshotDigest     string                  `json:"source_snapshot_digest"`
	ProvenanceRefs           IDSet                   `json:"provenance_refs"`
}

// GraphDelta moves a graph from one revision to the next.
type GraphDelta struct {
	Kind                 string `json:"kind"`
	DeltaID              string `json:"delta_id"`
	GraphID              string `json:"graph_id"`
	BaseRevisionID       string `json:"base_revision_id"`
	NewRevisionID        string `json:"new_revision_id"`
	AdditionsDigest      string `json:"additions_digest"`
	DeletionsDigest      string `json:"deletions_digest"`
	CausalParentDeltaIDs IDSet  `json:"causal_parent_delta_ids"`
	ProducerID           string `json:"producer_id"`
	IdempotencyKey       string `json:"idempotency_key"`
	LogicalTime          int64  `json:"logical_time"`
}

// ResolvedCompositionReceipt records that a production composition and its
// harness composition were resolved and compared.
type ResolvedCompositionReceipt struct {
	Kind                            string `json:"kind"`
	SourceSpecDigest                string `json:"source_spec_digest"`
	ResolverDigest                  string `json:"resolver_digest"`
	SchemaDigest                    string `json:"schema_digest"`
	RuleBundleDigest                string `json:"rule_bundle_digest"`
	ProductionProfileDigest         string `json:"production_profile_digest"`
	HarnessProfileDigest            string `json:"harness_profile_digest"`
	NormalizedProductionGraphDigest string `json:"normalized_production_graph_digest"`
	NormalizedHarnessGraphDigest    string `json:"normalized_harness_graph_digest"`
	SubstitutionManifestDigest      string `json:"substitution_manifest_digest"`
	ForbiddenDeltaCount             int64  `json:"forbidden_delta_count"`
	ProductionRootReachable         bool   `json:"production_root_reachable"`
	EquivalenceStatus               string `json:"equivalence_status"`
	IndependentVerifierDigest       string `json:"independent_verifier_digest"`
}
