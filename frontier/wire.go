package frontier

import (
	"bytes"
	"slices"
	"strconv"

	"flrh.dev/flrh/cjson"
)

// This file is the wire face of the kernel: step_r over JSON text, with the
// reference's validation order, so that every malformed, mismatched or
// tampered input yields the same typed rejection the reference gives.

// StepJSON runs step_r on wire JSON: an RReactiveState (or null / empty for
// the initial state), an RDataflowProfile and an RCommand. It returns the
// canonical bytes of the RTransition (accepted true) or of the RRejection.
// It never panics on any input.
func StepJSON(priorState, profile, command []byte) (result []byte, accepted bool) {
	var trusted string
	defer func() {
		if recover() != nil {
			r := reject(CodeInvariantViolation, "")
			r.Context.Reason = "closed kernel failure"
			r.ProfileDigest = trusted
			result, accepted = r.AppendCanonical(nil), false
		}
	}()
	t, rej := stepJSON(priorState, profile, command, &trusted)
	if rej != nil {
		rej.ProfileDigest = trusted
		return rej.AppendCanonical(nil), false
	}
	return t.AppendCanonical(nil), true
}

func stepJSON(priorText, profileText, commandText []byte, trusted *string) (*Transition, *Rejection) {
	if len(bytes.TrimSpace(priorText)) == 0 {
		priorText = []byte("null")
	}
	var docs [3]any
	for i, text := range [][]byte{profileText, priorText, commandText} {
		v, err := cjson.Decode(text)
		if err != nil {
			r := reject(CodeCanonicalizationViolation, "")
			r.Context.Reason = "canonical JSON domain"
			return nil, r
		}
		docs[i] = v
	}
	p, rej := ParseProfile(docs[0])
	if rej != nil {
		return nil, rej
	}
	*trusted = p.digest
	var prior *State
	if docs[1] != nil {
		if prior, rej = ParseState(docs[1], p); rej != nil {
			return nil, rej
		}
	} else {
		prior = InitialState(p)
	}
	cmd, rej := ParseCommand(docs[2], p, prior)
	if rej != nil {
		return nil, rej
	}
	return Step(prior, p, cmd)
}

// obj is a decoded JSON object with helpers that validate as they read.
type obj map[string]any

// exact reports whether v is an object with exactly the given keys.
func exact(v any, keys ...string) (obj, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != len(keys) {
		return nil, false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, false
		}
	}
	return obj(m), true
}

func (o obj) str(k string) (string, bool) {
	s, ok := o[k].(string)
	return s, ok
}

func (o obj) is(k, want string) bool { s, ok := o.str(k); return ok && s == want }

// time reads a logical time: an integer in [0, 2^63-1].
func (o obj) time(k string) (int64, bool) {
	n, ok := o[k].(int64)
	return n, ok && n >= 0
}

func (o obj) strings(k string) ([]string, bool) {
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

// ParseProfile validates a decoded RDataflowProfile.
func ParseProfile(v any) (Profile, *Rejection) {
	bad := func(path string) (Profile, *Rejection) { return Profile{}, reject(CodeMalformedDataflowProfile, path) }
	o, ok := exact(v, "kind", "schema_version", "contract_version", "profile_id", "dataflow_version",
		"canonicalization_version", "source_ids", "late_event_policy", "overflow_policy", "limits", "profile_digest")
	if !ok {
		return bad("/profile")
	}
	switch {
	case !o.is("kind", "RDataflowProfile"):
		return bad("/profile/kind")
	case !o.is("schema_version", ProfileSchema):
		return Profile{}, reject(CodeUnsupportedProfileSchema, "/profile/schema_version")
	case !o.is("contract_version", ContractVersion):
		return Profile{}, reject(CodeUnsupportedContractVersion, "/profile/contract_version")
	case !o.is("profile_id", ProfileID):
		return Profile{}, reject(CodeUnsupportedProfile, "/profile/profile_id")
	case !o.is("canonicalization_version", Canonicalization):
		return Profile{}, reject(CodeUnsupportedCanonicalization, "/profile/canonicalization_version")
	}
	dataflow, ok := o.str("dataflow_version")
	if !ok || !cjson.ValidVersion(dataflow) {
		return bad("/profile/dataflow_version")
	}
	sources, ok := o.strings("source_ids")
	if sorted, ok2 := sortedIDSet(sources); !ok || !ok2 || len(sources) < 1 || len(sources) > maxSourcesPerFlow || !slices.Equal(sorted, sources) {
		return bad("/profile/source_ids")
	}
	if !o.is("late_event_policy", LateEventPolicy) {
		return Profile{}, reject(CodeUnsupportedProfile, "/profile/late_event_policy")
	}
	if !o.is("overflow_policy", OverflowPolicy) {
		return Profile{}, reject(CodeUnsupportedProfile, "/profile/overflow_policy")
	}
	lo, ok := exact(o["limits"], "max_deltas_per_command", "max_active_values", "max_open_epochs",
		"max_ready_batches", "max_demand_per_command", "max_outstanding_demand")
	if !ok {
		return bad("/profile/limits")
	}
	var l Limits
	for _, f := range []struct {
		name string
		dst  *int64
	}{
		{"max_deltas_per_command", &l.MaxDeltasPerCommand}, {"max_active_values", &l.MaxActiveValues},
		{"max_open_epochs", &l.MaxOpenEpochs}, {"max_ready_batches", &l.MaxReadyBatches},
		{"max_demand_per_command", &l.MaxDemandPerCommand}, {"max_outstanding_demand", &l.MaxOutstandingDemand},
	} {
		n, ok := lo[f.name].(int64)
		if !ok {
			return bad("/profile/limits/" + f.name)
		}
		*f.dst = n
	}
	p, rej := NewProfile(dataflow, sources, l)
	if rej != nil {
		return Profile{}, rej
	}
	declared, ok := o.str("profile_digest")
	if !ok || !validDigest(declared) {
		return bad("/profile/profile_digest")
	}
	if declared != p.digest {
		return Profile{}, reject(CodeProfileMismatch, "/profile/profile_digest").expect(p.digest, declared)
	}
	return p, nil
}

// parseValue validates a decoded protocol value of the given kind. Errors
// use code and paths under path.
func parseValue(v any, kind string, path string) (Value, *Rejection) {
	switch kind {
	case string(KindEffectProposal):
		o, ok := exact(v, "kind", "proposal_id", "effect_type", "action_digest", "cause_id", "correlation_id",
			"proposal_dedup_key", "destination_digest", "goal_id", "obligation_id", "declared_risk_hint",
			"preconditions", "versions")
		if !ok {
			return Value{}, reject(CodeMalformedValueDelta, path)
		}
		if !o.is("kind", "EffectProposal") {
			return Value{}, reject(CodeMalformedValueDelta, path+"/kind")
		}
		var p EffectProposal
		p.Kind = "EffectProposal"
		for _, f := range []struct {
			name string
			dst  *string
		}{
			{"proposal_id", &p.ProposalID}, {"effect_type", &p.EffectType}, {"action_digest", &p.ActionDigest},
			{"cause_id", &p.CauseID}, {"correlation_id", &p.CorrelationID}, {"proposal_dedup_key", &p.ProposalDedupKey},
			{"destination_digest", &p.DestinationDigest}, {"goal_id", &p.GoalID}, {"obligation_id", &p.ObligationID},
		} {
			if *f.dst, ok = o.str(f.name); !ok {
				return Value{}, reject(CodeMalformedValueDelta, path)
			}
		}
		if p.DeclaredRiskHint, ok = o.str("declared_risk_hint"); !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/declared_risk_hint")
		}
		if p.Preconditions, ok = o.strings("preconditions"); !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/preconditions")
		}
		vo, ok := exact(o["versions"], "workflow", "state_schema", "event_schema", "graph_schema", "rule_set",
			"dataflow", "canonicalization", "tool", "model", "oracle", "gate", "resolver", "composition_profile")
		if !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/versions")
		}
		ver := &p.Versions
		for _, f := range []struct {
			name string
			dst  *string
		}{
			{"workflow", &ver.Workflow}, {"state_schema", &ver.StateSchema}, {"event_schema", &ver.EventSchema},
			{"graph_schema", &ver.GraphSchema}, {"rule_set", &ver.RuleSet}, {"dataflow", &ver.Dataflow},
			{"canonicalization", &ver.Canonicalization}, {"tool", &ver.Tool}, {"model", &ver.Model},
			{"oracle", &ver.Oracle}, {"gate", &ver.Gate}, {"resolver", &ver.Resolver},
			{"composition_profile", &ver.CompositionProfile},
		} {
			if *f.dst, ok = vo.str(f.name); !ok {
				return Value{}, reject(CodeMalformedValueDelta, path+"/versions")
			}
		}
		return newProposalValue(p, path)
	case string(KindEligibilityVerdict):
		o, ok := exact(v, "kind", "verdict_id", "proposal_id", "status", "support_derivation_ids", "cause_id", "rule_set_version")
		if !ok {
			return Value{}, reject(CodeMalformedValueDelta, path)
		}
		if !o.is("kind", "EligibilityVerdict") {
			return Value{}, reject(CodeMalformedValueDelta, path+"/kind")
		}
		e := EligibilityVerdict{Kind: "EligibilityVerdict"}
		var ok1, ok2, ok3 bool
		e.VerdictID, ok1 = o.str("verdict_id")
		e.ProposalID, ok2 = o.str("proposal_id")
		e.CauseID, ok3 = o.str("cause_id")
		if !ok1 || !ok2 || !ok3 {
			return Value{}, reject(CodeMalformedValueDelta, path)
		}
		if e.Status, ok = o.str("status"); !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/status")
		}
		if e.SupportDerivationIDs, ok = o.strings("support_derivation_ids"); !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/support_derivation_ids")
		}
		if e.RuleSetVersion, ok = o.str("rule_set_version"); !ok {
			return Value{}, reject(CodeMalformedValueDelta, path+"/rule_set_version")
		}
		return newVerdictValue(e, path)
	}
	return Value{}, reject(CodeMalformedValueDelta, path)
}

// asState turns a value-level rejection found inside a state into
// MALFORMED_REACTIVE_STATE, as the contract asks.
func asState(r *Rejection) *Rejection {
	if r.Code == CodeMalformedValueDelta {
		r.Code = CodeMalformedReactiveState
	}
	return r
}

// ParseCommand validates a decoded RCommand against the profile and the
// prior state (deltas are checked against the source watermarks as they are
// read, in the caller's order).
func ParseCommand(v any, p Profile, prior *State) (Command, *Rejection) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, reject(CodeMalformedCommand, "/command")
	}
	o := obj(m)
	if !o.is("schema_version", CommandSchema) {
		return nil, reject(CodeUnsupportedCommandSchema, "/command/schema_version")
	}
	if !o.is("profile_digest", p.digest) {
		return nil, reject(CodeProfileMismatch, "/command/profile_digest")
	}
	if !o.is("dataflow_version", p.dataflow) {
		return nil, reject(CodeDataflowVersionMismatch, "/command/dataflow_version")
	}
	kind, _ := o.str("kind")
	switch kind {
	case "RApplyDeltaBatch":
		if _, ok := exact(v, "kind", "schema_version", "profile_digest", "dataflow_version", "deltas"); !ok {
			return nil, reject(CodeMalformedCommand, "/command")
		}
		raw, ok := o["deltas"].([]any)
		if !ok || len(raw) == 0 {
			return nil, reject(CodeMalformedCommand, "/command/deltas")
		}
		if int64(len(raw)) > p.limits.MaxDeltasPerCommand {
			return nil, reject(CodeInputLimitExceeded, "/command/deltas").limit(p.limits.MaxDeltasPerCommand, int64(len(raw)))
		}
		c := ApplyDeltaBatch{ProfileDigest: p.digest, DataflowVersion: p.dataflow, Deltas: make([]ValueDelta, len(raw))}
		for i, x := range raw {
			d, rej := parseDelta(x, &p, prior, deltaPath(i, ""))
			if rej != nil {
				return nil, rej
			}
			c.Deltas[i] = d
		}
		return c, nil
	case "RAdvanceFrontier":
		if _, ok := exact(v, "kind", "schema_version", "profile_digest", "dataflow_version", "source_id", "low_watermark"); !ok {
			return nil, reject(CodeMalformedCommand, "/command")
		}
		src, _ := o.str("source_id")
		if p.sourceIndex(src) < 0 {
			r := reject(CodeUnknownFrontierSource, "/command/source_id")
			if cjson.ValidID(src) {
				r.Context.SourceID = src
			}
			return nil, r
		}
		w, ok := o.time("low_watermark")
		if !ok {
			return nil, reject(CodeMalformedCommand, "/command/low_watermark")
		}
		return AdvanceFrontier{ProfileDigest: p.digest, DataflowVersion: p.dataflow, SourceID: src, LowWatermark: w}, nil
	case "RGrantDemand":
		if _, ok := exact(v, "kind", "schema_version", "profile_digest", "dataflow_version", "batches"); !ok {
			return nil, reject(CodeMalformedCommand, "/command")
		}
		n, ok := o.time("batches")
		if !ok || n < 1 {
			return nil, reject(CodeMalformedCommand, "/command/batches")
		}
		return GrantDemand{ProfileDigest: p.digest, DataflowVersion: p.dataflow, Batches: n}, nil
	}
	return nil, reject(CodeMalformedCommand, "/command/kind")
}

func parseDelta(v any, p *Profile, prior *State, path string) (ValueDelta, *Rejection) {
	bad := func(sub string) (ValueDelta, *Rejection) {
		return ValueDelta{}, reject(CodeMalformedValueDelta, path+sub)
	}
	o, ok := exact(v, "kind", "schema_version", "delivery_id", "source_id", "logical_time", "diff",
		"dataflow_version", "value_kind", "value_digest", "value")
	if !ok {
		return bad("")
	}
	if !o.is("kind", "RValueDelta") {
		return bad("/kind")
	}
	if !o.is("schema_version", ValueDeltaSchema) {
		return ValueDelta{}, reject(CodeUnsupportedValueDeltaSchema, path+"/schema_version")
	}
	src, _ := o.str("source_id")
	si := p.sourceIndex(src)
	if si < 0 {
		r := reject(CodeUnknownFrontierSource, path+"/source_id")
		if cjson.ValidID(src) {
			r.Context.SourceID = src
		}
		return ValueDelta{}, r
	}
	at, ok := o.time("logical_time")
	if !ok {
		return bad("/logical_time")
	}
	diff, ok := o["diff"].(int64)
	if !ok || (diff != 1 && diff != -1) {
		return bad("/diff")
	}
	if !o.is("dataflow_version", p.dataflow) {
		return ValueDelta{}, reject(CodeDataflowVersionMismatch, path+"/dataflow_version")
	}
	kind, _ := o.str("value_kind")
	if kind != string(KindEffectProposal) && kind != string(KindEligibilityVerdict) {
		return bad("/value_kind")
	}
	declaredValue, _ := o.str("value_digest")
	if !validDigest(declaredValue) {
		return bad("/value_digest")
	}
	declaredDelivery, _ := o.str("delivery_id")
	if !cjson.ValidID(declaredDelivery) {
		return bad("/delivery_id")
	}
	val, rej := parseValue(o["value"], kind, path+"/value")
	if rej != nil {
		return ValueDelta{}, rej
	}
	if val.kind == KindEffectProposal && val.proposal.Versions.Dataflow != p.dataflow {
		return ValueDelta{}, reject(CodeDataflowVersionMismatch, path+"/value/versions/dataflow")
	}
	if declaredValue != val.digest {
		return ValueDelta{}, reject(CodeValueIdentityConflict, path+"/value_digest").expect(val.digest, declaredValue).at(at)
	}
	d, rej := NewValueDelta(src, at, int(diff), p.dataflow, val)
	if rej != nil {
		return ValueDelta{}, rej
	}
	if declaredDelivery != d.deliveryID {
		return ValueDelta{}, reject(CodeValueIdentityConflict, path+"/delivery_id").expect(d.deliveryID, declaredDelivery).at(at)
	}
	if prior.known[si] && at < prior.marks[si] {
		r := reject(CodeLateDelta, path+"/logical_time").at(at)
		r.Context.SourceID = src
		return ValueDelta{}, r
	}
	return d, nil
}

// ParseState validates a decoded RReactiveState against the profile:
// every identity, digest, ordering, bound and relation the contract states.
func ParseState(v any, p Profile) (*State, *Rejection) {
	bad := func(path string) (*State, *Rejection) { return nil, reject(CodeMalformedReactiveState, path) }
	o, ok := exact(v, "kind", "schema_version", "contract_version", "profile_id", "profile_digest", "dataflow_version",
		"canonicalization_version", "source_frontiers", "global_low_watermark", "outstanding_demand",
		"open_epochs", "ready_batches", "state_digest")
	if !ok {
		return bad("/prior_state")
	}
	switch {
	case !o.is("kind", "RReactiveState"):
		return bad("/prior_state/kind")
	case !o.is("schema_version", StateSchema):
		return nil, reject(CodeUnsupportedStateSchema, "/prior_state/schema_version")
	case !o.is("contract_version", ContractVersion):
		return nil, reject(CodeUnsupportedContractVersion, "/prior_state/contract_version")
	case !o.is("profile_id", ProfileID):
		return nil, reject(CodeUnsupportedProfile, "/prior_state/profile_id")
	case !o.is("canonicalization_version", Canonicalization):
		return nil, reject(CodeUnsupportedCanonicalization, "/prior_state/canonicalization_version")
	case !o.is("profile_digest", p.digest):
		return nil, reject(CodeProfileMismatch, "/prior_state/profile_digest")
	case !o.is("dataflow_version", p.dataflow):
		return nil, reject(CodeDataflowVersionMismatch, "/prior_state/dataflow_version")
	}
	s := &State{profileDigest: p.digest, dataflow: p.dataflow, sources: p.sources,
		marks: make([]int64, len(p.sources)), known: make([]bool, len(p.sources))}
	frontiers, ok := o["source_frontiers"].([]any)
	if !ok {
		return bad("/prior_state/source_frontiers")
	}
	seen := make([]bool, len(p.sources))
	for i, f := range frontiers {
		path := "/prior_state/source_frontiers/" + strconv.Itoa(i)
		fo, ok := exact(f, "kind", "source_id", "low_watermark")
		if !ok {
			return bad(path)
		}
		src, _ := fo.str("source_id")
		w, isTime := fo.time("low_watermark")
		if !fo.is("kind", "RSourceFrontier") || !cjson.ValidID(src) || (fo["low_watermark"] != nil && !isTime) {
			return bad(path)
		}
		si := p.sourceIndex(src)
		if si < 0 || seen[si] {
			return bad("/prior_state/source_frontiers")
		}
		seen[si] = true
		s.marks[si], s.known[si] = w, fo["low_watermark"] != nil
	}
	if len(frontiers) != len(p.sources) {
		return bad("/prior_state/source_frontiers")
	}
	if want := appendSourceFrontiers(nil, s.sources, s.marks, s.known); !bytes.Equal(want, mustCanon(o["source_frontiers"])) {
		return bad("/prior_state/source_frontiers")
	}
	low, lowOK := s.GlobalLowWatermark()
	if g, isTime := o.time("global_low_watermark"); (o["global_low_watermark"] == nil) == lowOK || (lowOK && (!isTime || g != low)) {
		return bad("/prior_state/global_low_watermark")
	}
	demand, ok := o.time("outstanding_demand")
	if !ok || demand > p.limits.MaxOutstandingDemand {
		return bad("/prior_state/outstanding_demand")
	}
	s.demand = demand
	rawEpochs, ok1 := o["open_epochs"].([]any)
	rawReady, ok2 := o["ready_batches"].([]any)
	if !ok1 || !ok2 {
		return bad("/prior_state")
	}
	deliveries := map[string]bool{}
	for ei, e := range rawEpochs {
		path := "/prior_state/open_epochs/" + strconv.Itoa(ei)
		eo, ok := exact(e, "kind", "logical_time", "values")
		if !ok {
			return bad(path)
		}
		t, isTime := eo.time("logical_time")
		vals, isList := eo["values"].([]any)
		if !eo.is("kind", "ROpenEpoch") || !isTime || !isList || len(vals) == 0 || (lowOK && t < low) {
			return bad(path)
		}
		ep := &epoch{time: t, values: make([]*storedValue, len(vals))}
		for vi, x := range vals {
			vpath := path + "/values/" + strconv.Itoa(vi)
			so, ok := exact(x, "kind", "delivery_id", "source_id", "logical_time", "value_kind", "value_digest", "value")
			if !ok {
				return bad(vpath)
			}
			st, _ := so.time("logical_time")
			if !so.is("kind", "RStoredValue") || so["logical_time"] != any(t) || st != t {
				return bad(vpath)
			}
			src, _ := so.str("source_id")
			if p.sourceIndex(src) < 0 {
				return nil, reject(CodeUnknownFrontierSource, vpath+"/source_id")
			}
			kind, _ := so.str("value_kind")
			val, rej := parseValue(so["value"], kind, vpath+"/value")
			if rej != nil {
				return nil, asState(rej)
			}
			if val.kind == KindEffectProposal && val.proposal.Versions.Dataflow != p.dataflow {
				return nil, reject(CodeDataflowVersionMismatch, vpath+"/value/versions/dataflow")
			}
			sv := &storedValue{sourceID: src, logicalTime: t, value: val,
				deliveryID: DeliveryID(src, t, p.dataflow, val.kind, val.digest)}
			sv.encode(nil)
			if !bytes.Equal(sv.appendCanonical(nil), mustCanon(x)) {
				return bad(vpath)
			}
			if deliveries[sv.deliveryID] {
				return bad("/prior_state/open_epochs")
			}
			deliveries[sv.deliveryID] = true
			ep.values[vi] = sv
		}
		if !slices.IsSortedFunc(ep.values, func(a, b *storedValue) int { return compareCanonString(a.deliveryID, b.deliveryID) }) {
			return bad(path + "/values")
		}
		if n := len(s.epochs); n > 0 && s.epochs[n-1].time >= t {
			return bad("/prior_state/open_epochs")
		}
		s.epochs = append(s.epochs, ep.seal())
	}
	for ri, x := range rawReady {
		b, rej := parsePublished(x, &p, "/prior_state/ready_batches/"+strconv.Itoa(ri))
		if rej != nil {
			return nil, rej
		}
		if n := len(s.ready); n > 0 && s.ready[n-1].batch.LogicalTime >= b.batch.LogicalTime {
			return bad("/prior_state/ready_batches")
		}
		if !lowOK || b.batch.LowWatermark > low {
			return bad("/prior_state/ready_batches")
		}
		s.ready = append(s.ready, b)
	}
	if int64(len(s.epochs)) > p.limits.MaxOpenEpochs || int64(s.ActiveValueCount()) > p.limits.MaxActiveValues ||
		int64(len(s.ready)) > p.limits.MaxReadyBatches {
		return bad("/prior_state")
	}
	if s.demand > 0 && len(s.ready) > 0 {
		return bad("/prior_state/ready_batches")
	}
	s.seal(nil, newHasher())
	if declared, _ := o.str("state_digest"); declared != s.digest {
		return bad("/prior_state/state_digest")
	}
	return s, nil
}

func parsePublished(v any, p *Profile, path string) (*PublishedBatch, *Rejection) {
	bad := func(sub string) (*PublishedBatch, *Rejection) {
		return nil, reject(CodeMalformedReactiveState, path+sub)
	}
	o, ok := exact(v, "kind", "batch", "effect_proposals", "eligibility_verdicts", "published_batch_digest")
	if !ok {
		return bad("")
	}
	rawP, ok1 := o["effect_proposals"].([]any)
	rawV, ok2 := o["eligibility_verdicts"].([]any)
	if !o.is("kind", "RPublishedBatch") || !ok1 || !ok2 || (len(rawP) == 0 && len(rawV) == 0) {
		return bad("")
	}
	var props, verds []Value
	for i, x := range rawP {
		val, rej := parseValue(x, string(KindEffectProposal), path+"/effect_proposals/"+strconv.Itoa(i))
		if rej != nil {
			return nil, asState(rej)
		}
		props = append(props, val)
	}
	for i, x := range rawV {
		val, rej := parseValue(x, string(KindEligibilityVerdict), path+"/eligibility_verdicts/"+strconv.Itoa(i))
		if rej != nil {
			return nil, asState(rej)
		}
		verds = append(verds, val)
	}
	byCanon := func(a, b Value) int { return bytes.Compare(a.canon, b.canon) }
	if !bytes.Equal(appendValues(nil, props), mustCanon(o["effect_proposals"])) ||
		!bytes.Equal(appendValues(nil, verds), mustCanon(o["eligibility_verdicts"])) ||
		!slices.IsSortedFunc(props, byCanon) || !slices.IsSortedFunc(verds, byCanon) {
		return bad("")
	}
	// The embedded values must pair one to one by proposal_id.
	var bt *int64
	if bo, ok := o["batch"].(map[string]any); ok {
		if t, ok := obj(bo).time("logical_time"); ok {
			bt = &t
		}
	}
	pairs := map[string]int{}
	pids, vids := map[string]bool{}, map[string]bool{}
	for _, x := range props {
		pids[x.proposal.ProposalID] = true
	}
	for _, x := range verds {
		vids[x.verdict.VerdictID] = true
		pairs[x.verdict.ProposalID]++
	}
	bijective := len(pids) == len(props) && len(vids) == len(verds) && len(pairs) == len(pids)
	//flrh:orderfree a conjunction over all entries
	for id, n := range pairs {
		bijective = bijective && pids[id] && n == 1
	}
	if !bijective {
		r := reject(CodeUnresolvedDependency, path)
		r.LogicalTime = bt
		r.Context.Reason = "proposal verdict relation is not a total bijection"
		return nil, r
	}
	verdictOf := map[string]*EligibilityVerdict{}
	for i := range verds {
		verdictOf[verds[i].verdict.ProposalID] = &verds[i].verdict
	}
	for _, x := range props {
		if x.proposal.Versions.Dataflow != p.dataflow {
			return nil, reject(CodeDataflowVersionMismatch, path+"/effect_proposals")
		}
		if vr := verdictOf[x.proposal.ProposalID]; vr.RuleSetVersion != x.proposal.Versions.RuleSet {
			return nil, reject(CodeRuleSetVersionMismatch, path).expect(x.proposal.Versions.RuleSet, vr.RuleSetVersion)
		}
	}
	bo, ok := exact(o["batch"], "kind", "batch_id", "logical_time", "low_watermark", "proposal_ids",
		"eligibility_verdict_ids", "batch_digest", "cause_id", "dataflow_version")
	if !ok {
		return bad("/batch")
	}
	t, okT := bo.time("logical_time")
	lw, okL := bo.time("low_watermark")
	if !bo.is("kind", "StableProposalBatch") || !okT || !okL || lw <= t || !bo.is("dataflow_version", p.dataflow) {
		return bad("/batch")
	}
	pidList := make([]string, len(props))
	for i, x := range props {
		pidList[i] = x.proposal.ProposalID
	}
	vidList := make([]string, len(verds))
	for i, x := range verds {
		vidList[i] = x.verdict.VerdictID
	}
	slices.Sort(pidList)
	slices.Sort(vidList)
	gotP, _ := bo.strings("proposal_ids")
	gotV, _ := bo.strings("eligibility_verdict_ids")
	if !slices.Equal(gotP, pidList) || !slices.Equal(gotV, vidList) {
		return bad("/batch")
	}
	pb := newPublishedBatch(nil, p.digest, p.dataflow, t, lw, props, verds, pidList, vidList, newHasher())
	if !bo.is("batch_digest", pb.batch.BatchDigest) || !bo.is("batch_id", pb.batch.BatchID) || !bo.is("cause_id", pb.batch.CauseID) {
		return bad("/batch/batch_digest")
	}
	if !o.is("published_batch_digest", pb.digest) {
		return bad("/published_batch_digest")
	}
	return pb, nil
}

// mustCanon re-encodes a decoded value; values from cjson.Decode always
// encode.
func mustCanon(v any) []byte {
	b, err := cjson.Encode(v)
	if err != nil {
		return nil
	}
	return b
}

// ParseValue validates a decoded protocol value of the given kind and seals
// it. A malformed value is MALFORMED_VALUE_DELTA with a pointer relative to
// the value.
func ParseValue(kind ValueKind, v any) (Value, *Rejection) {
	return parseValue(v, string(kind), "")
}

// DecodeState parses and fully validates a persisted RReactiveState (for
// example one read back from a checkpoint) against its profile.
func DecodeState(jsonText []byte, p Profile) (*State, *Rejection) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		r := reject(CodeCanonicalizationViolation, "")
		r.Context.Reason = "canonical JSON domain"
		return nil, r
	}
	return ParseState(v, p)
}

// DecodeProfile parses and validates an RDataflowProfile.
func DecodeProfile(jsonText []byte) (Profile, *Rejection) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		r := reject(CodeCanonicalizationViolation, "")
		r.Context.Reason = "canonical JSON domain"
		return Profile{}, r
	}
	return ParseProfile(v)
}
