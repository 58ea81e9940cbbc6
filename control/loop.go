package control

import (
	_ "embed"
	"slices"

	"flrh.dev/flrh/cjson"
)

// ContractFormat is the format marker of a loop contract.
const ContractFormat = "flrh-loop-contract/1"

//go:embed loopcontract.json
var defaultContract []byte

// DefaultContractText returns a copy of the embedded loop contract.
func DefaultContractText() []byte { return slices.Clone(defaultContract) }

// Ceilings no contract may exceed, whatever it declares. They keep the
// arithmetic far from int64 overflow and bound what one run can ask for.
const (
	MaxRetriesCeiling = 15                  // at most 16 attempts per transition
	MaxBackoffMillis  = 24 * 60 * 60 * 1000 // one day
	MaxWindowRounds   = 1024
)

// Contract is a loaded loop contract, bound to one machine by digest.
type Contract struct {
	Digest             string // digest of the contract's canonical bytes
	Name               string
	Tier               string
	WorkflowVersion    string
	StateSchemaVersion string
	MachineDigest      string

	ExternalEffect EffectPath
	Budgets        Budgets
	NoProgress     NoProgress
	Retry          RetryPolicy

	IdempotencyFields []string
	ApprovalFields    []string
	ApprovalOneTime   bool
	ApprovalStale     string
	CheckpointFields  []string
	TraceFields       []string
}

// EffectPath names the states a high-risk external effect passes through.
type EffectPath struct {
	Approval, Authorization, Execution, Reconciliation  string
	UnknownOutcome, PostReconciliation, Abandon, Resume string
}

// DefaultContract loads the embedded loop contract against the embedded
// table. Like Default, a failure is a build defect and panics.
func DefaultContract() *Contract {
	c, err := LoadContract(defaultContract, Default())
	if err != nil {
		panic("control: embedded loop contract is invalid: " + err.Error())
	}
	return c
}

// IdempotencyKeyFields is the exact, ordered preimage field list of an
// idempotency key. A contract must declare exactly these.
var IdempotencyKeyFields = []string{"run_id", "transition_id", "effect_sequence", "action_digest", "adapter_version"}

// LoadContract parses a loop contract and binds it to m. It fails with a
// BINDING error when the contract names another table digest, or when the
// terminal outcomes, effect-critical states, safety properties or external
// effect path disagree with the machine.
func LoadContract(text []byte, m *Machine) (*Contract, error) {
	v, err := decodeStrict(text)
	if err != nil {
		return nil, err
	}
	canon, err := cjson.Encode(v)
	if err != nil {
		return nil, &Error{Code: CodeSyntax, Detail: err.Error(), Err: err}
	}
	root, err := asObj(v, "")
	if err != nil {
		return nil, err
	}
	format, err := root.str("format", true, nil)
	if err != nil {
		return nil, err
	}
	if format != ContractFormat {
		return nil, errorf(CodeFormat, "/format", "format is %q, this code reads %q", format, ContractFormat)
	}
	c := &Contract{Digest: cjson.Digest(canon)}
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &c.Name}, {"tier", &c.Tier}, {"workflow_version", &c.WorkflowVersion}, {"state_schema_version", &c.StateSchemaVersion}} {
		if *f.dst, err = root.str(f.key, true, nil); err != nil {
			return nil, err
		}
		if *f.dst == "" {
			return nil, errorf(CodeSchema, child("", f.key), "must not be empty")
		}
	}
	if err := c.bindFSM(root, m); err != nil {
		return nil, err
	}
	if err := c.parseEffectPath(root, m); err != nil {
		return nil, err
	}
	if err := c.parseBudgets(root, m); err != nil {
		return nil, err
	}
	if err := c.parseNoProgress(root, m); err != nil {
		return nil, err
	}
	if err := c.parseRetry(root, m); err != nil {
		return nil, err
	}
	if c.IdempotencyFields, err = root.strings("idempotency_key", true, true, nil); err != nil {
		return nil, err
	}
	if !slices.Equal(c.IdempotencyFields, IdempotencyKeyFields) {
		return nil, errorf(CodeBinding, "/idempotency_key", "idempotency key fields are %v, want exactly %v", c.IdempotencyFields, IdempotencyKeyFields)
	}
	ap, err := root.object("approval", true)
	if err != nil {
		return nil, err
	}
	if c.ApprovalFields, err = ap.strings("binding_fields", true, true, reSnake()); err != nil {
		return nil, err
	}
	if c.ApprovalOneTime, err = ap.boolean("one_time", true); err != nil {
		return nil, err
	}
	if !c.ApprovalOneTime {
		return nil, errorf(CodeBinding, "/approval/one_time", "approvals must be one-time")
	}
	if c.ApprovalStale, err = ap.str("stale_state", true, reUpperID()); err != nil {
		return nil, err
	}
	if s, ok := m.State(c.ApprovalStale); !ok || s.Final() {
		return nil, errorf(CodeBinding, "/approval/stale_state", "stale approvals must return to a non-final state of the machine, not %q", c.ApprovalStale)
	}
	if err := ap.done(); err != nil {
		return nil, err
	}
	if c.CheckpointFields, err = root.strings("checkpoint_fields", true, true, nil); err != nil {
		return nil, err
	}
	if !slices.Contains(c.CheckpointFields, "pending interrupts") {
		return nil, errorf(CodeBinding, "/checkpoint_fields", "a checkpoint must persist the pending interrupts")
	}
	if c.TraceFields, err = root.strings("trace_fields", true, true, reSnake()); err != nil {
		return nil, err
	}
	if err := root.done(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Contract) bindFSM(root *obj, m *Machine) error {
	f, err := root.object("fsm", true)
	if err != nil {
		return err
	}
	id, err := f.str("machine", true, nil)
	if err != nil {
		return err
	}
	if id != m.ID() {
		return errorf(CodeBinding, "/fsm/machine", "contract binds machine %q, table is %q", id, m.ID())
	}
	if c.MachineDigest, err = f.str("digest", true, nil); err != nil {
		return err
	}
	if c.MachineDigest != m.Digest() {
		return errorf(CodeBinding, "/fsm/digest", "contract binds table %s, loaded table is %s", c.MachineDigest, m.Digest())
	}
	outcomes, err := f.strings("terminal_outcomes", true, true, nil)
	if err != nil {
		return err
	}
	var have []string
	for _, s := range m.States() {
		if s.Final() {
			have = append(have, s.Outcome)
		}
	}
	if !sameSet(outcomes, have) {
		return errorf(CodeBinding, "/fsm/terminal_outcomes", "contract requires outcomes %v, table has %v", outcomes, have)
	}
	critical, err := f.strings("effect_critical_states", true, true, nil)
	if err != nil {
		return err
	}
	if !sameSet(critical, m.DeferredIn()) {
		return errorf(CodeBinding, "/fsm/effect_critical_states", "contract names %v, table defers interrupts in %v", critical, m.DeferredIn())
	}
	props, err := f.strings("safety_properties", true, true, nil)
	if err != nil {
		return err
	}
	if !sameSet(props, SafetyProperties) {
		return errorf(CodeBinding, "/fsm/safety_properties", "contract requires %v; the machine proves exactly %v", props, SafetyProperties)
	}
	return f.done()
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func (c *Contract) parseEffectPath(root *obj, m *Machine) error {
	o, err := root.object("external_effect", true)
	if err != nil {
		return err
	}
	p := &c.ExternalEffect
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"approval_state", &p.Approval}, {"authorization_state", &p.Authorization}, {"execution_state", &p.Execution},
		{"reconciliation_state", &p.Reconciliation}, {"unknown_outcome_state", &p.UnknownOutcome},
		{"post_reconciliation_state", &p.PostReconciliation}, {"abandon_terminal", &p.Abandon}, {"resume_state", &p.Resume},
	} {
		if *f.dst, err = o.str(f.key, true, reUpperID()); err != nil {
			return err
		}
		if _, ok := m.State(*f.dst); !ok {
			return errorf(CodeBinding, child(o.ptr, f.key), "state %q is not in the machine", *f.dst)
		}
	}
	if err := o.done(); err != nil {
		return err
	}
	// Each hop of the high-risk path must be a transition of the machine.
	for _, hop := range []struct{ from, event, to string }{
		{p.Approval, "APPROVAL_GRANTED", p.Authorization},
		{p.Authorization, "INTENT_COMMITTED", p.Execution},
		{p.Execution, "ATTEMPT_RECORDED", p.Reconciliation},
		{p.Reconciliation, "OUTCOME_UNKNOWN", p.UnknownOutcome},
		{p.UnknownOutcome, EventAbandon, p.Abandon},
		{p.PostReconciliation, m.resumeEvent, p.Resume},
	} {
		i, ok := m.byEdge[edge{hop.from, hop.event}]
		if !ok || m.transitions[i].To != hop.to {
			return errorf(CodeBinding, "/external_effect", "the machine has no transition %s --%s--> %s", hop.from, hop.event, hop.to)
		}
	}
	if !m.Final(p.Abandon) {
		return errorf(CodeBinding, "/external_effect/abandon_terminal", "%q is not final", p.Abandon)
	}
	return nil
}

// eventOf reads an event name that must be declared by the machine.
func eventOf(o *obj, key string, m *Machine) (string, error) {
	e, err := o.str(key, true, reUpperID())
	if err != nil {
		return "", err
	}
	if _, ok := m.eventIdx[e]; !ok {
		return "", errorf(CodeBinding, child(o.ptr, key), "event %q is not in the machine", e)
	}
	return e, nil
}

// positive reads a required integer in [1, max].
func positive(o *obj, key string, max int64) (int64, error) {
	n, _, err := o.integer(key, true)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > max {
		return 0, errorf(CodeLimit, child(o.ptr, key), "%d is outside [1, %d]", n, max)
	}
	return n, nil
}

// maxLimit bounds every budget so that sums of two in-range values and the
// soft-boundary products (value*100) cannot overflow int64.
const maxLimit = int64(1) << 52

func (c *Contract) parseBudgets(root *obj, m *Machine) error {
	o, err := root.object("budgets", true)
	if err != nil {
		return err
	}
	b := &c.Budgets
	for _, f := range []struct {
		key string
		dst *int64
		max int64
	}{
		{"steps", &b.Limits.Steps, maxLimit}, {"tool_calls", &b.Limits.ToolCalls, maxLimit},
		{"wall_seconds", &b.Limits.WallSeconds, maxLimit}, {"suspended_seconds", &b.Limits.SuspendedSeconds, maxLimit},
		{"tokens", &b.Limits.Tokens, maxLimit}, {"cost_micros", &b.Limits.CostMicros, maxLimit},
		{"recursion_depth", &b.Limits.RecursionDepth, maxLimit}, {"parallelism", &b.Limits.Parallelism, maxLimit},
		{"retries_per_transition", &b.RetriesPerTransition, MaxRetriesCeiling},
		{"soft_checkpoint_percent", &b.SoftPercent, 99},
	} {
		if *f.dst, err = positive(o, f.key, f.max); err != nil {
			return err
		}
	}
	if b.AggregateDescendants, err = o.boolean("aggregate_descendants", true); err != nil {
		return err
	}
	if !b.AggregateDescendants {
		return errorf(CodeBinding, "/budgets/aggregate_descendants", "descendant work must count against the run's budgets")
	}
	if b.ExhaustedEvent, err = eventOf(o, "exhausted_event", m); err != nil {
		return err
	}
	return o.done()
}

func (c *Contract) parseNoProgress(root *obj, m *Machine) error {
	o, err := root.object("no_progress", true)
	if err != nil {
		return err
	}
	np := &c.NoProgress
	w, err := o.object("weights", true)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"closed_obligation", &np.Weights.ClosedObligations}, {"resolved_conflict", &np.Weights.ResolvedConflicts}, {"verified_receipt", &np.Weights.VerifiedReceipts}} {
		n, _, err := w.integer(f.key, true)
		if err != nil {
			return err
		}
		if n < 0 || n > 1<<20 {
			return errorf(CodeLimit, child(w.ptr, f.key), "weight %d is outside [0, %d]", n, 1<<20)
		}
		*f.dst = n
	}
	if err := w.done(); err != nil {
		return err
	}
	if np.Epsilon, err = positive(o, "epsilon", maxLimit); err != nil {
		return err
	}
	if np.WindowRounds, err = positive(o, "window_rounds", MaxWindowRounds); err != nil {
		return err
	}
	if np.Threshold, err = positive(o, "threshold", np.WindowRounds); err != nil {
		return err
	}
	if np.Event, err = eventOf(o, "event", m); err != nil {
		return err
	}
	return o.done()
}

func (c *Contract) parseRetry(root *obj, m *Machine) error {
	o, err := root.object("retry", true)
	if err != nil {
		return err
	}
	r := &c.Retry
	classes, err := o.strings("retryable", true, true, nil)
	if err != nil {
		return err
	}
	if !slices.Equal(classes, []string{string(ClassTransient)}) {
		return errorf(CodeBinding, "/retry/retryable", "only %q outcomes may be retried; unknown outcomes are reconciled, permanent ones are final", ClassTransient)
	}
	if r.BaseMillis, err = positive(o, "base_millis", MaxBackoffMillis); err != nil {
		return err
	}
	if r.CapMillis, err = positive(o, "cap_millis", MaxBackoffMillis); err != nil {
		return err
	}
	if r.CapMillis < r.BaseMillis {
		return errorf(CodeLimit, "/retry/cap_millis", "cap %d is below base %d", r.CapMillis, r.BaseMillis)
	}
	jitter, err := o.str("jitter", true, nil)
	if err != nil {
		return err
	}
	if jitter != JitterEqual {
		return errorf(CodeSchema, "/retry/jitter", "jitter %q is not %q", jitter, JitterEqual)
	}
	if r.ExhaustedEvent, err = eventOf(o, "exhausted_event", m); err != nil {
		return err
	}
	r.MaxRetries = c.Budgets.RetriesPerTransition
	return o.done()
}
