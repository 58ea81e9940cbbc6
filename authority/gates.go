package authority

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/logic"
)

// GateVocabulary declares the relations a gate policy reads and writes.
// It is appended to every policy, so a policy file holds only rules (and
// any helper relations it declares itself) and its line numbers are its own.
//
// Inputs, one ticket per evaluation (t is the ticket id):
//
//	ticket(t)                    action(t, effect_type)
//	destination(t, d)            scope(t, s)
//	side_effect(t, e)            declared_risk(t, r)
//	param_num(t, name, n)        param_sym(t, name, s)
//	complete(t)                  missing(t, field)
//	capability(t, capability_id) mode(m)   (e.g. mode("degraded_safe"))
//	chosen(t, option)            an option a person chose (Contestable Gate Mode)
//	resumed(t)                   a person resumed deliberation on a proposal H
//	                             escalated or held, and it is decided again
//
// Outputs:
//
//	decision(gate, verdict, rule)        verdict: ALLOW SHAPE ASK_FIRST REFUSE ESCALATE
//	shape_max(gate, rule, param, max)    a SHAPE cap on an integer parameter
//	shape_scope(gate, rule, scope)       a SHAPE narrowing of the scope
//	option(gate, rule, path)             a safe path a contestable gate offers
//	assess(risk, rule)                   assessed risk: read_only reversible high_risk_external
const GateVocabulary = `
.decl ticket(t: symbol)
.decl action(t: symbol, a: symbol)
.decl destination(t: symbol, d: symbol)
.decl scope(t: symbol, s: symbol)
.decl side_effect(t: symbol, e: symbol)
.decl declared_risk(t: symbol, r: symbol)
.decl param_num(t: symbol, k: symbol, v: number)
.decl param_sym(t: symbol, k: symbol, v: symbol)
.decl complete(t: symbol)
.decl missing(t: symbol, f: symbol)
.decl capability(t: symbol, c: symbol)
.decl mode(m: symbol)
.decl chosen(t: symbol, option: symbol)
.decl resumed(t: symbol)
.decl decision(g: symbol, v: symbol, r: symbol)
.decl shape_max(g: symbol, r: symbol, k: symbol, max: number)
.decl shape_scope(g: symbol, r: symbol, s: symbol)
.decl option(g: symbol, r: symbol, p: symbol)
.decl assess(risk: symbol, r: symbol)
.input ticket
.input action
.input destination
.input scope
.input side_effect
.input declared_risk
.input param_num
.input param_sym
.input complete
.input missing
.input capability
.input mode
.input chosen
.input resumed
.output decision
.output shape_max
.output shape_scope
.output option
.output assess
`

// ruleEngine is the seam between the gates and the Datalog engine that
// evaluates them: it takes one ticket's facts and returns what the policy
// derived, with provenance. The logic package's engine is the one in use;
// the seam keeps the gate semantics (deny by default, fail closed, tiers)
// independent of how rules are evaluated.
type ruleEngine interface {
	derive(facts []logic.Fact) (derived, error)
}

// derived is what a policy concluded about one ticket.
type derived struct {
	decisions []derivedDecision
	caps      map[[2]string][]capSpec // (gate, rule) -> SHAPE constraints
	options   map[[2]string][]string  // (gate, rule) -> safe paths
	risks     []derivedRisk
	// quorums are the quorum rows a policy that declares QuorumRelation
	// derived, with their reasons (whose Rule is the row's rule id).
	quorums []derivedQuorum
	// approvers are the approver rows of a policy that declares
	// ApproverRelation, with their reasons.
	approvers []derivedApprover
	// slots, given to deriveInto, is room for the firings' lists of
	// fact strings; it is not part of the result.
	slots []string
}

type derivedQuorum struct {
	n   int64
	why Reason
}

type derivedApprover struct {
	name string
	why  Reason
}

// chosenApprover is the one approver the rows name and the reason of the
// first row naming it (by rule id); when they name several, ok is false
// and names lists them, sorted.
func chosenApprover(as []derivedApprover) (name string, why Reason, names []string, ok bool) {
	var best *derivedApprover
	for i := range as {
		a := &as[i]
		if !slices.Contains(names, a.name) {
			names = append(names, a.name)
		}
		if best == nil || a.why.Rule < best.why.Rule {
			best = a
		}
	}
	if best == nil {
		return "", Reason{}, nil, true
	}
	slices.Sort(names)
	return best.name, best.why, names, len(names) == 1
}

// bestQuorum is the largest count among qs and the reason of the row that
// asks it (among equal counts, the first rule id in byte order, so the
// reason does not depend on the order rows were derived); 0 when qs is
// empty.
func bestQuorum(qs []derivedQuorum) (int, Reason) {
	var best *derivedQuorum
	for i := range qs {
		q := &qs[i]
		if best == nil || q.n > best.n || q.n == best.n && q.why.Rule < best.why.Rule {
			best = q
		}
	}
	if best == nil {
		return 0, Reason{}
	}
	return int(best.n), best.why
}

type derivedDecision struct {
	gate, verdict, rule string
	why                 Reason
}

type capSpec struct {
	param string
	max   int64
	scope string
}

type derivedRisk struct {
	risk string
	why  Reason
}

// logicEngine evaluates a compiled policy with flrh's Datalog engine.
type logicEngine struct {
	c   *logic.Compiled
	lim logic.Limits
}

func (e logicEngine) derive(facts []logic.Fact) (derived, error) {
	m, err := logic.Evaluate(e.c, facts, e.lim)
	if err != nil {
		return derived{}, err
	}
	if cs, err := m.Conflicts(); err != nil {
		return derived{}, err
	} else {
		for _, c := range cs {
			switch c.Atom.Rel {
			case "decision", "shape_max", "shape_scope", "option", "assess", QuorumRelation, ApproverRelation:
				return derived{}, fmt.Errorf("policy derives %s both true and false", c.Atom)
			}
		}
	}
	var d derived
	rows, err := m.Tuples("decision", false)
	if err != nil {
		return derived{}, err
	}
	for _, r := range rows {
		why, err := provenance(m, logic.Fact{Rel: "decision", Args: r}, r[2].Str())
		if err != nil {
			return derived{}, err
		}
		d.decisions = append(d.decisions, derivedDecision{gate: r[0].Str(), verdict: r[1].Str(), rule: r[2].Str(), why: why})
	}
	d.caps = map[[2]string][]capSpec{}
	if rows, err = m.Tuples("shape_max", false); err != nil {
		return derived{}, err
	}
	for _, r := range rows {
		k := [2]string{r[0].Str(), r[1].Str()}
		d.caps[k] = append(d.caps[k], capSpec{param: r[2].Str(), max: r[3].Int()})
	}
	if rows, err = m.Tuples("shape_scope", false); err != nil {
		return derived{}, err
	}
	for _, r := range rows {
		k := [2]string{r[0].Str(), r[1].Str()}
		d.caps[k] = append(d.caps[k], capSpec{scope: r[2].Str()})
	}
	d.options = map[[2]string][]string{}
	if rows, err = m.Tuples("option", false); err != nil {
		return derived{}, err
	}
	for _, r := range rows {
		k := [2]string{r[0].Str(), r[1].Str()}
		d.options[k] = append(d.options[k], r[2].Str())
	}
	// The rows whose rule id is their second column, each with its
	// reason: the vocabulary's assessments, and the quorum and approver a
	// policy may declare.
	err = reasonedRows(m, "assess", func(r []logic.Value, why Reason) {
		d.risks = append(d.risks, derivedRisk{risk: r[0].Str(), why: why})
	})
	if _, declared := e.c.SharedSchema(QuorumRelation); declared && err == nil {
		err = reasonedRows(m, QuorumRelation, func(r []logic.Value, why Reason) {
			d.quorums = append(d.quorums, derivedQuorum{n: r[0].Int(), why: why})
		})
	}
	if _, declared := e.c.SharedSchema(ApproverRelation); declared && err == nil {
		err = reasonedRows(m, ApproverRelation, func(r []logic.Value, why Reason) {
			d.approvers = append(d.approvers, derivedApprover{name: r[0].Str(), why: why})
		})
	}
	if err != nil {
		return derived{}, err
	}
	return d, nil
}

// reasonedRows hands add each row of rel that m derived, with its reason
// (the row's rule id is its second column).
func reasonedRows(m *logic.Materialization, rel string, add func(row []logic.Value, why Reason)) error {
	rows, err := m.Tuples(rel, false)
	if err != nil {
		return err
	}
	for _, r := range rows {
		why, err := provenance(m, logic.Fact{Rel: rel, Args: r}, r[1].Str())
		if err != nil {
			return err
		}
		add(r, why)
	}
	return nil
}

// provenance names the rule instance behind a derived fact: the rule id
// the policy wrote into the head, the rule's source position, the facts it
// matched and the absences it relied on.
func provenance(m *logic.Materialization, f logic.Fact, rule string) (Reason, error) {
	sups, err := m.Supports(f)
	if err != nil {
		return Reason{}, err
	}
	why := Reason{Rule: rule, Facts: []string{}, Absent: []string{}}
	if len(sups) == 0 {
		return why, nil
	}
	s := sups[0]
	for _, p := range s.Premises {
		why.Facts = append(why.Facts, p.String())
	}
	for _, a := range s.Absent {
		why.Absent = append(why.Absent, a.String())
	}
	for _, a := range s.Aggregates {
		why.Facts = append(why.Facts, a.String())
	}
	if s.Base {
		why.Detail = "asserted as a base fact"
	} else {
		why.Detail = s.RulePos.String()
	}
	return why, nil
}

// Policy is a compiled gate policy: Datalog rules over ticket facts. It is
// immutable and may be shared.
type Policy struct {
	Version string
	Digest  string
	// Flat reports that the policy is evaluated by the direct evaluator
	// for flat policies (see flat.go) rather than by the logic engine.
	Flat   bool
	engine ruleEngine
	oracle ruleEngine
	// digest is Digest as compiled: mustDigest's form, a digest or the
	// "invalid:" form, so it needs no escaping. Digest is the caller's to
	// change; a decision remembers this one as plain (strArena.plain), and
	// a Digest still equal to it is written without the test.
	digest string
	// maxQuorum is the largest count a quorum rule's head writes, 0 when
	// the policy derives no quorum.
	maxQuorum int
	// approvers are the names approver rules' heads write, sorted, nil
	// when the policy names none.
	approvers []string
	// rules are the policy's rules that write an output, by rule id.
	rules []RuleRef
}

// RuleRef is a rule of a gate policy that writes one of the gates'
// outputs: its rule id (the head's rule column, "" where the head writes
// a variable there), the output relation and where it stands.
type RuleRef struct {
	ID       string
	Relation string
	Pos      logic.Pos
}

// Rules lists the policy's rules that write an output, in source order:
// what a decision's, an assessment's, a quorum's or an approver's reason
// names by its rule id (Reason.Rule), so that a policy's tests can tell
// which rules none of them exercised.
func (p *Policy) Rules() []RuleRef { return slices.Clone(p.rules) }

// outputRules lists prog's clauses that write an output, by rule id: a
// decision's third column, every other output's second.
func outputRules(prog *logic.Program) []RuleRef {
	var out []RuleRef
	for _, cl := range prog.Clauses {
		col := 1
		if cl.Head.Name == "decision" {
			col = 2
		}
		if !gateOutputs[cl.Head.Name] || cl.Head.Neg || col >= len(cl.Head.Args) {
			continue
		}
		ref := RuleRef{Relation: cl.Head.Name, Pos: cl.Pos}
		if id, ok := cl.Head.Args[col].(*logic.SymConst); ok {
			ref.ID = id.Val
		}
		out = append(out, ref)
	}
	return out
}

// ApproverRelation is the relation a gate policy may declare and derive,
// approver(name, rule), to say who must answer an approval request for
// the ticket: a person or group the workflow's approval policy knows
// (production restarts by the SRE leads, refunds by finance). A request
// no rule names an approver for goes to the approval policy's approver.
// The name is written in each rule's head, so the workflow can tell
// before any run that it knows everyone its gates may name; where the
// rules that fire name more than one, the action is held.
const ApproverRelation = "approver"

// Approvers lists the names the policy's approver rules may give, sorted:
// a workflow checks each against the people and groups it knows.
func (p *Policy) Approvers() []string { return slices.Clone(p.approvers) }

// checkHeads checks the relation rel a policy may declare to ask something
// of an approval (QuorumRelation, ApproverRelation): declared, it must be
// (first, symbol), as decl spells it, and check must accept the head of
// every rule deriving it. A policy that does not declare it passes.
func checkHeads(c *logic.Compiled, prog *logic.Program, rel, decl string, first logic.Type, check func(*logic.AtomExpr) error) error {
	ts, declared := c.SharedSchema(rel)
	if !declared {
		return nil
	}
	if len(ts) != 2 || ts[0] != first || ts[1] != logic.TypeSymbol {
		return &PolicyError{fmt.Errorf("relation %s must be declared .decl %s(%s)", rel, rel, decl)}
	}
	for _, cl := range prog.Clauses {
		if cl.Head.Name != rel {
			continue
		}
		if err := check(cl.Head); err != nil {
			return &PolicyError{err}
		}
	}
	return nil
}

// checkApproverHead checks an approver rule's head: a positive atom whose
// name and rule id are strings written in the head. It returns the name.
func checkApproverHead(h *logic.AtomExpr) (string, error) {
	if h.Neg {
		return "", fmt.Errorf("%s: approver cannot be derived false: a rule names who approves", h.Pos)
	}
	if len(h.Args) != 2 {
		return "", fmt.Errorf("%s: approver takes a name and a rule id, approver(\"sre-leads\", \"g2.production\")", h.Pos)
	}
	n, ok := h.Args[0].(*logic.SymConst)
	if !ok {
		return "", fmt.Errorf("%s: approver's name must be a string written in the rule's head, not %s", h.Pos, h.Args[0])
	}
	if !ValidID(n.Val) {
		return "", fmt.Errorf("%s: approver's name %q is not an id", n.Pos, n.Val)
	}
	if _, ok := h.Args[1].(*logic.SymConst); !ok {
		return "", fmt.Errorf("%s: approver's rule id must be a string written in the rule's head, not %s", h.Pos, h.Args[1])
	}
	return n.Val, nil
}

// QuorumRelation is the relation a gate policy may declare and derive,
// quorum(n, rule), to ask that n people each approve an action the gates
// send to a person (ASK_FIRST, or high risk): the four-eyes rule for a
// large payment, one approval below the limit. The count is written in
// each rule's head, from 2 to MaxQuorum; where several rules fire, the
// largest count stands. The quorum only ever adds people: a request no
// rule names needs as many as the workflow's approval policy says.
const QuorumRelation = "quorum"

// MaxQuorum bounds a quorum rule's count (as the workflow bounds a group
// of approvers).
const MaxQuorum = 100

// MaxQuorum is the largest count the policy's quorum rules ask for, 0 when
// it has none: a workflow checks it against the people who may approve.
func (p *Policy) MaxQuorum() int { return p.maxQuorum }

// checkQuorumHead checks a quorum rule's head: a positive atom whose count
// is a number from 2 to MaxQuorum and whose rule id is a constant, so that
// the workflow can tell before any run whether its approvers can ever meet
// it. It returns the count.
func checkQuorumHead(h *logic.AtomExpr) (int, error) {
	if h.Neg {
		return 0, fmt.Errorf("%s: quorum cannot be derived false: a rule only asks for more people", h.Pos)
	}
	if len(h.Args) != 2 {
		return 0, fmt.Errorf("%s: quorum takes a count and a rule id, quorum(2, \"g2.large-refund\")", h.Pos)
	}
	n, ok := h.Args[0].(*logic.NumConst)
	if !ok {
		return 0, fmt.Errorf("%s: quorum's count must be a number written in the rule's head, not %s", h.Pos, h.Args[0])
	}
	if n.Val < 2 || n.Val > MaxQuorum {
		return 0, fmt.Errorf("%s: quorum's count must be from 2 to %d (one person's approval is what every request needs already), not %d", n.Pos, MaxQuorum, n.Val)
	}
	if _, ok := h.Args[1].(*logic.SymConst); !ok {
		return 0, fmt.Errorf("%s: quorum's rule id must be a string written in the rule's head, not %s", h.Pos, h.Args[1])
	}
	return int(n.Val), nil
}

// Quorum is how many people the policy asks to approve the ticket (0 when
// no quorum rule fires) and the rule instance that asks for the most;
// extra are the ticket's further facts, as for Evaluate. It evaluates the
// policy as Evaluate does (the direct evaluator for flat policies); one
// that fails to evaluate, or derives a quorum both true and false, is an
// error. Authorize reads the quorum from the evaluation it makes anyway.
func (p *Policy) Quorum(t Ticket, extra ...logic.Fact) (int, Reason, error) {
	if p.maxQuorum == 0 {
		return 0, Reason{}, nil
	}
	d, err := p.engine.derive(TicketFacts(t, extra...))
	if err != nil {
		return 0, Reason{}, err
	}
	n, why := bestQuorum(d.quorums)
	return n, why, nil
}

// Delegates reports whether the policy lets the controller choose among the
// options offered for the ticket: it derives autonomous_choice(t) with
// positive support only (a conflict never delegates). A policy that does
// not declare the relation, or fails to evaluate, delegates nothing.
func (p *Policy) Delegates(t Ticket, extra ...logic.Fact) bool {
	le, ok := p.oracle.(logicEngine)
	if !ok {
		return false
	}
	if s, declared := le.c.Schema(AutonomousChoice); !declared || len(s) != 1 {
		return false
	}
	m, err := logic.Evaluate(le.c, TicketFacts(t, extra...), le.lim)
	if err != nil {
		return false
	}
	st, err := m.State(logic.Fact{Rel: AutonomousChoice, Args: []logic.Value{logic.Sym(t.TicketID)}})
	return err == nil && st == logic.TrueOnly
}

// PolicyError is a policy that does not compile.
type PolicyError struct{ Err error }

func (e *PolicyError) Error() string { return "gate policy: " + e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }

// CompilePolicy checks and compiles a gate policy. filename is used in
// error positions; limits bound every evaluation (a policy that exceeds
// them fails closed).
func CompilePolicy(version, filename string, rules []byte, limits logic.Limits) (*Policy, error) {
	if !ValidID(version) {
		return nil, &PolicyError{fmt.Errorf("version %q is not a protocol id", version)}
	}
	src := append(append([]byte(nil), rules...), GateVocabulary...)
	prog, err := logic.Parse(filename, src)
	if err != nil {
		return nil, &PolicyError{err}
	}
	c, err := logic.Check(prog)
	if err != nil {
		return nil, &PolicyError{err}
	}
	inputs := map[string]bool{}
	for _, rel := range c.Inputs() {
		if !strings.Contains(GateVocabulary, ".input "+rel+"\n") {
			return nil, &PolicyError{fmt.Errorf("relation %s: a policy reads only the ticket vocabulary", rel)}
		}
		inputs[rel] = true
	}
	for _, cl := range prog.Clauses {
		if inputs[cl.Head.Name] {
			return nil, &PolicyError{fmt.Errorf("%s: a policy cannot assert ticket facts (%s)", cl.Pos, cl.Head.Name)}
		}
		if err := checkDecisionHead(cl.Head); err != nil {
			return nil, &PolicyError{err}
		}
	}
	maxQuorum := 0
	if err := checkHeads(c, prog, QuorumRelation, "n: number, rule: symbol", logic.TypeNumber, func(h *logic.AtomExpr) error {
		n, err := checkQuorumHead(h)
		maxQuorum = max(maxQuorum, n)
		return err
	}); err != nil {
		return nil, err
	}
	var approvers []string
	if err := checkHeads(c, prog, ApproverRelation, "name: symbol, rule: symbol", logic.TypeSymbol, func(h *logic.AtomExpr) error {
		name, err := checkApproverHead(h)
		if err == nil && !slices.Contains(approvers, name) {
			approvers = append(approvers, name)
		}
		return err
	}); err != nil {
		return nil, err
	}
	slices.Sort(approvers)
	digest := mustDigest(map[string]any{"kind": "GatePolicyPreimage", "version": version, "rules": string(rules)})
	oracle := logicEngine{c, limits}
	p := &Policy{Version: version, Digest: digest, engine: oracle, oracle: oracle, digest: digest, maxQuorum: maxQuorum, approvers: approvers,
		rules: outputRules(prog)}
	if flat := compileFlat(prog, inputs, limits); flat != nil {
		p.engine, p.Flat = flat, true
	}
	return p, nil
}

// GateResult is one gate's decision over one ticket.
type GateResult struct {
	Gate     string   `json:"gate"`
	Decision Decision `json:"decision"`
	Reasons  []Reason `json:"reasons"`
	// Error is set when the gate could not be evaluated; the gate then
	// refuses.
	Error string `json:"error"`
}

// Evaluation is what the gates concluded about one ticket.
type Evaluation struct {
	Gates        []GateResult `json:"gates"`
	Signals      []Signal     `json:"signals"`
	AssessedRisk string       `json:"assessed_risk"`
	RiskReasons  []Reason     `json:"risk_reasons"`
	// asked is what the policy asks of an approval of the ticket, should
	// it go to a person (how many people, which approver), nil when it
	// asks nothing: no part of the gates' record, read by Authorize when
	// it asks for an approval. It is behind a pointer: an outcome holds its
	// evaluation, and a batch of one's records keep to a size class.
	asked *approvalAsked
}

// approvalAsked is what a gate policy asks of an approval of one ticket.
type approvalAsked struct {
	quorum    int
	quorumWhy *Reason
	// approver is the approver the policy names (ApproverRelation), with
	// the reason; approvers lists the names when its rules name more than
	// one, and approver is then "".
	approver    string
	approverWhy *Reason
	approvers   []string
}

// riskRank orders the risk vocabulary (READ_ONLY 1 to
// HIGH_RISK_EXTERNAL 3); anything else is 0 and not ok.
func riskRank(r string) (rank int, ok bool) {
	switch r {
	case RiskReadOnly:
		return 1, true
	case RiskReversible:
		return 2, true
	case RiskHighRiskExternal:
		return 3, true
	}
	return 0, false
}

// TicketFacts renders a ticket as gate input facts. extra facts (such as
// capability and mode facts established by the caller) are appended.
func TicketFacts(t Ticket, extra ...logic.Fact) []logic.Fact {
	n := 8 + len(t.SideEffects) + len(t.Parameters) + len(t.MissingFields)
	// One backing array for every fact's arguments: a ticket has a few
	// dozen facts at most, each with at most three arguments.
	return appendTicketFacts(make([]logic.Fact, 0, n+len(extra)), make([]logic.Value, 0, 3*n+extraArgs(extra)), t, extra)
}

// ticketFactBufs recycles the fact and argument arrays an evaluation
// renders a ticket into: the engines read them and copy what they keep,
// so once Evaluate has its result no reference to them remains.
var ticketFactBufs = sync.Pool{New: func() any { return new(ticketFactBuf) }}

type ticketFactBuf struct {
	facts []logic.Fact
	args  []logic.Value
	// decisions and risks receive what the flat engine derives; Evaluate
	// copies each out by value.
	decisions []derivedDecision
	risks     []derivedRisk
}

// appendTicketFacts is TicketFacts into the given arrays. Callers size
// args for three arguments per fact, so it is not grown (were it grown,
// the facts already made would keep the arguments they were given).
func appendTicketFacts(facts []logic.Fact, args []logic.Value, t Ticket, extra []logic.Fact) []logic.Fact {
	return appendTicketFactsKeyed(facts, args, t, nil, extra)
}

// appendTicketFactsKeyed is appendTicketFacts with the parameters' sorted
// names given (nil: sorted here).
func appendTicketFactsKeyed(facts []logic.Fact, args []logic.Value, t Ticket, keys []string, extra []logic.Fact) []logic.Fact {
	id := logic.Sym(t.TicketID)
	f := func(rel string, vals ...logic.Value) logic.Fact {
		start := len(args)
		args = append(args, id)
		args = append(args, vals...)
		return logic.Fact{Rel: rel, Args: args[start:len(args):len(args)]}
	}
	facts = append(facts, f("ticket"))
	if t.Action != "" {
		facts = append(facts, f("action", logic.Sym(t.Action)))
	}
	if t.Destination != "" {
		facts = append(facts, f("destination", logic.Sym(t.Destination)))
	}
	if t.Scope != "" {
		facts = append(facts, f("scope", logic.Sym(t.Scope)))
	}
	for _, s := range t.SideEffects {
		facts = append(facts, f("side_effect", logic.Sym(string(s))))
	}
	if t.DeclaredRisk != "" {
		facts = append(facts, f("declared_risk", logic.Sym(t.DeclaredRisk)))
	}
	var keysArr [16]string
	if keys == nil {
		keys = appendSortedKeys(keysArr[:0], t.Parameters)
	}
	for _, k := range keys {
		switch v := t.Parameters[k].(type) {
		case int64:
			facts = append(facts, f("param_num", logic.Sym(k), logic.Num(v)))
		case string:
			facts = append(facts, f("param_sym", logic.Sym(k), logic.Sym(v)))
		case bool:
			facts = append(facts, f("param_sym", logic.Sym(k), logic.Sym(fmt.Sprint(v))))
		default:
			// Structured parameters are digested into a symbol, so a rule
			// can still pin their exact content.
			b, _ := cjson.Encode(v)
			facts = append(facts, f("param_sym", logic.Sym(k), logic.Sym(cjson.Digest(b))))
		}
	}
	if t.Completeness == Complete {
		facts = append(facts, f("complete"))
	}
	for _, m := range t.MissingFields {
		facts = append(facts, f("missing", logic.Sym(m)))
	}
	// The extra facts' arguments are copied into args like the ticket's
	// own, so that the caller's facts are only read: a caller can build
	// them on its stack (Authorize does) and nothing keeps them.
	for _, e := range extra {
		start := len(args)
		args = append(args, e.Args...)
		facts = append(facts, logic.Fact{Rel: extraRel(e.Rel), Neg: e.Neg, Args: args[start:len(args):len(args)]})
	}
	return facts
}

// evalRecords is where Evaluate's lists live: the gates' results, their
// room for their signals (at most one a gate; most tickets get one or
// two) and for their reasons.
type evalRecords struct {
	gates   [5]GateResult
	signals [2]Signal
	reasons [4]Reason
	// slots is room for the lists of fact strings of the reasons.
	slots [8]string
}

// gateAcc is one slot per gate in Evaluate, in Gates order: the gate's
// result, its (decision, reason) pairs, options and constraints.
type gateAcc struct {
	res GateResult
	// first holds, by decision, 1 + the index in res.Reasons of the
	// first reason that gave it (0: none yet).
	first   [len(decisionNames)]int
	options []string
	cons    []Constraint
}

// carveReasons gives every gate's reasons and the risk reasons one
// shared backing array, counted first, instead of one array each: each
// gate gets a slice of it as long as its decisions (G2 one longer, for
// the default deny), capped so that no gate's reasons run into the next.
// The slices are empty and not nil, as before; only where their elements
// live changes.
func carveReasons(acc []gateAcc, ev *Evaluation, d derived, room []Reason) {
	var countArr [8]int
	if len(acc) > len(countArr) {
		return // each keeps its own array
	}
	count := countArr[:len(acc)]
	g2 := slices.Index(Gates, GateG2)
	if g2 < 0 || g2 >= len(count) {
		return
	}
	count[g2]++ // the default deny
	for _, dd := range d.decisions {
		k := slices.Index(Gates, dd.gate)
		if k < 0 || k >= len(count) {
			k = g2 // an unknown gate's decision is G2's refusal
		}
		count[k]++
	}
	total := len(d.risks)
	for _, c := range count {
		total += c
	}
	var all []Reason
	if total <= len(room) {
		all = room[:total:total]
	} else {
		all = make([]Reason, total)
	}
	off := 0
	for k, c := range count {
		acc[k].res.Reasons = all[off : off : off+c]
		off += c
	}
	ev.RiskReasons = all[off:off:total]
}

// extraRel is rel, as this package's constant where it is one of the
// relations callers add: escape analysis does not tell a fact's fields
// apart, so keeping the caller's string would make every array its facts
// point to escape with it. Any other name is copied, for the same reason.
func extraRel(rel string) string {
	switch rel {
	case "capability":
		return "capability"
	case "mode":
		return "mode"
	case "chosen":
		return "chosen"
	case "resumed":
		return "resumed"
	}
	return strings.Clone(rel)
}

// extraArgs counts the arguments of extra facts, which appendTicketFacts
// copies into the same array as the ticket's.
func extraArgs(extra []logic.Fact) int {
	n := 0
	for _, e := range extra {
		n += len(e.Args)
	}
	return n
}

// CapabilityFact states that a verified capability covers the ticket.
func CapabilityFact(ticketID, capabilityID string) logic.Fact {
	return logic.Fact{Rel: "capability", Args: []logic.Value{logic.Sym(ticketID), logic.Sym(capabilityID)}}
}

// ModeFact states a runtime mode, such as "degraded_safe".
func ModeFact(mode string) logic.Fact {
	return logic.Fact{Rel: "mode", Args: []logic.Value{logic.Sym(mode)}}
}

// checkDecisionHead refuses, when the policy is loaded, a decision rule
// whose gate or verdict is written as a constant the matrix does not know:
// a misspelt gate ("G9") or verdict ("ALOW") would otherwise surface only
// as a refusal at evaluation time, filed under G2. A gate or verdict bound
// from the ticket's facts can only be judged then, so Evaluate still
// refuses those closed.
func checkDecisionHead(h *logic.AtomExpr) error {
	if h.Name != "decision" || h.Neg || len(h.Args) != 3 {
		return nil
	}
	if g, ok := h.Args[0].(*logic.SymConst); ok && !isGate(g.Val) {
		return fmt.Errorf("%s: decision names unknown gate %q (the gates are %s)", g.Pos, g.Val, strings.Join(Gates, ", "))
	}
	if v, ok := h.Args[1].(*logic.SymConst); ok {
		if _, known := ParseDecision(v.Val); !known {
			return fmt.Errorf("%s: decision names unknown verdict %q (the verdicts are %s)", v.Pos, v.Val, strings.Join(decisionNames[1:], ", "))
		}
	}
	return nil
}

// Evaluate runs every gate over a ticket. Deny by default: when no G2
// (policy) rule decides, G2 refuses. Fail closed: a policy that fails to
// evaluate makes every gate refuse, and a decision naming an unknown gate
// or verdict makes its gate (or, for an unknown gate, G2) refuse; nothing
// that errs can allow. G1, H1, G3 and G4 object only when a rule fires.
func (p *Policy) Evaluate(t Ticket, extra ...logic.Fact) Evaluation {
	return p.evaluate(nil, t, extra...)
}

// evaluate is Evaluate with its lists in rec (a new one when nil).
func (p *Policy) evaluate(rec *evalRecords, t Ticket, extra ...logic.Fact) Evaluation {
	return p.evaluateKeyed(rec, t, nil, extra...)
}

// evaluateKeyed is evaluate with the parameters' sorted names given (nil:
// sorted here).
func (p *Policy) evaluateKeyed(rec *evalRecords, t Ticket, keys []string, extra ...logic.Fact) Evaluation {
	return p.evaluateIn(rec, nil, t, keys, extra...)
}

// evaluateIn is evaluateKeyed with the reasons' fact strings cut from a
// (a decision's arena; nil: a buffer of the run's own).
func (p *Policy) evaluateIn(rec *evalRecords, a *strArena, t Ticket, keys []string, extra ...logic.Fact) Evaluation {
	if rec == nil {
		rec = new(evalRecords)
	}
	buf := ticketFactBufs.Get().(*ticketFactBuf)
	n := 8 + len(t.SideEffects) + len(t.Parameters) + len(t.MissingFields)
	if na := 3*n + extraArgs(extra); cap(buf.args) < na {
		buf.args = make([]logic.Value, 0, na)
	}
	facts := appendTicketFactsKeyed(buf.facts[:0], buf.args[:0], t, keys, extra)
	var d derived
	var err error
	if fe, ok := p.engine.(*flatEngine); ok {
		// The derived decisions and risks are read here and copied into
		// the evaluation: their arrays are recycled with the facts'.
		d, err = fe.deriveInto(facts, derived{decisions: buf.decisions, risks: buf.risks, slots: rec.slots[:]}, a)
	} else {
		d, err = p.engine.derive(facts)
	}
	// The engines copied what they keep: the arrays go back as they are,
	// to be overwritten by the next ticket (see flatScratch on why they
	// are not cleared), once the evaluation is built.
	buf.facts = facts[:0]
	defer func() {
		if d.decisions != nil {
			buf.decisions = d.decisions[:0]
		}
		if d.risks != nil {
			buf.risks = d.risks[:0]
		}
		ticketFactBufs.Put(buf)
	}()
	// The gates' results, their signals and (when they fit) their
	// reasons share one allocation.
	ev := Evaluation{RiskReasons: []Reason{}}
	if len(Gates) <= len(rec.gates) {
		ev.Gates = rec.gates[:0:len(Gates)]
	} else {
		ev.Gates = make([]GateResult, 0, len(Gates))
	}
	var accArr [8]gateAcc // the five gates, on the stack
	acc := accArr[:0]
	if len(Gates) <= len(accArr) {
		acc = accArr[:len(Gates)]
	} else {
		acc = make([]gateAcc, len(Gates))
	}
	for k, g := range Gates {
		acc[k].res = GateResult{Gate: g, Reasons: []Reason{}}
	}
	slot := func(g string) *gateAcc { return &acc[slices.Index(Gates, g)] }
	if err != nil {
		msg := "gate evaluation failed: " + err.Error()
		for k := range acc {
			r := &acc[k].res
			r.Decision, r.Error = Refuse, msg
			r.Reasons = []Reason{{Rule: "fail-closed", Facts: []string{}, Absent: []string{}, Detail: msg}}
		}
	} else {
		carveReasons(acc, &ev, d, rec.reasons[:])
		for _, dd := range d.decisions {
			verdict, ok := ParseDecision(dd.verdict)
			gate := dd.gate
			if !isGate(gate) {
				gate, verdict, ok = GateG2, Refuse, true
				dd.why.Detail = fmt.Sprintf("decision names unknown gate %q: refused", dd.gate)
			}
			a := slot(gate)
			r := &a.res
			if !ok {
				r.Error = fmt.Sprintf("rule %s: unknown verdict %q", dd.rule, dd.verdict)
				verdict = Refuse
			}
			if verdict > r.Decision {
				r.Decision = verdict
			}
			r.Reasons = append(r.Reasons, dd.why)
			if a.first[verdict] == 0 { // verdict is a parsed decision or Refuse
				a.first[verdict] = len(r.Reasons)
			}
			if verdict == ShapeDecision {
				for _, c := range d.caps[[2]string{dd.gate, dd.rule}] {
					con := Constraint{Gate: gate, Rule: dd.rule}
					if c.scope != "" {
						con.Field, con.Scope = "scope", c.scope
					} else {
						m := c.max
						con.Field, con.Max = "parameters/"+c.param, &m
					}
					a.cons = append(a.cons, con)
				}
			}
			for _, o := range d.options[[2]string{dd.gate, dd.rule}] {
				a.options = appendUnique(a.options, o)
			}
		}
		if g2 := &slot(GateG2).res; g2.Decision == NoDecision {
			g2.Decision = Refuse
			g2.Reasons = append(g2.Reasons, Reason{Rule: "default-deny", Facts: []string{}, Absent: []string{}, Detail: "no policy rule decides this ticket"})
		}
		if len(d.quorums) > 0 || len(d.approvers) > 0 {
			// The reasons outlive the engines' recycled buffers: their
			// lists are copied (only when a quorum or approver rule fired).
			ev.asked = new(approvalAsked)
			if len(d.quorums) > 0 {
				n, why := bestQuorum(d.quorums)
				why.Facts, why.Absent = slices.Clone(why.Facts), slices.Clone(why.Absent)
				ev.asked.quorum, ev.asked.quorumWhy = n, &why
			}
			if len(d.approvers) > 0 {
				name, why, names, one := chosenApprover(d.approvers)
				if one {
					why.Facts, why.Absent = slices.Clone(why.Facts), slices.Clone(why.Absent)
					ev.asked.approver, ev.asked.approverWhy = name, &why
				} else {
					ev.asked.approvers = names
				}
			}
		}
		for _, r := range d.risks {
			rr, ok := riskRank(r.risk)
			if !ok {
				continue
			}
			if cur, _ := riskRank(ev.AssessedRisk); rr > cur {
				ev.AssessedRisk = r.risk
			}
			ev.RiskReasons = append(ev.RiskReasons, r.why)
		}
	}
	for k, g := range Gates {
		a := &acc[k]
		r := a.res
		ev.Gates = append(ev.Gates, r)
		if r.Decision == NoDecision {
			continue
		}
		why := r.Reasons[0]
		if i := a.first[r.Decision]; i > 0 {
			why = r.Reasons[i-1] // the first (lowest rule id) rule that gave the final decision
		}
		s := GateSignal(g, r.Decision, why)
		s.Options = a.options
		sort.Strings(s.Options)
		s.Constraints = a.cons
		if ev.Signals == nil {
			// The list stays nil when no gate decides; appending past
			// the array's room copies it out.
			ev.Signals = rec.signals[:0:len(rec.signals)]
		}
		ev.Signals = append(ev.Signals, s)
	}
	return ev
}
