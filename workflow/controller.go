package workflow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"flrh.dev/flrh/aif"
	"flrh.dev/flrh/aif/channel"
	"flrh.dev/flrh/aif/choice"
	"flrh.dev/flrh/aif/fixed"
	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/seam"
)

// controller is a bundle's active-inference controller: a discrete model
// (as aif.Decode reads it), which accepted inputs it observes as which
// outcomes, which model policy scores each option H may offer, and the
// selection settings. It also holds the gate policy compiled for the one
// question the policy answers about it: autonomous_choice(t).
type controller struct {
	doc         *aif.Document             // a discrete model, or
	ch          *channel.Document         // a channel model
	chObserve   map[string]map[string]any // "event:TYPE" or "receipt:OUTCOME" → channel → raw value or "$payload.member"
	chOptions   map[string][]string       // option → cascade of actions
	chNothing   []string
	modelDigest string
	events      map[string][]int // event type → outcome per modality
	receipts    map[string][]int // receipt outcome → outcome per modality
	options     map[string]int   // option → model policy
	nothing     int              // the do-nothing policy
	wait        []int            // its first actions: how the belief moves between observations
	temperature float64
	margin      float64
	gates       *logic.Compiled
}

// AutonomousChoice is the gate-policy relation that lets the controller
// choose among options on its own: autonomous_choice(t) for ticket t.
const AutonomousChoice = "autonomous_choice"

var controllerMembers = []string{"model", "observe", "options", "nothing", "temperature", "margin"}

// compileController reads the manifest's optional "controller" member.
func (c *compiler) controller(w *Workflow) *Error {
	raw, present := c.root["controller"]
	if !present {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return malformed("/controller", "must be an object {model, observe, options, nothing, temperature, margin}")
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(controllerMembers, k) {
			return malformed("/controller/"+cjson.EscapePointer(k), "unknown member")
		}
	}
	fname, src, err := c.fileAs("/controller/model", m["model"], true) // a model's probabilities are floats
	if err != nil {
		return err
	}
	var head struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(src, &head)
	if head.Kind == channel.DocumentKind {
		ctl, err := c.channelController(w, fname, src, m)
		if err != nil {
			return err
		}
		if err := c.delegation(ctl); err != nil {
			return err
		}
		w.ctl = ctl
		return nil
	}
	doc, derr := aif.Decode(src)
	if derr != nil {
		ptr := ""
		if ae, ok := derr.(*aif.Error); ok {
			ptr = ae.Pointer
		}
		return bundleErr(CodeBadController, fname, ptr, "%v", derr)
	}
	ctl := &controller{doc: doc, modelDigest: cjson.Digest(src), events: map[string][]int{}, receipts: map[string][]int{}, options: map[string]int{}}
	model := doc.Model
	obsOf := func(ptr string, v any) ([]int, *Error) {
		names, ok := v.([]any)
		if !ok || len(names) != len(model.Modalities) {
			return nil, malformed(ptr, "must list one outcome for each of the model's %d modalities", len(model.Modalities))
		}
		out := make([]int, len(names))
		for i, n := range names {
			s, _ := n.(string)
			k := slices.Index(model.Modalities[i].Outcomes, s)
			if k < 0 {
				return nil, malformed(fmt.Sprintf("%s/%d", ptr, i), "%q is not an outcome of modality %s", s, model.Modalities[i].Name)
			}
			out[i] = k
		}
		return out, nil
	}
	obs, ok := m["observe"].(map[string]any)
	if !ok {
		return malformed("/controller/observe", "must be an object {events, receipts}")
	}
	for _, k := range sortedKeys(obs) {
		var dst map[string][]int
		switch k {
		case "events":
			dst = ctl.events
		case "receipts":
			dst = ctl.receipts
		default:
			return malformed("/controller/observe/"+cjson.EscapePointer(k), "unknown member")
		}
		table, ok := obs[k].(map[string]any)
		if !ok {
			return malformed("/controller/observe/"+k, "must map names to outcome lists")
		}
		for _, key := range sortedKeys(table) {
			ptr := "/controller/observe/" + k + "/" + cjson.EscapePointer(key)
			if _, known := w.domain.Profile().EventTypes[key]; k == "events" && (!known || key == ReceiptEventType) {
				return malformed(ptr, "the domain has no event type %s", key)
			}
			o, err := obsOf(ptr, table[key])
			if err != nil {
				return err
			}
			dst[key] = o
		}
	}
	policyOf := func(ptr string, v any) (int, *Error) {
		names, ok := v.([]any)
		if !ok || len(names) != len(model.Factors) {
			return 0, malformed(ptr, "must list one action for each of the model's %d factors", len(model.Factors))
		}
		found := -1
		for p := range model.Policies {
			acts := model.PolicyActions(p)[0]
			same := true
			for f, n := range names {
				if s, _ := n.(string); acts[f] != s {
					same = false
				}
			}
			if same {
				if found >= 0 {
					return 0, malformed(ptr, "more than one model policy starts with these actions; use a horizon of 1")
				}
				found = p
			}
		}
		if found < 0 {
			return 0, malformed(ptr, "no model policy starts with these actions")
		}
		return found, nil
	}
	opts, ok := m["options"].(map[string]any)
	if !ok || len(opts) == 0 {
		return malformed("/controller/options", "must map each option the gates may offer to the model's actions")
	}
	for _, k := range sortedKeys(opts) {
		ptr := "/controller/options/" + cjson.EscapePointer(k)
		if !cjson.ValidID(k) {
			return malformed(ptr, "an option is an id")
		}
		p, err := policyOf(ptr, opts[k])
		if err != nil {
			return err
		}
		ctl.options[k] = p
	}
	var perr *Error
	if ctl.nothing, perr = policyOf("/controller/nothing", m["nothing"]); perr != nil {
		return perr
	}
	ctl.wait = model.Policies[ctl.nothing][0]
	if err := c.delegation(ctl); err != nil {
		return err
	}
	w.ctl = ctl
	return nil
}

// delegation reads the selection settings and compiles the gate policy
// for the one question it answers about the controller.
func (c *compiler) delegation(ctl *controller) *Error {
	m := c.root["controller"].(map[string]any)
	for _, k := range []string{"temperature", "margin"} {
		n, ok := m[k].(int64)
		if !ok || n < 0 || n > 1_000*fixed.Scale {
			return malformed("/controller/"+k, "must be an integer count of 10^-9 from 0 to 10^12")
		}
		f := fixed.Num(n).Float()
		if k == "temperature" {
			ctl.temperature = f
		} else {
			ctl.margin = f
		}
	}
	// The gate policy decides whether the controller may choose: the same
	// rules as H's, read for autonomous_choice(t).
	gname, gsrc, err := c.file("/gates")
	if err != nil {
		return err
	}
	prog, lerr := logic.Parse(gname, append(append([]byte(nil), gsrc...), authority.GateVocabulary...))
	if lerr == nil {
		ctl.gates, lerr = logic.Check(prog)
	}
	if lerr != nil {
		return bundleErr(CodeBadGates, gname, logicPos(lerr), "%v", lerr)
	}
	if s, ok := ctl.gates.Schema(AutonomousChoice); ok && (len(s) != 1 || s[0] != logic.TypeSymbol) {
		return bundleErr(CodeBadGates, gname, "", "%s must be declared as %s(t: symbol)", AutonomousChoice, AutonomousChoice)
	}
	return nil
}

// belief is the controller's persisted belief: the posterior after the
// last observation and the prior of the next one, in fixed point (as the
// aif records are), so replay reads exactly what was written.
type belief struct {
	Tick       int64         `json:"tick"`
	Posterior  [][]fixed.Num `json:"posterior,omitempty"`
	Prior      [][]fixed.Num `json:"prior,omitempty"`
	FreeEnergy fixed.Num     `json:"free_energy"`
	// Channels is a channel model's belief, in place of the discrete
	// posterior and prior.
	Channels *chanBeliefs `json:"channels,omitempty"`
}

func fixedMatrix(q [][]float64) [][]fixed.Num {
	out := make([][]fixed.Num, len(q))
	for i, v := range q {
		out[i] = make([]fixed.Num, len(v))
		for j, x := range v {
			out[i][j], _ = fixed.MustFloat(x)
		}
	}
	return out
}

func floatMatrix(q [][]fixed.Num) [][]float64 {
	out := make([][]float64, len(q))
	for i, v := range q {
		out[i] = fixed.Floats(v)
	}
	return out
}

func (ctl *controller) initial() *belief {
	if ctl.ch != nil {
		b := ctl.ch.Start.Belief
		cb := chanBelief{Mu: fixedVector(b.Mu), V: fixedVector(b.V)}
		return &belief{Channels: &chanBeliefs{Posterior: cb, Prior: cb}}
	}
	p := fixedMatrix(ctl.doc.Model.Prior())
	return &belief{Posterior: p, Prior: p}
}

// observe feeds one accepted input to the controller, if the bundle maps
// it to an observation: one perception step from the persisted prior. The
// step record (belief, free energy, each policy's risk and ambiguity) goes
// to the trace; the belief goes to the state. Between observations the
// world is taken to follow the do-nothing action.
func (t *tick) observe(ob observation) error {
	ctl, st := t.w.ctl, t.st
	if st.AIF == nil {
		st.AIF = ctl.initial()
	}
	if ctl.ch != nil {
		return t.observeChannels(ob)
	}
	obs := ob.discrete
	m := ctl.doc.Model
	res, err := m.Step(floatMatrix(st.AIF.Prior), obs, ctl.doc.Selection, t.in.Digest)
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	next, err := m.Predict(res.Posterior.Q, ctl.wait)
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	tick := st.AIF.Tick + 1
	rec := m.Record(int(tick), obs, t.in.Digest, ctl.doc.Selection, res)
	st.AIF = &belief{Tick: tick, Posterior: rec.Belief, Prior: fixedMatrix(next), FreeEnergy: rec.FreeEnergy}
	t.noteValue("aif.step", map[string]any{"model": ctl.modelDigest, "record": rec})
	return nil
}

// acted moves the controller's prior along the action of the option H
// authorized: the world is expected to follow the chosen path, not the
// do-nothing one.
func (t *tick) acted(option string) error {
	ctl, st := t.w.ctl, t.st
	p, ok := ctl.optionPolicy(option)
	if !ok {
		return nil
	}
	if st.AIF == nil {
		st.AIF = ctl.initial()
	}
	if ctl.ch != nil {
		return t.actedChannels(ctl.chOptions[option][0])
	}
	next, err := ctl.doc.Model.Predict(floatMatrix(st.AIF.Posterior), ctl.doc.Model.Policies[p][0])
	if err != nil {
		return fmt.Errorf("workflow: controller: %w", err)
	}
	st.AIF.Prior = fixedMatrix(next)
	return nil
}

func (ctl *controller) optionPolicy(option string) (int, bool) {
	if ctl == nil {
		return 0, false
	}
	if ctl.ch != nil {
		_, ok := ctl.chOptions[option]
		return 0, ok
	}
	p, ok := ctl.options[option]
	return p, ok
}

// scoreOptions scores the offered options from the current belief: each
// option's core is the expected free energy (risk, ambiguity) of the model
// policy it maps to; an option the bundle does not map cannot be scored,
// and the controller then abstains.
func (t *tick) scoreOptions(of offer) (choice.Request, string, error) {
	ctl, st := t.w.ctl, t.st
	b := st.AIF
	if b == nil {
		b = ctl.initial()
	}
	if ctl.ch != nil {
		return t.scoreChannels(of, b)
	}
	scores := ctl.doc.Model.EvaluatePolicies(floatMatrix(b.Posterior))
	core := func(p int) choice.Core { return choice.Core{Risk: scores[p].Risk, Ambiguity: scores[p].Ambiguity} }
	req := choice.Request{Nothing: choice.Candidate{ID: "nothing", Core: core(ctl.nothing)}, Margin: ctl.margin,
		Temperature: ctl.temperature, EventDigest: t.in.Digest}
	unscored := ""
	for _, o := range of.Options {
		p, ok := ctl.options[o]
		if !ok {
			unscored = o
			continue
		}
		req.Candidates = append(req.Candidates, choice.Candidate{ID: o, Core: core(p)})
	}
	return req, unscored, nil
}

// Abstention reasons the runtime adds to the controller's own.
const (
	AbstainUnscored    = "OPTION_NOT_SCORED" // an offered option maps to no model policy
	AbstainNotDelegate = "NOT_DELEGATED"     // the gate policy does not derive autonomous_choice(t)
)

// autonomous asks the gate policy whether the controller may choose for
// this ticket: autonomous_choice(t) must hold (TRUE_ONLY) over the
// ticket's facts. Degraded Safe Mode never delegates.
func (ctl *controller) autonomous(tk authority.Ticket, m mrp.Machine) bool {
	if m.SafeMode {
		return false
	}
	if _, ok := ctl.gates.Schema(AutonomousChoice); !ok {
		return false
	}
	mat, err := logic.Evaluate(ctl.gates, authority.TicketFacts(tk), logic.Limits{MaxFirings: 100_000, MaxDepth: 1000, MaxTuples: 100_000})
	if err != nil {
		return false
	}
	s, err := mat.State(logic.Fact{Rel: AutonomousChoice, Args: []logic.Value{logic.Sym(tk.TicketID)}})
	return err == nil && s.String() == string(seam.TrueOnly)
}

// Ranked is one offered option as the controller scored it.
type Ranked struct {
	Option      string    `json:"option"`
	Risk        fixed.Num `json:"risk"`
	Ambiguity   fixed.Num `json:"ambiguity"`
	EFE         fixed.Num `json:"efe"`
	Total       fixed.Num `json:"total"`
	Probability fixed.Num `json:"probability"`
}

// offered runs once H answered a proposal with OPTIONS. With a controller,
// it scores the options and records the scorecard; when the gate policy
// delegates the choice (autonomous_choice(t)) and the controller does not
// abstain, its pick goes through the same path as a person's choice, with
// the controller as the chooser of record. Otherwise the ranked options
// wait for a person.
func (t *tick) offered(of offer, tk authority.Ticket) ([]Effect, error) {
	t.offers = append(t.offers, of.ProposalID)
	ctl := t.w.ctl
	if ctl == nil {
		return nil, nil
	}
	req, unscored, err := t.scoreOptions(of)
	if err != nil {
		return nil, err
	}
	d, err := choice.Select(req)
	if err != nil {
		return nil, fmt.Errorf("workflow: controller: %w", err)
	}
	if unscored != "" && d.Pick != "" {
		d.Pick, d.Abstain = "", AbstainUnscored
	}
	sc := choice.Record(req, d, nil)
	digest, err := cjson.DigestOf(sc)
	if err != nil {
		return nil, err
	}
	delegated := ctl.autonomous(tk, t.st.Machine) && !t.tried[of.ProposalID]
	chooser := "person"
	if delegated && d.Pick != "" {
		chooser = ControllerActorID
	}
	var ranking []Ranked
	for _, c := range sc.Candidates {
		ranking = append(ranking, Ranked{Option: c.ID, Risk: c.Core.Risk, Ambiguity: c.Core.Ambiguity, EFE: c.Core.EFE, Total: c.Total, Probability: c.Probability})
	}
	slices.SortStableFunc(ranking, func(a, b Ranked) int { return cmp.Compare(a.Total, b.Total) })
	k := slices.IndexFunc(t.st.Offered, func(o offer) bool { return o.ProposalID == of.ProposalID })
	t.st.Offered[k].Ranking, t.st.Offered[k].Scorecard = ranking, digest
	t.noteValue("aif.scorecard", map[string]any{"proposal_id": of.ProposalID, "ticket_id": of.TicketID, "scorecard": sc,
		"scorecard_digest": digest, "delegated": delegated, "chooser": chooser, "unscored": unscored})
	if chooser != ControllerActorID {
		return nil, nil
	}
	if t.tried == nil {
		t.tried = map[string]bool{}
	}
	t.tried[of.ProposalID] = true
	t.scorecard = digest
	defer func() { t.scorecard = "" }()
	actor := mrp.Actor{ID: ControllerActorID, Kind: mrp.ActorSystem, Role: ControllerRole}
	eff, refusal, err := t.decideChoice(Choice{ProposalID: of.ProposalID, Option: d.Pick}, actor, mrp.OptionSelected)
	if refusal != "" {
		t.note("aif.choice_refused", map[string]any{"proposal_id": of.ProposalID, "option": d.Pick, "refusal": refusal})
	}
	return eff, err
}
