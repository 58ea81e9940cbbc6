package kernel

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/protocol"
)

// DeclarativeSchemaVersion is the schema_version of a declarative domain
// configuration.
const DeclarativeSchemaVersion = "flrh-domain/1"

// Declarative is a Domain configured by data, for workflows written without
// Go. Load builds one from JSON such as:
//
//	{
//	  "schema_version": "flrh-domain/1",
//	  "workflow": "shop/1", "state_schema": "shop-state/1", "event_schema": "shop-event/1",
//	  "initial_state": {"orders": 0, "last_order": null},
//	  "events": {
//	    "order.placed/1": {
//	      "payload": {"order_id": "id", "amount": "int", "notify": "bool"},
//	      "reject_if": [{"ref": "$payload.amount", "equals": 0, "reason": "empty order"}],
//	      "state": {"orders": {"add": 1}, "last_order": {"set": "$payload.order_id"}},
//	      "close": false,
//	      "facts": [{"tuple": {"predicate": "order_placed", "subject": "$aggregate_id", "order": "$payload.order_id"},
//	                 "provenance": {"source_event_id": "$event_id"}}],
//	      "proposals": [{"when": "$payload.notify", "effect_type": "email.send",
//	                     "action": {"order": "$payload.order_id"}, "destination": {"adapter": "smtp"},
//	                     "goal_id": "goal:notify", "obligation_id": "obligation:notify",
//	                     "risk_hint": "reversible", "preconditions": ["order:placed"]}]
//	    }
//	  }
//	}
//
// Templates are JSON values in which a string starting with "$" is a
// reference: $event_id, $aggregate_id, $correlation_id, $event_type,
// $logical_time, $payload.<member>[.<member>…] and $state.<member>[…];
// "$$" starts a literal string beginning with "$". Payload member types are
// id, string, int, nonneg_int, bool, object, array and any. State updates
// are {"set": template} or {"add": integer}. The domain state is the
// snapshot member "state"; its members are exactly those of initial_state.
type Declarative struct {
	workflow, stateSchema, eventSchema string
	initial                            map[string]any
	initialKeys                        []string // sorted
	events                             map[string]eventRule
	maxFacts, maxProposals             int
	// profile is Profile's result, built once by Load for the kernel's own
	// steps, which only read it; Profile still hands each caller a fresh
	// one it may modify. Nil for a value Load did not make.
	profile *Profile
	// profileOK is profileValid(*profile), decided once by Load: the
	// profile never changes, and every step asks.
	profileOK bool
}

// A rule keeps its configuration as loaded and, compiled once by Load,
// what a step walks: sorted member lists, templates whose object keys are
// sorted and whose references are split, and each guard's encoded value.
type eventRule struct {
	payload     map[string]string // member → type
	payloadKeys []string          // sorted
	rejectIf    []guard
	state       map[string]update
	stateKeys   []string // sorted
	close       any      // bool or a reference
	closeC      condition
	facts       []factRule
	proposals   []proposalRule
}

type guard struct {
	ref       string
	equals    any
	reason    string
	refC      *reference
	equalsEnc []byte // the canonical encoding of equals, if it has one
	equalsOK  bool
}

type update struct {
	set  any
	add  *int64
	setT *template
}

type factRule struct {
	tuple, provenance map[string]any
	diff              int64
	tupleT, provT     *template
}

type proposalRule struct {
	when                                   any
	effectType, goalID, obligationID, risk string
	action, destination                    map[string]any
	preconditions                          []any
	whenC                                  condition
	actionT, destT, preT                   *template
}

// ConfigError reports a bad declarative configuration: where (a JSON
// Pointer into the configuration) and what.
type ConfigError struct {
	Pointer string
	Detail  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kernel: domain configuration at %s: %s", e.Pointer, e.Detail)
}

func cfgErr(ptr, format string, args ...any) *ConfigError {
	if ptr == "" {
		ptr = "/"
	}
	return &ConfigError{Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}

var payloadTypes = []string{"id", "string", "int", "nonneg_int", "bool", "object", "array", "any"}

// Load parses and checks a declarative domain configuration. Every
// reference is resolved against the declared payload and state members at
// load time, so a loaded domain can only fail at run time on the data of
// an event, never on its own configuration.
func Load(jsonText []byte) (*Declarative, error) {
	v, err := cjson.Decode(jsonText)
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, cfgErr("/", "a domain configuration is a JSON object")
	}
	allowed := []string{"schema_version", "workflow", "state_schema", "event_schema", "initial_state", "events", "max_facts", "max_proposals"}
	if err := closedMembers(root, "", allowed, allowed[:6]); err != nil {
		return nil, err
	}
	if root["schema_version"] != DeclarativeSchemaVersion {
		return nil, cfgErr("/schema_version", "must be %q", DeclarativeSchemaVersion)
	}
	d := &Declarative{maxFacts: 16, maxProposals: 4}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"workflow", &d.workflow}, {"state_schema", &d.stateSchema}, {"event_schema", &d.eventSchema}} {
		s, ok := root[f.name].(string)
		if !ok || !cjson.ValidVersion(s) {
			return nil, cfgErr("/"+f.name, "must be a version label")
		}
		*f.dst = s
	}
	if d.initial, ok = root["initial_state"].(map[string]any); !ok {
		return nil, cfgErr("/initial_state", "must be an object")
	}
	d.initialKeys = sortedKeys(d.initial)
	for _, f := range []struct {
		name string
		dst  *int
	}{{"max_facts", &d.maxFacts}, {"max_proposals", &d.maxProposals}} {
		if raw, present := root[f.name]; present {
			n, ok := raw.(int64)
			if !ok || n < 0 || n > 1024 {
				return nil, cfgErr("/"+f.name, "must be an integer from 0 to 1024")
			}
			*f.dst = int(n)
		}
	}
	events, ok := root["events"].(map[string]any)
	if !ok || len(events) == 0 {
		return nil, cfgErr("/events", "must be a non-empty object of event types")
	}
	d.events = map[string]eventRule{}
	for _, typ := range sortedKeys(events) {
		ptr := "/events/" + cjson.EscapePointer(typ)
		if !cjson.ValidID(typ) {
			return nil, cfgErr(ptr, "event type %q is not an id", typ)
		}
		r, err := d.loadEvent(ptr, events[typ])
		if err != nil {
			return nil, err
		}
		d.events[typ] = r
	}
	p := d.Profile()
	d.profile, d.profileOK = &p, profileValid(p)
	return d, nil
}

func closedMembers(m map[string]any, ptr string, allowed, required []string) error {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return cfgErr(ptr+"/"+cjson.EscapePointer(k), "unknown member")
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return cfgErr(ptr+"/"+k, "required member missing")
		}
	}
	return nil
}

func (d *Declarative) loadEvent(ptr string, raw any) (eventRule, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return eventRule{}, cfgErr(ptr, "an event rule is an object")
	}
	if err := closedMembers(m, ptr, []string{"payload", "reject_if", "state", "close", "facts", "proposals"}, []string{"payload"}); err != nil {
		return eventRule{}, err
	}
	r := eventRule{payload: map[string]string{}, state: map[string]update{}, close: false}
	pm, ok := m["payload"].(map[string]any)
	if !ok {
		return r, cfgErr(ptr+"/payload", "must map payload members to types")
	}
	for _, k := range sortedKeys(pm) {
		t, _ := pm[k].(string)
		if slices.Contains(kernelPayloadMembers, k) {
			return r, cfgErr(ptr+"/payload/"+cjson.EscapePointer(k), "%s is a kernel member", k)
		}
		if !slices.Contains(payloadTypes, t) {
			return r, cfgErr(ptr+"/payload/"+cjson.EscapePointer(k), "type must be one of %s", strings.Join(payloadTypes, ", "))
		}
		r.payload[k] = t
	}
	check := func(p string, tmpl any) error { return d.checkTemplate(p, tmpl, r.payload) }
	if raw, ok := m["reject_if"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return r, cfgErr(ptr+"/reject_if", "must be an array")
		}
		for i, g := range list {
			gp := fmt.Sprintf("%s/reject_if/%d", ptr, i)
			gm, ok := g.(map[string]any)
			if !ok {
				return r, cfgErr(gp, "a guard is an object")
			}
			if err := closedMembers(gm, gp, []string{"ref", "equals", "reason"}, []string{"ref", "equals", "reason"}); err != nil {
				return r, err
			}
			ref, _ := gm["ref"].(string)
			reason, _ := gm["reason"].(string)
			if !strings.HasPrefix(ref, "$") || strings.HasPrefix(ref, "$$") || reason == "" {
				return r, cfgErr(gp, "ref must be a reference and reason a non-empty string")
			}
			if err := check(gp+"/ref", ref); err != nil {
				return r, err
			}
			r.rejectIf = append(r.rejectIf, guard{ref: ref, equals: gm["equals"], reason: reason})
		}
	}
	if raw, ok := m["state"]; ok {
		sm, ok := raw.(map[string]any)
		if !ok {
			return r, cfgErr(ptr+"/state", "must map state members to updates")
		}
		for _, k := range sortedKeys(sm) {
			up := ptr + "/state/" + cjson.EscapePointer(k)
			if _, declared := d.initial[k]; !declared {
				return r, cfgErr(up, "state member %q is not in initial_state", k)
			}
			um, ok := sm[k].(map[string]any)
			if !ok || len(um) != 1 {
				return r, cfgErr(up, `an update is {"set": template} or {"add": integer}`)
			}
			switch {
			case um["set"] != nil || hasKey(um, "set"):
				if err := check(up+"/set", um["set"]); err != nil {
					return r, err
				}
				r.state[k] = update{set: um["set"]}
			case hasKey(um, "add"):
				n, ok := um["add"].(int64)
				if !ok {
					return r, cfgErr(up+"/add", "must be an integer")
				}
				r.state[k] = update{add: &n}
			default:
				return r, cfgErr(up, `an update is {"set": template} or {"add": integer}`)
			}
		}
	}
	if raw, ok := m["close"]; ok {
		if err := d.checkCondition(ptr+"/close", raw, r.payload); err != nil {
			return r, err
		}
		r.close = raw
	}
	if raw, ok := m["facts"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return r, cfgErr(ptr+"/facts", "must be an array")
		}
		for i, f := range list {
			fp := fmt.Sprintf("%s/facts/%d", ptr, i)
			fm, ok := f.(map[string]any)
			if !ok {
				return r, cfgErr(fp, "a fact template is an object")
			}
			if err := closedMembers(fm, fp, []string{"tuple", "provenance", "diff"}, []string{"tuple", "provenance"}); err != nil {
				return r, err
			}
			fr := factRule{diff: 1}
			for _, part := range []struct {
				name string
				dst  *map[string]any
			}{{"tuple", &fr.tuple}, {"provenance", &fr.provenance}} {
				o, ok := fm[part.name].(map[string]any)
				if !ok || len(o) == 0 {
					return r, cfgErr(fp+"/"+part.name, "must be a non-empty object")
				}
				if err := check(fp+"/"+part.name, o); err != nil {
					return r, err
				}
				*part.dst = o
			}
			if raw, ok := fm["diff"]; ok {
				if n, ok := raw.(int64); !ok || (n != 1 && n != -1) {
					return r, cfgErr(fp+"/diff", "must be 1 or -1")
				}
				fr.diff = raw.(int64)
			}
			r.facts = append(r.facts, fr)
		}
	}
	if raw, ok := m["proposals"]; ok {
		list, ok := raw.([]any)
		if !ok {
			return r, cfgErr(ptr+"/proposals", "must be an array")
		}
		for i, p := range list {
			pr, err := d.loadProposal(fmt.Sprintf("%s/proposals/%d", ptr, i), p, r.payload)
			if err != nil {
				return r, err
			}
			r.proposals = append(r.proposals, pr)
		}
	}
	r.compile()
	return r, nil
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func (d *Declarative) loadProposal(pp string, raw any, payload map[string]string) (proposalRule, error) {
	pm, ok := raw.(map[string]any)
	if !ok {
		return proposalRule{}, cfgErr(pp, "a proposal template is an object")
	}
	fields := []string{"effect_type", "action", "destination", "goal_id", "obligation_id", "risk_hint", "preconditions"}
	if err := closedMembers(pm, pp, append([]string{"when"}, fields...), fields); err != nil {
		return proposalRule{}, err
	}
	pr := proposalRule{when: true}
	if w, ok := pm["when"]; ok {
		if err := d.checkCondition(pp+"/when", w, payload); err != nil {
			return pr, err
		}
		pr.when = w
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"effect_type", &pr.effectType}, {"goal_id", &pr.goalID}, {"obligation_id", &pr.obligationID}} {
		s, ok := pm[f.name].(string)
		if !ok || !cjson.ValidID(s) {
			return pr, cfgErr(pp+"/"+f.name, "must be an id")
		}
		*f.dst = s
	}
	pr.risk, _ = pm["risk_hint"].(string)
	if !riskHints[pr.risk] {
		return pr, cfgErr(pp+"/risk_hint", "must be read_only, reversible, high_risk_external or unknown")
	}
	for _, part := range []struct {
		name string
		dst  *map[string]any
	}{{"action", &pr.action}, {"destination", &pr.destination}} {
		o, ok := pm[part.name].(map[string]any)
		if !ok || len(o) == 0 {
			return pr, cfgErr(pp+"/"+part.name, "must be a non-empty object")
		}
		if err := d.checkTemplate(pp+"/"+part.name, o, payload); err != nil {
			return pr, err
		}
		*part.dst = o
	}
	if pr.preconditions, ok = pm["preconditions"].([]any); !ok {
		return pr, cfgErr(pp+"/preconditions", "must be an array")
	}
	if err := d.checkTemplate(pp+"/preconditions", pr.preconditions, payload); err != nil {
		return pr, err
	}
	return pr, nil
}

func (d *Declarative) checkCondition(ptr string, c any, payload map[string]string) error {
	switch t := c.(type) {
	case bool:
		return nil
	case string:
		if strings.HasPrefix(t, "$") && !strings.HasPrefix(t, "$$") {
			return d.checkTemplate(ptr, t, payload)
		}
	}
	return cfgErr(ptr, "a condition is true, false or a reference")
}

var scalarRefs = []string{"$event_id", "$aggregate_id", "$correlation_id", "$event_type", "$logical_time"}

// checkTemplate resolves every reference in a template against the
// declared payload and state members.
func (d *Declarative) checkTemplate(ptr string, tmpl any, payload map[string]string) error {
	switch t := tmpl.(type) {
	case string:
		if !strings.HasPrefix(t, "$") || strings.HasPrefix(t, "$$") || slices.Contains(scalarRefs, t) {
			return nil
		}
		root, rest, _ := strings.Cut(t, ".")
		first, _, _ := strings.Cut(rest, ".")
		switch root {
		case "$payload":
			if _, ok := payload[first]; ok || slices.Contains(kernelPayloadMembers, first) {
				return nil
			}
			return cfgErr(ptr, "%s names no declared payload member", t)
		case "$state":
			if _, ok := d.initial[first]; ok {
				return nil
			}
			return cfgErr(ptr, "%s names no state member", t)
		}
		return cfgErr(ptr, "unknown reference %s (use $$ for a literal $)", t)
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if err := d.checkTemplate(ptr+"/"+cjson.EscapePointer(k), t[k], payload); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range t {
			if err := d.checkTemplate(fmt.Sprintf("%s/%d", ptr, i), e, payload); err != nil {
				return err
			}
		}
	}
	return nil
}

// Profile implements Domain.
func (d *Declarative) Profile() Profile {
	// Fresh member lists, carved from one array: each ends at its own
	// capacity, so a caller's append cannot reach its neighbour.
	n := 0
	for _, r := range d.events { //flrh:orderfree a sum
		n += len(r.payloadKeys)
	}
	lists := make([]string, 0, n)
	types := make(map[string][]string, len(d.events))
	for t, r := range d.events { //flrh:orderfree each list's contents do not depend on where it sits in the array
		start := len(lists)
		lists = append(lists, r.payloadKeys...)
		types[t] = lists[start:len(lists):len(lists)]
	}
	return Profile{
		Workflow:     d.workflow,
		StateSchema:  d.stateSchema,
		EventSchema:  d.eventSchema,
		EventTypes:   types,
		StateMembers: []string{"state"},
		InitialState: protocol.Object{"state": deepCopy(d.initial)},
		FactIdentity: "declarative-fact-value",
		MaxFacts:     d.maxFacts,
		MaxProposals: d.maxProposals,
	}
}

// CheckState implements Domain: the state is an object with exactly the
// members of initial_state.
func (d *Declarative) CheckState(st protocol.Object) *Fault {
	m, ok := st["state"].(map[string]any)
	if !ok || !exactMembers(m, d.initialKeys) {
		return &Fault{Code: CodeMalformedSnapshot, Path: SnapshotPath("/state")}
	}
	return nil
}

// CheckPayload implements Domain: every declared member has its type.
func (d *Declarative) CheckPayload(eventType string, p protocol.Object) *Fault {
	r := d.events[eventType]
	for _, k := range r.payloadKeys {
		if !hasType(p[k], r.payload[k]) {
			return &Fault{Code: CodeMalformedAcceptedEvent, Path: PayloadPath("/" + cjson.EscapePointer(k)),
				Context: map[string]any{"expected_type": r.payload[k]}}
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "id":
		s, ok := v.(string)
		return ok && cjson.ValidID(s)
	case "string":
		_, ok := v.(string)
		return ok
	case "int":
		_, ok := v.(int64)
		return ok
	case "nonneg_int":
		n, ok := v.(int64)
		return ok && n >= 0
	case "bool":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return t == "any"
}

// template is a compiled template: a literal, a reference, or an object
// (keys sorted: the first fault reported must not depend on map order) or
// array of templates.
type template struct {
	lit   any
	ref   *reference
	keys  []string
	vals  []template
	elems []template
	shape byte // 'l' literal, 'r' reference, 'o' object, 'a' array
	// rendered is an object or array made only of literals, rendered once
	// at Load: what renderShared hands every emission (nil otherwise).
	rendered any
}

// reference is a compiled reference: its text, and for $payload and
// $state paths the member tokens and the pointer reached after each.
type reference struct {
	text   string
	scalar bool     // one of scalarRefs, the whole text
	root   string   // $payload or $state (or, unchecked, anything else)
	toks   []string // the path below the root
	paths  []string // paths[i]: the pointer after i tokens
}

// condition is a compiled condition: a literal, or a reference.
type condition struct {
	lit bool
	ref *reference
}

func compileTemplate(v any) *template {
	t := new(template)
	compileInto(t, v)
	return t
}

func compileInto(t *template, v any) {
	switch x := v.(type) {
	case string:
		switch {
		case strings.HasPrefix(x, "$$"):
			t.shape, t.lit = 'l', x[1:]
		case strings.HasPrefix(x, "$"):
			t.shape, t.ref = 'r', compileReference(x)
		default:
			t.shape, t.lit = 'l', x
		}
	case map[string]any:
		t.shape, t.keys = 'o', sortedKeys(x)
		t.vals = make([]template, len(t.keys))
		for i, k := range t.keys {
			compileInto(&t.vals[i], x[k])
		}
	case []any:
		t.shape, t.elems = 'a', make([]template, len(x))
		for i, e := range x {
			compileInto(&t.elems[i], e)
		}
	default:
		t.shape, t.lit = 'l', v
	}
	if (t.shape == 'o' || t.shape == 'a') && literalOnly(t) {
		// No reference below: what it renders to does not depend on
		// the data, and no rendering can fault.
		t.rendered, _ = env{}.render(t)
	}
}

// literalOnly reports whether a template holds no reference.
func literalOnly(t *template) bool {
	switch t.shape {
	case 'r':
		return false
	case 'o':
		for i := range t.vals {
			if !literalOnly(&t.vals[i]) {
				return false
			}
		}
	case 'a':
		for i := range t.elems {
			if !literalOnly(&t.elems[i]) {
				return false
			}
		}
	}
	return true
}

func compileReference(text string) *reference {
	r := &reference{text: text}
	if slices.Contains(scalarRefs, text) {
		r.scalar = true
		return r
	}
	root, rest, _ := strings.Cut(text, ".")
	r.root = root
	base := ""
	switch root {
	case "$payload":
		base = "/accepted_event/payload"
	case "$state":
		base = "/snapshot/state"
	}
	r.toks = strings.Split(rest, ".")
	r.paths = make([]string, len(r.toks)+1)
	r.paths[0] = base
	for i, tok := range r.toks {
		r.paths[i+1] = r.paths[i] + "/" + cjson.EscapePointer(tok)
	}
	return r
}

func compileCondition(c any) condition {
	if b, ok := c.(bool); ok {
		return condition{lit: b}
	}
	s, _ := c.(string)
	return condition{ref: compileReference(s)}
}

// compile fills in what a step walks from the loaded configuration.
func (r *eventRule) compile() {
	r.payloadKeys = sortedKeys(r.payload)
	r.stateKeys = sortedKeys(r.state)
	for k, u := range r.state { //flrh:orderfree each entry compiled alone
		if u.add == nil {
			u.setT = compileTemplate(u.set)
			r.state[k] = u
		}
	}
	r.closeC = compileCondition(r.close)
	for i := range r.rejectIf {
		g := &r.rejectIf[i]
		g.refC = compileReference(g.ref)
		enc, err := cjson.Encode(g.equals)
		g.equalsEnc, g.equalsOK = enc, err == nil
	}
	for i := range r.facts {
		f := &r.facts[i]
		f.tupleT, f.provT = compileTemplate(f.tuple), compileTemplate(f.provenance)
	}
	for i := range r.proposals {
		p := &r.proposals[i]
		p.whenC = compileCondition(p.when)
		p.actionT, p.destT, p.preT = compileTemplate(p.action), compileTemplate(p.destination), compileTemplate(p.preconditions)
	}
}

// env is what references resolve against.
type env struct {
	s Snapshot
	e Event
}

// lookup finds a reference's value in the data, without copying it; a path
// that is absent is a DOMAIN_REJECTED fault naming the reference.
func (x env) lookup(r *reference) (any, *Fault) {
	if r.scalar {
		switch r.text {
		case "$event_id":
			return x.e.ID, nil
		case "$aggregate_id":
			return x.s.AggregateID, nil
		case "$correlation_id":
			return x.e.CorrelationID, nil
		case "$event_type":
			return x.e.Type, nil
		case "$logical_time":
			return x.e.LogicalTime, nil
		}
	}
	var cur any
	switch r.root {
	case "$payload":
		cur = map[string]any(x.e.Payload)
	case "$state":
		cur = x.s.State["state"]
	}
	for i, tok := range r.toks {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, &Fault{Code: CodeDomainRejected, Path: r.paths[i], Context: map[string]any{"missing": r.text}}
		}
		if cur, ok = m[tok]; !ok {
			return nil, &Fault{Code: CodeDomainRejected, Path: r.paths[i+1], Context: map[string]any{"missing": r.text}}
		}
	}
	return cur, nil
}

// resolve evaluates a reference to a value of its own.
func (x env) resolve(r *reference) (any, *Fault) {
	v, f := x.lookup(r)
	if f != nil {
		return nil, f
	}
	return deepCopy(v), nil
}

// renderShared is render for a value its caller only reads: an object or
// array made only of literals is the one rendered at Load, shared by every
// emission, where render builds it again (TestRenderSharedIsRender).
func (x env) renderShared(t *template) (any, *Fault) {
	if t.rendered != nil {
		return t.rendered, nil
	}
	return x.render(t)
}

func (x env) render(t *template) (any, *Fault) {
	switch t.shape {
	case 'r':
		return x.resolve(t.ref)
	case 'o':
		out := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			r, f := x.render(&t.vals[i])
			if f != nil {
				return nil, f
			}
			out[k] = r
		}
		return out, nil
	case 'a':
		out := make([]any, len(t.elems))
		for i := range t.elems {
			r, f := x.render(&t.elems[i])
			if f != nil {
				return nil, f
			}
			out[i] = r
		}
		return out, nil
	}
	return t.lit, nil
}

// preconditions renders a proposal's preconditions, an array template,
// to the ids they must be: each element's string read where it is, with
// no array of rendered values and no copy of what a reference names. Its
// ids and fault are those of rendering the array and reading each element
// as a string (TestPreconditionsAreTheRenderedArray): every element is
// rendered, and a rendering fault reported, before an element that is
// not a string is.
func (x env) preconditions(t *template) ([]string, *Fault) {
	if t.shape != 'a' {
		return x.preconditionsRendered(t)
	}
	var ids []string
	if len(t.elems) > 0 {
		ids = make([]string, 0, len(t.elems))
	}
	allIDs := true
	for i := range t.elems {
		e := &t.elems[i]
		var v any
		var f *Fault
		switch e.shape {
		case 'l':
			v = e.lit
		case 'r':
			// A copy of the value would be a string exactly when it is.
			v, f = x.lookup(e.ref)
		default:
			v, f = x.render(e)
		}
		if f != nil {
			return nil, f
		}
		if s, ok := v.(string); ok && allIDs {
			ids = append(ids, s)
		} else {
			allIDs = false
		}
	}
	if !allIDs {
		return nil, preconditionsNotIDs()
	}
	return ids, nil
}

// preconditionsRendered is preconditions through the rendered array.
func (x env) preconditionsRendered(t *template) ([]string, *Fault) {
	pre, f := x.render(t)
	if f != nil {
		return nil, f
	}
	list, _ := pre.([]any)
	var ids []string
	if len(list) > 0 {
		ids = make([]string, 0, len(list))
	}
	for _, p := range list {
		s, ok := p.(string)
		if !ok {
			return nil, preconditionsNotIDs()
		}
		ids = append(ids, s)
	}
	return ids, nil
}

func preconditionsNotIDs() *Fault {
	return &Fault{Code: CodeInvariantViolation, Path: "/accepted_event/payload",
		Context: map[string]any{"invariant": "preconditions_are_ids"}}
}

func (x env) condition(c condition, path string) (bool, *Fault) {
	if c.ref == nil {
		return c.lit, nil
	}
	v, f := x.lookup(c.ref)
	if f != nil {
		return false, f
	}
	b, ok := v.(bool)
	if !ok {
		return false, &Fault{Code: CodeDomainRejected, Path: path, Context: map[string]any{"not_boolean": c.ref.text}}
	}
	return b, nil
}

func (d *Declarative) guards(x env) *Fault {
	for _, g := range d.events[x.e.Type].rejectIf {
		// resolve, not lookup: a copy can encode otherwise than the
		// original (a nil map below a protocol.Object is null, its copy {}).
		v, f := x.resolve(g.refC)
		if f != nil {
			return f
		}
		if !g.equalsOK {
			continue
		}
		a, err := cjson.Encode(v)
		if err == nil && string(a) == string(g.equalsEnc) {
			return &Fault{Code: CodeDomainRejected, Path: "/accepted_event/payload", Context: map[string]any{"reason": g.reason}}
		}
	}
	return nil
}

// Evolve implements Domain.
func (d *Declarative) Evolve(s Snapshot, e Event) (Evolution, *Fault) {
	x := env{s, e}
	if f := d.guards(x); f != nil {
		return Evolution{}, f
	}
	r := d.events[e.Type]
	prior, _ := s.State["state"].(map[string]any)
	next := deepCopy(prior).(map[string]any)
	for _, k := range r.stateKeys {
		u := r.state[k]
		if u.add != nil {
			n, ok := next[k].(int64)
			if !ok {
				return Evolution{}, &Fault{Code: CodeInvariantViolation, Path: "/snapshot/state/" + cjson.EscapePointer(k),
					Context: map[string]any{"invariant": "add_to_integer"}}
			}
			if (*u.add > 0 && n > math.MaxInt64-*u.add) || (*u.add < 0 && n < math.MinInt64-*u.add) {
				return Evolution{}, &Fault{Code: CodeInvariantViolation, Path: "/snapshot/state/" + cjson.EscapePointer(k),
					Context: map[string]any{"invariant": "add_within_int64"}}
			}
			next[k] = n + *u.add
			continue
		}
		v, f := x.render(u.setT)
		if f != nil {
			return Evolution{}, f
		}
		next[k] = v
	}
	closeIt, f := x.condition(r.closeC, "/accepted_event/payload")
	if f != nil {
		return Evolution{}, f
	}
	return Evolution{State: protocol.Object{"state": next}, Close: closeIt}, nil
}

// Emit implements Domain.
func (d *Declarative) Emit(s Snapshot, e Event) (Emission, *Fault) { return d.emit(s, e, true, false) }

// EmitShared is Emit for a caller that never modifies the proposals'
// destination objects (it reads, digests or encodes them). A destination
// template made only of literals is rendered once, at Load, and every
// emission's proposal holds that one object: modifying it would change
// every later emission's. Everything else is as Emit renders it.
func (d *Declarative) EmitShared(s Snapshot, e Event) (Emission, *Fault) {
	return d.emit(s, e, true, true)
}

// emit renders an event's facts and proposals. Sized, it takes the
// lists' room ahead (one allocation for the common rule of one fact and
// one proposal); unsized, each list grows as appending makes it, the
// reference the sized lists are held to in tests. Shared, a destination
// made only of literals is the one rendered at Load (EmitShared).
func (d *Declarative) emit(s Snapshot, e Event, sized, shared bool) (Emission, *Fault) {
	x := env{s, e}
	r := d.events[e.Type]
	var em Emission
	if sized && len(r.facts) == 1 && len(r.proposals) == 1 {
		// One fact and at most one proposal, the common rule: both lists
		// from one allocation, each capped at one.
		room := new(emissionRoom)
		em.Facts, em.Proposals = room.facts[:0:1], room.proposals[:0:1]
	} else if sized && len(r.facts) > 0 {
		em.Facts = make([]Fact, 0, len(r.facts)) // what appending made, grown once
	}
	for _, fr := range r.facts {
		tuple, f := x.render(fr.tupleT)
		if f != nil {
			return Emission{}, f
		}
		prov, f := x.render(fr.provT)
		if f != nil {
			return Emission{}, f
		}
		em.Facts = append(em.Facts, Fact{Tuple: tuple.(map[string]any), Provenance: prov.(map[string]any), Diff: fr.diff})
	}
	for _, pr := range r.proposals {
		on, f := x.condition(pr.whenC, "/accepted_event/payload")
		if f != nil {
			return Emission{}, f
		}
		if !on {
			continue
		}
		action, f := x.render(pr.actionT)
		if f != nil {
			return Emission{}, f
		}
		var dest any
		if shared {
			dest, f = x.renderShared(pr.destT)
		} else {
			dest, f = x.render(pr.destT)
		}
		if f != nil {
			return Emission{}, f
		}
		ids, f := x.preconditions(pr.preT)
		if f != nil {
			return Emission{}, f
		}
		if em.Proposals == nil && sized {
			em.Proposals = make([]Proposal, 0, len(r.proposals))
		}
		em.Proposals = append(em.Proposals, Proposal{
			EffectType: pr.effectType, Action: action.(map[string]any), Destination: dest.(map[string]any),
			GoalID: pr.goalID, ObligationID: pr.obligationID, RiskHint: pr.risk, Preconditions: ids,
		})
	}
	if len(em.Proposals) == 0 {
		em.Proposals = nil // as when no proposal was appended
	}
	return em, nil
}

// emissionRoom is an emission's lists of one fact and one proposal.
type emissionRoom struct {
	facts     [1]Fact
	proposals [1]Proposal
}

// Decide implements Domain: a command {"type": <event type>, <payload
// members>…} becomes one payload of that type if the aggregate is open,
// the members are the declared ones with their types, and no guard fires.
func (d *Declarative) Decide(s Snapshot, c Command) ([]protocol.Object, *Fault) {
	if s.Phase == PhaseClosed {
		return nil, &Fault{Code: CodeDomainRejected, Path: SnapshotPath("/phase"), Context: map[string]any{"phase": PhaseClosed}}
	}
	typ, _ := c["type"].(string)
	r, ok := d.events[typ]
	if !ok {
		return nil, &Fault{Code: CodeUnsupportedEventPayload, Path: "/command/type"}
	}
	p := protocol.Object{}
	for _, k := range sortedKeys(c) {
		v := c[k]
		if k == "type" {
			continue
		}
		if _, declared := r.payload[k]; !declared {
			return nil, &Fault{Code: CodeMalformedAcceptedEvent, Path: "/command/" + cjson.EscapePointer(k)}
		}
		p[k] = deepCopy(v)
	}
	if !exactMembers(p, r.payloadKeys) {
		return nil, &Fault{Code: CodeMalformedAcceptedEvent, Path: "/command"}
	}
	if f := d.CheckPayload(typ, p); f != nil {
		return nil, f
	}
	if f := d.guards(env{s, Event{Type: typ, Payload: p}}); f != nil {
		return nil, f
	}
	return []protocol.Object{p}, nil
}
