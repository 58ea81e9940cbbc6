package seam

import (
	"bytes"
	"crypto/sha256"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/protocol"
)

// Versions of the seam contract and the objects it reads and writes.
const (
	ContractVersion  = "flrh-lr-seam/1"
	ProfileID        = "flrh-lr-four-valued/1"
	ProfileSchema    = "flrh-lr-profile/1"
	QuerySchema      = "flrh-lr-query/1"
	ResultSchema     = "flrh-lr-result/1"
	Canonicalization = "flrh-cjson/1"
	NeitherPolicy    = "deny_unproven"
	ConflictPolicy   = "emit_conflicted"

	// LContractVersion names the L kernel whose fact keys the seam binds.
	LContractVersion = "flrh-l-kernel/1"

	// MaxQueriesCeiling and MaxFactRequirementsCeiling are the contract's
	// upper bounds for a binding profile's limits.
	MaxQueriesCeiling          = 1024
	MaxFactRequirementsCeiling = 64
)

// TruthState is the four-valued state of a ground atom.
type TruthState string

// The four states.
const (
	TrueOnly  TruthState = "TRUE_ONLY"
	FalseOnly TruthState = "FALSE_ONLY"
	Both      TruthState = "BOTH"
	Neither   TruthState = "NEITHER"
)

// stateOf derives the state from the presence of support.
func stateOf(positive, negative []string) TruthState {
	switch {
	case len(positive) > 0 && len(negative) > 0:
		return Both
	case len(positive) > 0:
		return TrueOnly
	case len(negative) > 0:
		return FalseOnly
	}
	return Neither
}

// Atom is a ground atom: a non-empty JSON object held as its canonical
// bytes, which are also its identity.
type Atom struct{ canon string }

// NewAtom canonicalizes JSON text that must be a non-empty object.
func NewAtom(jsonText []byte) (Atom, error) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return Atom{}, err
	}
	return AtomOf(v)
}

// AtomOf builds an atom from a Go value with a canonical JSON form (for
// example map[string]any{"predicate": "p", "subject": "x"}).
func AtomOf(v any) (Atom, error) {
	b, err := cjson.Encode(v)
	if err != nil {
		return Atom{}, err
	}
	if len(b) < 2 || b[0] != '{' || string(b) == "{}" {
		return Atom{}, &cjson.Error{Code: cjson.CodeUnsupportedType, Pointer: "/", Detail: "an atom is a non-empty JSON object", Offset: -1}
	}
	return Atom{canon: string(b)}, nil
}

// AtomOfFact is AtomOf(map[string]any{"predicate": predicate, "args":
// args}), written directly when every argument is a string, an int64 or
// nil and every string keeps the string rule: the bytes cjson would write,
// without the map and its encoding. Anything else goes through AtomOf,
// whose bytes and errors are the contract.
func AtomOfFact(predicate string, args []any) (Atom, error) {
	n := 32 + len(predicate)
	for _, a := range args {
		switch v := a.(type) {
		case string:
			if cjson.CheckString(v, "") != nil {
				return AtomOf(map[string]any{"predicate": predicate, "args": args})
			}
			n += len(v) + 3
		case int64:
			n += 21
		case nil:
			n += 5
		default:
			return AtomOf(map[string]any{"predicate": predicate, "args": args})
		}
	}
	if cjson.CheckString(predicate, "") != nil || args == nil {
		return AtomOf(map[string]any{"predicate": predicate, "args": args})
	}
	// Written on the stack when it fits, so that the string is the one
	// allocation.
	var buf [256]byte
	b := buf[:0]
	if n > len(buf) {
		b = make([]byte, 0, n)
	}
	b = append(b, `{"args":[`...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		switch v := a.(type) {
		case string:
			b = cjson.AppendString(b, v)
		case int64:
			b = cjson.AppendInt(b, v)
		default:
			b = append(b, "null"...)
		}
	}
	b = append(b, `],"predicate":`...)
	b = cjson.AppendString(b, predicate)
	return Atom{canon: string(append(b, '}'))}, nil
}

// CanonicalJSON returns the atom's canonical bytes.
func (a Atom) CanonicalJSON() []byte { return []byte(a.canon) }

// AppendCanonical appends the atom's canonical bytes to b, without the
// copy CanonicalJSON makes.
func (a Atom) AppendCanonical(b []byte) []byte { return append(b, a.canon...) }

// CanonicalSize is the length of the atom's canonical bytes.
func (a Atom) CanonicalSize() int { return len(a.canon) }

// IsZero reports whether a was never set.
func (a Atom) IsZero() bool { return a.canon == "" }

// FactKey is the L fact key of the atom: the digest of its M2FactKeyPreimage.
func (a Atom) FactKey() string {
	var k factKey
	a.factKeyInto(&k)
	return string(k[:])
}

// factKey is a fact key as FactKey spells it, "sha256:" and the hex
// digits, kept as an array until it is written.
type factKey [len("sha256:") + 2*sha256.Size]byte

// factKeyInto writes the atom's fact key into k.
func (a Atom) factKeyInto(k *factKey) {
	// The preimage is only digested: written into cjson's recycled buffer.
	sum := cjson.SumWritten(func(b []byte) []byte {
		b = append(b, `{"atom":`...)
		b = append(b, a.canon...)
		b = append(b, `,"contract_version":`...)
		b = cjson.AppendString(b, LContractVersion)
		return append(b, `,"kind":"M2FactKeyPreimage"}`...)
	})
	copy(k[:], "sha256:")
	cjson.HexSum((*[2 * sha256.Size]byte)(k[len("sha256:"):]), &sum)
}

// Polarity is the sign of a literal.
type Polarity string

// The two polarities.
const (
	Positive Polarity = "positive"
	Negative Polarity = "negative"
)

// Literal is an LLiteral: an atom under a polarity.
type Literal struct {
	Polarity Polarity
	Atom     Atom
}

func (l Literal) appendCanonical(b []byte) []byte {
	b = append(b, `{"atom":`...)
	b = append(b, l.Atom.canon...)
	b = append(b, `,"kind":"LLiteral","polarity":`...)
	b = cjson.AppendString(b, string(l.Polarity))
	return append(b, '}')
}

// FactState is one atom's entry in the L materialization: its positive and
// negative support derivation ids. The truth state follows from them.
type FactState struct {
	Atom     Atom
	Positive []string
	Negative []string
}

// State is the fact's four-valued state.
func (f FactState) State() TruthState { return stateOf(f.Positive, f.Negative) }

// Materialization is everything the seam reads from one complete L fixpoint
// result: the bound digests and versions, the declared query atoms of the
// rule bundle, and the four-valued state of every atom. An adapter from the
// logic engine's result fills it in; the seam never evaluates rules.
type Materialization struct {
	LogicalTime           int64
	FixpointDigest        string // l_fixpoint_digest
	MaterializationDigest string // l_materialization_digest
	RuleBundleDigest      string
	RuleSetVersion        string
	DataflowVersion       string
	QueryAtoms            []Atom // atoms the rule bundle declares queryable
	Facts                 []FactState
}

// BindingProfile is an LRBindingProfile: which rule set and dataflow the
// projection binds, which R sources carry proposals and verdicts, and the
// limits. ProfileDigest is the declared digest; [BindingProfile.Sealed]
// fills it in.
type BindingProfile struct {
	RuleSetVersion              string
	DataflowVersion             string
	ProposalSourceID            string
	VerdictSourceID             string
	MaxQueries                  int64
	MaxFactRequirementsPerQuery int64
	ProfileDigest               string
}

// Sealed returns b with ProfileDigest set to the digest of its preimage.
func (b BindingProfile) Sealed() BindingProfile {
	b.ProfileDigest = cjson.Digest(b.appendPreimage(nil))
	return b
}

func (b *BindingProfile) appendPreimage(out []byte) []byte {
	out = append(out, `{"canonicalization_version":`...)
	out = cjson.AppendString(out, Canonicalization)
	out = append(out, `,"conflict_policy":`...)
	out = cjson.AppendString(out, ConflictPolicy)
	out = append(out, `,"contract_version":`...)
	out = cjson.AppendString(out, ContractVersion)
	out = append(out, `,"dataflow_version":`...)
	out = cjson.AppendString(out, b.DataflowVersion)
	out = append(out, `,"kind":"LRProfilePreimage","limits":{"max_fact_requirements_per_query":`...)
	out = cjson.AppendInt(out, b.MaxFactRequirementsPerQuery)
	out = append(out, `,"max_queries":`...)
	out = cjson.AppendInt(out, b.MaxQueries)
	out = append(out, `},"neither_policy":`...)
	out = cjson.AppendString(out, NeitherPolicy)
	out = append(out, `,"profile_id":`...)
	out = cjson.AppendString(out, ProfileID)
	out = append(out, `,"proposal_source_id":`...)
	out = cjson.AppendString(out, b.ProposalSourceID)
	out = append(out, `,"rule_set_version":`...)
	out = cjson.AppendString(out, b.RuleSetVersion)
	out = append(out, `,"verdict_source_id":`...)
	out = cjson.AppendString(out, b.VerdictSourceID)
	return append(out, '}')
}

// FactRequirement (LRFactRequirement) binds one proposal precondition to a
// literal that must hold in the materialization.
type FactRequirement struct {
	PreconditionID string
	Literal        Literal
}

func (r *FactRequirement) appendCanonical(b []byte) []byte {
	b = append(b, `{"kind":"LRFactRequirement","literal":`...)
	b = r.Literal.appendCanonical(b)
	b = append(b, `,"precondition_id":`...)
	b = cjson.AppendString(b, r.PreconditionID)
	return append(b, '}')
}

// Query (LRProjectionQuery) asks for the eligibility of one proposal. Every
// precondition of the proposal is bound exactly once: either by a fact
// requirement or as a frontier precondition the seam does not evaluate.
// QueryDigest is the declared digest; [QueryBatch.Sealed] fills it in.
type Query struct {
	Proposal                protocol.EffectProposal
	FactRequirements        []FactRequirement
	FrontierPreconditionIDs []string
	QueryDigest             string
}

// QueryBatch (LRQueryBatch) is the frozen, explicit query mapping for one
// projection, bound to the exact inputs by their digests.
type QueryBatch struct {
	BindingProfileDigest string
	LFixpointDigest      string
	RuleBundleDigest     string
	RProfileDigest       string
	Queries              []Query
	QueryBatchDigest     string
}

// Sealed returns a copy of q with every query digest and the batch digest
// derived from the contents. Queries that are malformed keep their declared
// digests; Project will reject them.
func (q QueryBatch) Sealed() QueryBatch {
	q.Queries = slices.Clone(q.Queries)
	var canon [][]byte
	for i := range q.Queries {
		pq, rej := normalizeQuery(&q.Queries[i])
		if rej != nil {
			return q
		}
		q.Queries[i].QueryDigest = pq.digest
		canon = append(canon, pq.canonical())
	}
	slices.SortFunc(canon, bytes.Compare)
	q.QueryBatchDigest = batchDigest(&q, canon)
	return q
}

// Projection is an LRProjectionResult: one verdict per query and the R
// command that inserts each proposal and its verdict, or a nil command for
// an empty batch.
type Projection struct {
	LogicalTime            int64
	BindingProfileDigest   string
	LFixpointDigest        string
	LMaterializationDigest string
	QueryBatchDigest       string
	RProfileDigest         string
	Verdicts               []frontier.Value // canonical order
	Command                *frontier.ApplyDeltaBatch
	Digest                 string // projection_digest
}
