package ground

import "fmt"

// Rejection codes of flrh-l-kernel/1.
const (
	CodeMalformedMaterialization     = "MALFORMED_MATERIALIZATION"
	CodeMalformedRuleBundle          = "MALFORMED_RULE_BUNDLE"
	CodeMalformedFactDeltaInput      = "MALFORMED_FACT_DELTA_INPUT"
	CodeCanonicalizationViolation    = "CANONICALIZATION_VIOLATION"
	CodeUnsupportedContractVersion   = "UNSUPPORTED_CONTRACT_VERSION"
	CodeUnsupportedProfile           = "UNSUPPORTED_PROFILE"
	CodeUnsupportedMaterialization   = "UNSUPPORTED_MATERIALIZATION_SCHEMA"
	CodeUnsupportedRuleSchema        = "UNSUPPORTED_RULE_SCHEMA"
	CodeUnsupportedInputSchema       = "UNSUPPORTED_INPUT_SCHEMA"
	CodeUnsupportedCanonicalization  = "UNSUPPORTED_CANONICALIZATION"
	CodeRuleSetVersionMismatch       = "RULE_SET_VERSION_MISMATCH"
	CodeDataflowVersionMismatch      = "DATAFLOW_VERSION_MISMATCH"
	CodeRuleBundleMismatch           = "RULE_BUNDLE_MISMATCH"
	CodeLogicalTimeMismatch          = "LOGICAL_TIME_MISMATCH"
	CodeLogicalTimeRegression        = "LOGICAL_TIME_REGRESSION"
	CodeInvalidStratification        = "INVALID_STRATIFICATION"
	CodeOutsideV0NegativeRecursion   = "OUTSIDE_V0_NEGATIVE_RECURSION"
	CodeAmbiguousBatchDelta          = "AMBIGUOUS_BATCH_DELTA"
	CodeUnknownDerivation            = "UNKNOWN_DERIVATION"
	CodeDerivationIdentityConflict   = "DERIVATION_IDENTITY_CONFLICT"
	CodeDerivedSupportTarget         = "DERIVED_SUPPORT_TARGET"
	CodeProvenanceIntegrityViolation = "PROVENANCE_INTEGRITY_VIOLATION"
	CodeRuleBudgetExhausted          = "RULE_BUDGET_EXHAUSTED"
	CodeDerivationDepthExceeded      = "DERIVATION_DEPTH_EXCEEDED"
	CodeInvariantViolation           = "INVARIANT_VIOLATION"
)

// Kinds of rejection objects.
const (
	KindRejection           = "LRejection"
	KindPersistentRejection = "LPersistentLRejection"
)

// contextKeys is the closed vocabulary of a kernel rejection's context.
var contextKeys = []string{
	"expected", "actual", "derivation_id", "rule_id", "invariant",
	"limit", "observed", "source_stratum", "target_stratum", "support_content_digest",
}

// Rejection is a closed typed refusal: a code, the JSON pointer of what was
// refused (relative to the invocation's arguments, e.g.
// "/fact_delta_inputs/0/delta/logical_time"), the trusted logical time and
// rule bundle digest when they were already validated, and a small context.
// A rejection never carries partial results.
type Rejection struct {
	Kind             string // KindRejection or KindPersistentRejection
	Code             string
	Path             string
	LogicalTime      *int64
	RuleBundleDigest *string
	Context          map[string]any
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("ground: %s at %q", r.Code, r.Path)
}

// Wire returns the rejection's wire object (LRejection or
// LPersistentLRejection).
func (r *Rejection) Wire() map[string]any {
	schema, contract := ResultSchemaVersion, ContractVersion
	if r.Kind == KindPersistentRejection {
		schema, contract = PersistentResultSchema, PersistentContract
	}
	var lt, bd any
	if r.LogicalTime != nil {
		lt = *r.LogicalTime
	}
	if r.RuleBundleDigest != nil {
		bd = *r.RuleBundleDigest
	}
	ctx := map[string]any{}
	for k, v := range r.Context {
		ctx[k] = cloneValue(v)
	}
	return map[string]any{
		"kind":               r.Kind,
		"schema_version":     schema,
		"contract_version":   contract,
		"code":               r.Code,
		"path":               r.Path,
		"logical_time":       lt,
		"rule_bundle_digest": bd,
		"context":            ctx,
	}
}

// kernelError is the internal form of a rejection while the kernel unwinds.
type kernelError struct {
	code    string
	path    string
	context map[string]any
	// trustedDigest is set when the bundle digest was verified before the
	// failure was found (stratification is checked after the digest).
	trustedDigest *string
}

func (e *kernelError) Error() string { return e.code + " at " + e.path }

func reject(code, path string, kv ...any) *kernelError {
	ctx := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		ctx[kv[i].(string)] = kv[i+1]
	}
	return &kernelError{code: code, path: path, context: ctx}
}

// closeContext keeps only the closed context vocabulary and makes a private
// canonical copy, falling back to a fixed invariant if a value is outside
// the canonical domain.
func closeContext(ctx map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range contextKeys {
		if v, ok := ctx[k]; ok {
			out[k] = cloneValue(v)
		}
	}
	if _, err := canonical(out); err != nil {
		return map[string]any{"invariant": "closed_rejection_context"}
	}
	return out
}

func (e *kernelError) rejection(kind string, lt *int64, digest *string) *Rejection {
	if e.trustedDigest != nil {
		digest = e.trustedDigest
	}
	return &Rejection{
		Kind:             kind,
		Code:             e.code,
		Path:             e.path,
		LogicalTime:      lt,
		RuleBundleDigest: digest,
		Context:          closeContext(e.context),
	}
}

// invariantPanic marks an internal invariant breach; the public entry points
// recover it into a closed INVARIANT_VIOLATION rejection.
type invariantPanic struct{ invariant string }
