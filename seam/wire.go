package seam

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/logic/ground"
)

// This file is the wire face of the seam: project_lr over the five JSON
// objects of the reference API, validated in the reference's order.

// ProjectJSON is project_lr over wire JSON: an LFixpointResult, the
// LRuleBundle it was solved with, an RDataflowProfile, an LRBindingProfile
// and an LRQueryBatch. It returns the canonical LRProjectionResult (accepted
// true) or LRProjectionRejection. It never panics.
//
// The rule bundle is re-sealed by the ground engine and the L result's
// fixpoint and materialization digests are recomputed over their contents,
// so any edit to either is DIGEST_MISMATCH; the internal consistency of the
// materialization (supports against fact states, stratum digests) is the
// ground engine's to check when it produces or resumes one.
func ProjectJSON(lResult, ruleBundle, rProfile, bindingProfile, queryBatch []byte) (result []byte, accepted bool) {
	var trusted Rejection
	defer func() {
		if recover() != nil {
			r := reject(CodeInvariantViolation, "").invariant("closed_projection_failure", "")
			r.LogicalTime, r.LFixpointDigest, r.RProfileDigest, r.BindingProfileDigest = trusted.LogicalTime, trusted.LFixpointDigest, trusted.RProfileDigest, trusted.BindingProfileDigest
			result, accepted = r.AppendCanonical(nil), false
		}
	}()
	p, rej := projectJSON(lResult, ruleBundle, rProfile, bindingProfile, queryBatch, &trusted)
	if rej != nil {
		return rej.AppendCanonical(nil), false
	}
	return p.AppendCanonical(nil), true
}

func projectJSON(lText, bundleText, rText, bText, qText []byte, trusted *Rejection) (*Projection, *Rejection) {
	var docs [5]any
	for i, text := range [][]byte{lText, bundleText, rText, bText, qText} {
		v, err := cjson.Decode(text)
		if err != nil {
			r := reject(CodeCanonicalizationViolation, "/")
			var ce *cjson.Error
			if errors.As(err, &ce) {
				r.Path, r.Context.Invariant = ce.Pointer, string(ce.Code)
			}
			return nil, r
		}
		docs[i] = v
	}
	bundle, rej := parseBundle(docs[1])
	if rej != nil {
		return nil, rej
	}
	l, rej := parseLResult(docs[0], bundle)
	if rej != nil {
		return nil, rej
	}
	lt := l.LogicalTime
	r, frej := frontier.ParseProfile(docs[2])
	if frej != nil {
		rej := fromProfileRejection(frej)
		rej.LogicalTime, rej.LFixpointDigest = &lt, l.FixpointDigest
		return nil, rej
	}
	b, rej := parseBinding(docs[3])
	if rej != nil {
		rej.LogicalTime, rej.LFixpointDigest, rej.RProfileDigest = &lt, l.FixpointDigest, r.Digest()
		return nil, rej
	}
	// Binding semantics precede any look at the query batch.
	s := &projector{l: &l, r: &r, b: &b}
	if s.checkMaterialization() != nil || s.checkBinding() != nil {
		return Project(l, r, b, QueryBatch{}) // reports it with the trusted digests
	}
	q, rej := parseQueryBatch(docs[4])
	if rej != nil {
		rej.LogicalTime, rej.LFixpointDigest, rej.RProfileDigest, rej.BindingProfileDigest = &lt, l.FixpointDigest, r.Digest(), b.ProfileDigest
		return nil, rej
	}
	return Project(l, r, b, q)
}

// parseBundle re-seals the rule bundle with the ground engine and checks the
// declared digest.
func parseBundle(v any) (map[string]any, *Rejection) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, reject(CodeMalformedRuleBundle, "/rule_bundle")
	}
	sealed, grej := ground.SealBundle(m)
	if grej != nil {
		return nil, fromGround(grej, CodeMalformedRuleBundle)
	}
	declared, _ := m["rule_bundle_digest"].(string)
	if want, _ := sealed["rule_bundle_digest"].(string); declared != want {
		return nil, reject(CodeDigestMismatch, "/rule_bundle/rule_bundle_digest").expect(want, declared)
	}
	return sealed, nil
}

// parseLResult checks the L result's bindings and digests and builds the
// seam's view of it.
func parseLResult(v any, bundle map[string]any) (Materialization, *Rejection) {
	m, ok := v.(map[string]any)
	if !ok {
		return Materialization{}, reject(CodeMalformedLResult, "/l_result")
	}
	switch {
	case m["kind"] != "LFixpointResult":
		return Materialization{}, reject(CodeMalformedLResult, "/l_result/kind")
	case m["schema_version"] != "flrh-l-result/1":
		return Materialization{}, reject(CodeUnsupportedSchema, "/l_result/schema_version")
	case m["contract_version"] != LContractVersion:
		return Materialization{}, reject(CodeUnsupportedContractVersion, "/l_result/contract_version")
	}
	if t, ok := m["logical_time"].(int64); !ok || t < 0 {
		return Materialization{}, reject(CodeMalformedLResult, "/l_result/logical_time")
	}
	if m["rule_bundle_digest"] != bundle["rule_bundle_digest"] {
		return Materialization{}, reject(CodeDigestMismatch, "/l_result/rule_bundle_digest").expect(bundle["rule_bundle_digest"], m["rule_bundle_digest"])
	}
	next, ok := m["next_materialization"].(map[string]any)
	if !ok {
		return Materialization{}, reject(CodeMalformedLResult, "/l_result/next_materialization")
	}
	for _, d := range []struct {
		obj              map[string]any
		field, kind, key string
		path             string
	}{
		{next, "materialization_digest", "M2MaterializationPreimage", "materialization_without_materialization_digest", "/l_result/next_materialization/materialization_digest"},
		{m, "fixpoint_digest", "M2FixpointPreimage", "fixpoint_result_without_fixpoint_digest", "/l_result/fixpoint_digest"},
	} {
		without := make(map[string]any, len(d.obj))
		for k, x := range d.obj {
			if k != d.field {
				without[k] = x
			}
		}
		b, err := ground.Canonical(map[string]any{"kind": d.kind, "contract_version": LContractVersion, d.key: without})
		if err != nil {
			return Materialization{}, reject(CodeMalformedLResult, d.path)
		}
		want := cjson.Digest(b)
		if got, _ := d.obj[d.field].(string); got != want {
			return Materialization{}, reject(CodeDigestMismatch, d.path).expect(want, d.obj[d.field])
		}
	}
	l, err := FromGround(m, bundle)
	if err != nil {
		return Materialization{}, reject(CodeMalformedLResult, "/l_result/next_materialization")
	}
	if through, _ := next["through_logical_time"].(int64); through != l.LogicalTime {
		return Materialization{}, reject(CodeInvariantViolation, "/l_result/next_materialization/through_logical_time").expect(l.LogicalTime, next["through_logical_time"])
	}
	return l, nil
}

// fromGround maps a ground engine rejection onto the seam's closed codes.
func fromGround(g *ground.Rejection, fallback Code) *Rejection {
	code := fallback
	switch g.Code {
	case ground.CodeUnsupportedRuleSchema, ground.CodeUnsupportedMaterialization:
		code = CodeUnsupportedSchema
	case ground.CodeUnsupportedContractVersion:
		code = CodeUnsupportedContractVersion
	case ground.CodeUnsupportedProfile:
		code = CodeUnsupportedProfile
	case ground.CodeUnsupportedCanonicalization:
		code = CodeUnsupportedCanonicalization
	case ground.CodeCanonicalizationViolation:
		code = CodeCanonicalizationViolation
	}
	return reject(code, g.Path)
}

// fromProfileRejection maps an R profile rejection onto the seam's codes
// and paths.
func fromProfileRejection(f *frontier.Rejection) *Rejection {
	code := CodeMalformedRProfile
	switch f.Code {
	case frontier.CodeUnsupportedProfileSchema:
		code = CodeUnsupportedSchema
	case frontier.CodeUnsupportedContractVersion:
		code = CodeUnsupportedContractVersion
	case frontier.CodeUnsupportedProfile:
		code = CodeUnsupportedProfile
	case frontier.CodeUnsupportedCanonicalization:
		code = CodeUnsupportedCanonicalization
	case frontier.CodeProfileMismatch:
		code = CodeProfileMismatch
	}
	r := reject(code, "/r_profile"+strings.TrimPrefix(f.Path, "/profile"))
	r.Context.Expected, r.Context.Actual = f.Context.Expected, f.Context.Actual
	return r
}

type wobj map[string]any

func exactObj(v any, keys ...string) (wobj, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != len(keys) {
		return nil, false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, false
		}
	}
	return m, true
}

func (o wobj) str(k string) string { s, _ := o[k].(string); return s }

func (o wobj) strs(k string) ([]string, bool) {
	l, ok := o[k].([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(l))
	for i, x := range l {
		if out[i], ok = x.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// parseBinding reads the structure of an LRBindingProfile; Project checks
// its meaning.
func parseBinding(v any) (BindingProfile, *Rejection) {
	o, ok := exactObj(v, "kind", "schema_version", "contract_version", "profile_id", "rule_set_version",
		"dataflow_version", "canonicalization_version", "proposal_source_id", "verdict_source_id",
		"neither_policy", "conflict_policy", "limits", "profile_digest")
	if !ok {
		return BindingProfile{}, reject(CodeMalformedBindingProfile, "/binding_profile")
	}
	switch {
	case o["kind"] != "LRBindingProfile":
		return BindingProfile{}, reject(CodeMalformedBindingProfile, "/binding_profile/kind")
	case o["schema_version"] != ProfileSchema:
		return BindingProfile{}, reject(CodeUnsupportedSchema, "/binding_profile/schema_version")
	case o["contract_version"] != ContractVersion:
		return BindingProfile{}, reject(CodeUnsupportedContractVersion, "/binding_profile/contract_version")
	case o["profile_id"] != ProfileID:
		return BindingProfile{}, reject(CodeUnsupportedProfile, "/binding_profile/profile_id")
	case o["canonicalization_version"] != Canonicalization:
		return BindingProfile{}, reject(CodeUnsupportedCanonicalization, "/binding_profile/canonicalization_version")
	case o["neither_policy"] != NeitherPolicy || o["conflict_policy"] != ConflictPolicy:
		return BindingProfile{}, reject(CodeUnsupportedProfile, "/binding_profile")
	}
	lim, ok := exactObj(o["limits"], "max_queries", "max_fact_requirements_per_query")
	mq, ok1 := lim["max_queries"].(int64)
	mr, ok2 := lim["max_fact_requirements_per_query"].(int64)
	if !ok || !ok1 || !ok2 {
		return BindingProfile{}, reject(CodeMalformedBindingProfile, "/binding_profile/limits")
	}
	return BindingProfile{
		RuleSetVersion: o.str("rule_set_version"), DataflowVersion: o.str("dataflow_version"),
		ProposalSourceID: o.str("proposal_source_id"), VerdictSourceID: o.str("verdict_source_id"),
		MaxQueries: mq, MaxFactRequirementsPerQuery: mr, ProfileDigest: o.str("profile_digest"),
	}, nil
}

// parseQueryBatch reads the structure of an LRQueryBatch; Project checks
// its bindings, identities and limits.
func parseQueryBatch(v any) (QueryBatch, *Rejection) {
	o, ok := exactObj(v, "kind", "schema_version", "contract_version", "binding_profile_digest",
		"l_fixpoint_digest", "rule_bundle_digest", "r_profile_digest", "queries", "query_batch_digest")
	if !ok {
		return QueryBatch{}, reject(CodeMalformedQueryBatch, "/query_batch")
	}
	switch {
	case o["kind"] != "LRQueryBatch":
		return QueryBatch{}, reject(CodeMalformedQueryBatch, "/query_batch/kind")
	case o["schema_version"] != QuerySchema:
		return QueryBatch{}, reject(CodeUnsupportedSchema, "/query_batch/schema_version")
	case o["contract_version"] != ContractVersion:
		return QueryBatch{}, reject(CodeUnsupportedContractVersion, "/query_batch/contract_version")
	}
	raw, ok := o["queries"].([]any)
	if !ok {
		return QueryBatch{}, reject(CodeMalformedQueryBatch, "/query_batch/queries")
	}
	q := QueryBatch{
		BindingProfileDigest: o.str("binding_profile_digest"), LFixpointDigest: o.str("l_fixpoint_digest"),
		RuleBundleDigest: o.str("rule_bundle_digest"), RProfileDigest: o.str("r_profile_digest"),
		QueryBatchDigest: o.str("query_batch_digest"), Queries: make([]Query, len(raw)),
	}
	for i, x := range raw {
		qpath := "/query_batch/queries/" + strconv.Itoa(i)
		qo, ok := exactObj(x, "kind", "proposal", "fact_requirements", "frontier_precondition_ids", "query_digest")
		if !ok || qo["kind"] != "LRProjectionQuery" {
			return QueryBatch{}, reject(CodeMalformedQueryBatch, qpath)
		}
		val, rej := frontier.ParseValue(frontier.KindEffectProposal, qo["proposal"])
		if rej != nil {
			return QueryBatch{}, reject(CodeMalformedQueryBatch, qpath+"/proposal"+rej.Path)
		}
		prop, _ := val.Proposal()
		query := &q.Queries[i]
		query.Proposal, query.QueryDigest = prop, qo.str("query_digest")
		if query.FrontierPreconditionIDs, ok = qo.strs("frontier_precondition_ids"); !ok {
			return QueryBatch{}, reject(CodeMalformedQueryBatch, qpath+"/frontier_precondition_ids")
		}
		reqs, ok := qo["fact_requirements"].([]any)
		if !ok {
			return QueryBatch{}, reject(CodeMalformedQueryBatch, qpath+"/fact_requirements")
		}
		for k, rx := range reqs {
			rpath := qpath + "/fact_requirements/" + strconv.Itoa(k)
			ro, ok := exactObj(rx, "kind", "precondition_id", "literal")
			if !ok || ro["kind"] != "LRFactRequirement" {
				return QueryBatch{}, reject(CodeMalformedQueryBatch, rpath)
			}
			lo, ok := exactObj(ro["literal"], "kind", "polarity", "atom")
			if !ok || lo["kind"] != "LLiteral" {
				return QueryBatch{}, reject(CodeMalformedQueryBatch, rpath+"/literal")
			}
			atom, err := AtomOf(lo["atom"])
			if err != nil {
				return QueryBatch{}, reject(CodeMalformedQueryBatch, rpath+"/literal/atom")
			}
			query.FactRequirements = append(query.FactRequirements, FactRequirement{
				PreconditionID: ro.str("precondition_id"),
				Literal:        Literal{Polarity: Polarity(lo.str("polarity")), Atom: atom},
			})
		}
	}
	return q, nil
}

// MarshalJSON writes the canonical LRBindingProfile.
func (b BindingProfile) MarshalJSON() ([]byte, error) {
	out := append([]byte(nil), `{"canonicalization_version":`...)
	out = cjson.AppendString(out, Canonicalization)
	out = append(out, `,"conflict_policy":`...)
	out = cjson.AppendString(out, ConflictPolicy)
	out = append(out, `,"contract_version":`...)
	out = cjson.AppendString(out, ContractVersion)
	out = append(out, `,"dataflow_version":`...)
	out = cjson.AppendString(out, b.DataflowVersion)
	out = append(out, `,"kind":"LRBindingProfile","limits":{"max_fact_requirements_per_query":`...)
	out = cjson.AppendInt(out, b.MaxFactRequirementsPerQuery)
	out = append(out, `,"max_queries":`...)
	out = cjson.AppendInt(out, b.MaxQueries)
	out = append(out, `},"neither_policy":`...)
	out = cjson.AppendString(out, NeitherPolicy)
	out = append(out, `,"profile_digest":`...)
	out = cjson.AppendString(out, b.ProfileDigest)
	out = append(out, `,"profile_id":`...)
	out = cjson.AppendString(out, ProfileID)
	out = append(out, `,"proposal_source_id":`...)
	out = cjson.AppendString(out, b.ProposalSourceID)
	out = append(out, `,"rule_set_version":`...)
	out = cjson.AppendString(out, b.RuleSetVersion)
	out = append(out, `,"schema_version":`...)
	out = cjson.AppendString(out, ProfileSchema)
	out = append(out, `,"verdict_source_id":`...)
	out = cjson.AppendString(out, b.VerdictSourceID)
	return append(out, '}'), nil
}

// MarshalJSON writes the LRQueryBatch with every set in canonical order and
// the declared digests as they are (Sealed sets them). A query whose
// proposal is malformed cannot be written.
func (q QueryBatch) MarshalJSON() ([]byte, error) {
	var queries [][]byte
	for i := range q.Queries {
		pq, rej := normalizeQuery(&q.Queries[i])
		if rej != nil {
			return nil, rej
		}
		pq.digest = q.Queries[i].QueryDigest
		queries = append(queries, pq.canonical())
	}
	slices.SortFunc(queries, bytes.Compare)
	out := append([]byte(nil), `{"binding_profile_digest":`...)
	out = cjson.AppendString(out, q.BindingProfileDigest)
	out = append(out, `,"contract_version":`...)
	out = cjson.AppendString(out, ContractVersion)
	out = append(out, `,"kind":"LRQueryBatch","l_fixpoint_digest":`...)
	out = cjson.AppendString(out, q.LFixpointDigest)
	out = append(out, `,"queries":[`...)
	out = append(out, bytes.Join(queries, []byte{','})...)
	out = append(out, `],"query_batch_digest":`...)
	out = cjson.AppendString(out, q.QueryBatchDigest)
	out = append(out, `,"r_profile_digest":`...)
	out = cjson.AppendString(out, q.RProfileDigest)
	out = append(out, `,"rule_bundle_digest":`...)
	out = cjson.AppendString(out, q.RuleBundleDigest)
	out = append(out, `,"schema_version":`...)
	out = cjson.AppendString(out, QuerySchema)
	return append(out, '}'), nil
}
