package ground

// Versions and limits of the flrh-l-kernel/1 contract.
const (
	ContractVersion         = "flrh-l-kernel/1"
	ProfileID               = "flrh-l-ground-stratified/1"
	RuleSchemaVersion       = "flrh-l-rules/1"
	InputSchemaVersion      = "flrh-l-input/1"
	MaterializationSchema   = "flrh-l-materialization/1"
	ResultSchemaVersion     = "flrh-l-result/1"
	CanonicalizationVersion = "flrh-cjson/1"

	// MaxFactDeltaInputs is the number of raw inputs one invocation admits,
	// counted before exact duplicates collapse.
	MaxFactDeltaInputs = 10000
	// MaxRuleFiringsCeiling and MaxDerivationDepthCeiling bound what a
	// bundle may declare; the declared (smaller or equal) limits are the
	// ones enforced.
	MaxRuleFiringsCeiling     = 1000
	MaxDerivationDepthCeiling = 8

	maxQueryAtoms = 1024
	maxRules      = 256
	maxBodyItems  = 64
)

// Truth states of one atom.
const (
	Neither   = "NEITHER"
	TrueOnly  = "TRUE_ONLY"
	FalseOnly = "FALSE_ONLY"
	Both      = "BOTH"
)

// TruthState is the four-valued state of an atom with the given numbers of
// positive and negative supports.
func TruthState(positive, negative int) string {
	switch {
	case positive > 0 && negative > 0:
		return Both
	case positive > 0:
		return TrueOnly
	case negative > 0:
		return FalseOnly
	}
	return Neither
}

// DefaultNegationSucceeds reports whether "not p" holds for an atom p in the
// given state of its completed stratum: exactly when p has no positive
// support (NEITHER or FALSE_ONLY).
func DefaultNegationSucceeds(state string) bool {
	return state == Neither || state == FalseOnly
}

const (
	positive = "positive"
	negative = "negative"
)

// atom is a ground atom: its canonical bytes (its identity) and a private
// copy of its value for wires.
type atom struct {
	key string
	val any
}

type literal struct {
	polarity string
	atom     atom
}

func (l literal) wire() map[string]any {
	return map[string]any{"kind": "LLiteral", "polarity": l.polarity, "atom": l.atom.val}
}

type defaultNP struct {
	atom       atom
	referenced int64
}

func (d defaultNP) wire() map[string]any {
	return map[string]any{"kind": "LDefaultNotPositive", "atom": d.atom.val, "referenced_stratum": d.referenced}
}

type rule struct {
	id       string
	stratum  int64
	head     literal
	required []literal
	defaults []defaultNP
	digest   string
	bytes    []byte // canonical bytes of the rule wire, its sort key
}

func (r *rule) wire() map[string]any {
	req := make([]any, len(r.required))
	for i, l := range r.required {
		req[i] = l.wire()
	}
	defs := make([]any, len(r.defaults))
	for i, d := range r.defaults {
		defs[i] = d.wire()
	}
	return map[string]any{
		"kind":                      "LRule",
		"rule_id":                   r.id,
		"stratum":                   r.stratum,
		"head":                      r.head.wire(),
		"required_body":             req,
		"default_not_positive_body": defs,
		"rule_digest":               r.digest,
	}
}

type bundle struct {
	ruleSetVersion  string
	dataflowVersion string
	maxFirings      int64
	maxDepth        int64
	queries         []atom // sorted by canonical bytes
	rules           []*rule
	digest          string
}

type baseSupport struct {
	id             string
	contentDigest  string
	lit            literal
	provenance     any
	ruleSetVersion string
	dataflow       string
	bytes          []byte
}

func (s *baseSupport) wire() map[string]any {
	return map[string]any{
		"kind":                   "LBaseSupport",
		"derivation_id":          s.id,
		"support_content_digest": s.contentDigest,
		"literal":                s.lit.wire(),
		"provenance_delta":       s.provenance,
		"rule_set_version":       s.ruleSetVersion,
		"dataflow_version":       s.dataflow,
	}
}

func (s *baseSupport) key() []byte {
	if s.bytes == nil {
		s.bytes = mustCanonical(s.wire())
	}
	return s.bytes
}

type absenceWitness struct {
	factKey         string
	atom            atom
	referenced      int64
	completedDigest string
	digest          string
}

func (w absenceWitness) wire() map[string]any {
	return map[string]any{
		"kind":                     "LAbsenceWitness",
		"fact_key":                 w.factKey,
		"atom":                     w.atom.val,
		"referenced_stratum":       w.referenced,
		"completed_stratum_digest": w.completedDigest,
		"witness_digest":           w.digest,
	}
}

type derivedSupport struct {
	id             string
	contentDigest  string
	lit            literal
	ruleID         string
	ruleDigest     string
	premiseKeys    []string
	witnesses      []absenceWitness
	ruleSetVersion string
	dataflow       string
	bytes          []byte
}

func (s *derivedSupport) wire() map[string]any {
	keys := make([]any, len(s.premiseKeys))
	for i, k := range s.premiseKeys {
		keys[i] = k
	}
	ws := make([]any, len(s.witnesses))
	for i, w := range s.witnesses {
		ws[i] = w.wire()
	}
	return map[string]any{
		"kind":                      "LDerivedSupport",
		"derivation_id":             s.id,
		"support_content_digest":    s.contentDigest,
		"literal":                   s.lit.wire(),
		"rule_id":                   s.ruleID,
		"rule_digest":               s.ruleDigest,
		"premise_literal_keys":      keys,
		"default_absence_witnesses": ws,
		"rule_set_version":          s.ruleSetVersion,
		"dataflow_version":          s.dataflow,
	}
}

func (s *derivedSupport) key() []byte {
	if s.bytes == nil {
		s.bytes = mustCanonical(s.wire())
	}
	return s.bytes
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// keys memoizes the fact and literal keys of one invocation: each is a
// SHA-256 over a small preimage and the worklist asks for them repeatedly.
type keys struct {
	fact    map[string]string
	literal map[string]string
}

func newKeys() *keys {
	return &keys{fact: map[string]string{}, literal: map[string]string{}}
}

func (k *keys) factKey(a atom) string {
	if d, ok := k.fact[a.key]; ok {
		return d
	}
	d := digestOf(map[string]any{
		"kind":             "M2FactKeyPreimage",
		"contract_version": ContractVersion,
		"atom":             a.val,
	})
	k.fact[a.key] = d
	return d
}

func (k *keys) literalKey(l literal) string {
	memo := l.polarity + "\x00" + l.atom.key
	if d, ok := k.literal[memo]; ok {
		return d
	}
	d := digestOf(map[string]any{
		"kind":             "M2LiteralKeyPreimage",
		"contract_version": ContractVersion,
		"literal":          l.wire(),
	})
	k.literal[memo] = d
	return d
}

func (k *keys) absenceWitness(a atom, stratum int64, completed string) absenceWitness {
	fk := k.factKey(a)
	return absenceWitness{
		factKey:         fk,
		atom:            a,
		referenced:      stratum,
		completedDigest: completed,
		digest: digestOf(map[string]any{
			"kind":                     "M2AbsenceWitnessPreimage",
			"contract_version":         ContractVersion,
			"fact_key":                 fk,
			"atom":                     a.val,
			"referenced_stratum":       stratum,
			"completed_stratum_digest": completed,
		}),
	}
}

// derivedSupportFor builds the support one satisfied ground rule gives its
// head: its identity is the digest of its content.
func (k *keys) derivedSupportFor(r *rule, witnesses []absenceWitness, b *bundle) *derivedSupport {
	premise := make([]string, len(r.required))
	for i, l := range r.required {
		premise[i] = k.literalKey(l)
	}
	sortStrings(premise)
	ws := append([]absenceWitness(nil), witnesses...)
	sortByKey(ws, func(w absenceWitness) []byte { return mustCanonical(w.wire()) })
	wd := make([]string, len(ws))
	for i, w := range ws {
		wd[i] = w.digest
	}
	h := hexOf(map[string]any{
		"kind":                         "M2DerivedSupportContentPreimage",
		"contract_version":             ContractVersion,
		"profile_id":                   ProfileID,
		"literal":                      r.head.wire(),
		"rule_id":                      r.id,
		"rule_digest":                  r.digest,
		"ordered_premise_literal_keys": stringsToAny(premise),
		"ordered_default_absence_witness_digests": stringsToAny(wd),
		"rule_set_version":                        b.ruleSetVersion,
		"dataflow_version":                        b.dataflowVersion,
	})
	return &derivedSupport{
		id:             "derivation:" + h,
		contentDigest:  "sha256:" + h,
		lit:            r.head,
		ruleID:         r.id,
		ruleDigest:     r.digest,
		premiseKeys:    premise,
		witnesses:      ws,
		ruleSetVersion: b.ruleSetVersion,
		dataflow:       b.dataflowVersion,
	}
}

func baseSupportContentDigest(l literal, provenance any, rsv, dfv string) string {
	return digestOf(map[string]any{
		"kind":             "M2BaseSupportContentPreimage",
		"contract_version": ContractVersion,
		"profile_id":       ProfileID,
		"literal":          l.wire(),
		"provenance_delta": provenance,
		"rule_set_version": rsv,
		"dataflow_version": dfv,
	})
}
