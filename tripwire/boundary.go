package tripwire

import "flrh.dev/flrh/control"

// Phase names the boundary of the runner's pass at which wires are checked.
type Phase string

const (
	// PhaseLoad: a pass has read the run's header and checkpoint and has not
	// stepped yet. Code coherence, the event chain, fencing and (when the
	// runner read it) the full effect ledger are checked here.
	PhaseLoad Phase = "load"
	// PhaseCommit: a tick is decided and about to be committed. Everything
	// the tick would make durable is checked here, before it is.
	PhaseCommit Phase = "commit"
	// PhaseIdle: a pass has ended; the run either ended or waits. Wedges are
	// detected here.
	PhaseIdle Phase = "idle"
)

// Boundary describes one phase boundary of one run: what the runner
// already holds at that point, copied into plain values. Every field is
// optional; a wire whose inputs are absent has nothing to say. docs/tripwires.md
// lists which fields the runner fills at which phase.
type Boundary struct {
	Phase Phase  `json:"phase"`
	RunID string `json:"run_id"`

	// Before is the control configuration the tick started from (at
	// PhaseLoad and PhaseIdle, the current one); After is where the tick
	// leads. The zero Configuration is a run that has not started.
	Before control.Configuration `json:"before"`
	After  control.Configuration `json:"after"`
	// Outcome is the final outcome the tick records ("" while live).
	Outcome string `json:"outcome,omitempty"`

	// Events are the tick's events in commit order.
	Events []Event `json:"events"`
	// CursorBefore and CursorAfter count the inputs the run had accepted
	// before and after the tick (the checkpoint's accepted counter).
	CursorBefore int64 `json:"cursor_before"`
	CursorAfter  int64 `json:"cursor_after"`
	// Consumed lists the inbox entries the tick consumed; Waiting the
	// entries still pending when the boundary was reached.
	Consumed []Inbound `json:"consumed"`
	Waiting  []Inbound `json:"waiting"`

	// OpenBefore and OpenAfter are the effects the checkpoint owes the
	// world before and after the tick, in checkpoint order.
	OpenBefore []Effect `json:"open_before"`
	OpenAfter  []Effect `json:"open_after"`
	// Intents, Approvals, Results and Receipts are what the tick adds to
	// the effect ledger.
	Intents   []Intent      `json:"intents"`
	Approvals []Consumption `json:"approvals"`
	Results   []Result      `json:"results"`
	Receipts  []Receipt     `json:"receipts"`
	// AwaitingBefore and AwaitingAfter are the receipts committed but not
	// yet accepted as the run's inputs (the runner's ingest queue), before
	// and after the tick. At PhaseLoad and PhaseIdle only AwaitingBefore is
	// read.
	AwaitingBefore []Awaiting `json:"awaiting_before"`
	AwaitingAfter  []Awaiting `json:"awaiting_after"`
	// Ledger is the run's whole effect ledger as read from the store; nil
	// when the runner did not read it.
	Ledger *Ledger `json:"ledger,omitempty"`

	Chain Chain `json:"chain"`
	Lease Lease `json:"lease"`
	Code  Code  `json:"code"`
	// Progress is the round the runner observed at this boundary, if any.
	Progress *Progress `json:"progress,omitempty"`
}

// Event is one event of a tick. Record is set for control events (kinds
// control and control.rejected): the record the FSM returned, whose digest
// must be Digest. Input is set for accepted inputs (kind accepted).
type Event struct {
	Kind   string          `json:"kind"`
	Digest string          `json:"digest"`
	Record *control.Record `json:"record,omitempty"`
	Input  *Input          `json:"input,omitempty"`
}

// Input is an input the run accepted: its position in the run's accepted
// sequence, its kind (input or receipt) and the digest of its content.
type Input struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Digest string `json:"digest"`
}

// Inbound is an inbox entry: its id, kind and content digest.
type Inbound struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Digest string `json:"digest"`
}

// Effect is an effect the checkpoint owes the world, at its stage
// (planned, awaiting_approval, committed, unknown, closed).
type Effect struct {
	IntentID   string `json:"intent_id"`
	Stage      string `json:"stage"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// Intent is an intent the tick commits.
type Intent struct {
	ID         string `json:"id"`
	Digest     string `json:"digest"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// Consumption is a grant the tick consumes for one of its intents.
// GrantRunID and GrantStatus are the grant's run and status as the runner
// last read them ("" when it did not).
type Consumption struct {
	ApprovalID  string `json:"approval_id"`
	IntentID    string `json:"intent_id"`
	GrantRunID  string `json:"grant_run_id,omitempty"`
	GrantStatus string `json:"grant_status,omitempty"`
	// Concurs marks a grant consumed alongside the one the intent names
	// (a quorum's other approvals; store.ApprovalUse.Concurs).
	Concurs bool `json:"concurs,omitempty"`
}

// Result is how an attempt ended and the outbox status that follows.
type Result struct {
	IntentID string `json:"intent_id"`
	N        int64  `json:"n"`
	Status   string `json:"status"`
	Outbox   string `json:"outbox"`
}

// Receipt closes an intent.
type Receipt struct {
	IntentID string `json:"intent_id"`
	Outcome  string `json:"outcome"`
	Digest   string `json:"digest"`
}

// Awaiting is a receipt waiting to be accepted as an input: the intent it
// closes and the digest it will be accepted under.
type Awaiting struct {
	IntentID string `json:"intent_id"`
	Digest   string `json:"digest"`
}

// Ledger is a run's effect ledger as stored.
type Ledger struct {
	Intents   []LedgerIntent   `json:"intents"`
	Approvals []LedgerApproval `json:"approvals"`
}

// LedgerIntent is a stored intent with its outbox status and how many
// receipts close it.
type LedgerIntent struct {
	ID         string `json:"id"`
	Outbox     string `json:"outbox"`
	Receipts   int64  `json:"receipts"`
	ApprovalID string `json:"approval_id,omitempty"`
}

// LedgerApproval is a stored grant the run's intents name.
type LedgerApproval struct {
	ID         string `json:"id"`
	RunID      string `json:"run_id"`
	Status     string `json:"status"`
	ConsumedBy string `json:"consumed_by,omitempty"`
}

// Chain is the run's event hash chain as this runner knows it: Known is the
// head it last saw or wrote, Observed the head the store reports now, and
// Links the events between them (Known, Observed], when the runner read them.
type Chain struct {
	Known    Head   `json:"known"`
	Observed Head   `json:"observed"`
	Links    []Link `json:"links"`
}

// Head is a position in a run's event chain. An empty Hash is unknown.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash,omitempty"`
}

// Link is one stored event's place in the chain.
type Link struct {
	Seq        int64  `json:"seq"`
	Digest     string `json:"digest"`
	PrevHash   string `json:"prev_hash"`
	ChainHash  string `json:"chain_hash"`
	Generation int64  `json:"generation"`
}

// Lease is the writer's fencing position: the generation it writes under
// and the newest generation it has seen for the run (from the run header,
// the events it read, or a failed renewal).
type Lease struct {
	Generation int64 `json:"generation"`
	Newest     int64 `json:"newest"`
}

// Code binds the state to the code that handles it: the build and the
// workflow recorded in the checkpoint against the ones running now.
type Code struct {
	CheckpointBuild    string `json:"checkpoint_build,omitempty"`
	RunningBuild       string `json:"running_build,omitempty"`
	CheckpointWorkflow string `json:"checkpoint_workflow,omitempty"`
	RunningWorkflow    string `json:"running_workflow,omitempty"`
	// Blessed lists earlier builds an operator has declared able to
	// resume the running build's checkpoints (a deliberate upgrade). A
	// checkpoint from any other build trips.
	Blessed []string `json:"blessed,omitempty"`
}

// Progress is one round of the loop as the no-progress arithmetic sees it:
// the contract's rule, the window before this round, and the round.
type Progress struct {
	Rule   control.NoProgress     `json:"rule"`
	Window control.ProgressWindow `json:"window"`
	Round  control.Round          `json:"round"`
}
