package ground

// Atom is a ground atom: a non-empty JSON object in the decoded value model.
type Atom = map[string]any

// Literal is an atom with a polarity: positive evidence, or explicitly
// negative evidence (which is first-class, not the absence of positive).
type Literal struct {
	Negative bool
	Atom     Atom
}

// Pos and Neg build literals.
func Pos(a Atom) Literal { return Literal{Atom: a} }

// Neg builds an explicitly negative literal.
func Neg(a Atom) Literal { return Literal{Negative: true, Atom: a} }

// NotPositive is a default-negated atom: it holds when the atom has no
// positive support once Stratum (strictly below the rule's) is complete.
type NotPositive struct {
	Atom    Atom
	Stratum int64
}

// Rule is one ground rule of a bundle.
type Rule struct {
	ID          string
	Stratum     int64
	Head        Literal
	Required    []Literal
	NotPositive []NotPositive
}

// Spec describes a rule bundle in Go. Bundle turns it into the sealed
// LRuleBundle wire that Solve takes.
type Spec struct {
	RuleSetVersion     string
	DataflowVersion    string
	MaxRuleFirings     int64 // 1..1000
	MaxDerivationDepth int64 // 1..8
	Queries            []Atom
	Rules              []Rule
}

func (l Literal) draft() map[string]any {
	pol := positive
	if l.Negative {
		pol = negative
	}
	return map[string]any{"kind": "LLiteral", "polarity": pol, "atom": cloneValue(l.Atom)}
}

// Bundle returns the sealed LRuleBundle (digests computed, sets ordered),
// or the rejection Solve would give the same bundle.
func (s Spec) Bundle() (map[string]any, *Rejection) {
	queries := make([]any, len(s.Queries))
	for i, q := range s.Queries {
		queries[i] = cloneValue(q)
	}
	rules := make([]any, len(s.Rules))
	for i, r := range s.Rules {
		req := make([]any, len(r.Required))
		for j, l := range r.Required {
			req[j] = l.draft()
		}
		defs := make([]any, len(r.NotPositive))
		for j, d := range r.NotPositive {
			defs[j] = map[string]any{"kind": "LDefaultNotPositive", "atom": cloneValue(d.Atom), "referenced_stratum": d.Stratum}
		}
		rules[i] = map[string]any{
			"kind": "LRule", "rule_id": r.ID, "stratum": r.Stratum, "head": r.Head.draft(),
			"required_body": req, "default_not_positive_body": defs,
		}
	}
	return SealBundle(map[string]any{
		"kind":                     "LRuleBundle",
		"schema_version":           RuleSchemaVersion,
		"contract_version":         ContractVersion,
		"profile_id":               ProfileID,
		"rule_set_version":         s.RuleSetVersion,
		"dataflow_version":         s.DataflowVersion,
		"canonicalization_version": CanonicalizationVersion,
		"limits":                   map[string]any{"max_rule_firings": s.MaxRuleFirings, "max_derivation_depth": s.MaxDerivationDepth},
		"query_atoms":              queries,
		"rules":                    rules,
	})
}
