package runner

import (
	"time"

	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/store"
)

// Workflow is the pure side of a run: everything the runner asks of the
// domain each tick. Implementations must be pure functions of their
// arguments (no clock, randomness or I/O): the runner replays them from the
// event log and compares every digest.
type Workflow interface {
	// ID and Version name the workflow; Digest binds its exact definition
	// (rules, policies, mappings) and is recorded in every checkpoint.
	ID() string
	Version() string
	Digest() string
	// Init returns the initial state (canonical JSON) of a new run. The
	// run's input arrives afterwards, as its first accepted input.
	Init(runID string) ([]byte, error)
	// Decide folds one accepted input (external input, a receipt, a
	// person's choice) into the state and says what should happen next.
	Decide(state []byte, in Accepted) (Decision, error)
	// CheckApproval revalidates a stored grant against the exact request
	// it must answer, at the given time. The store calls it again inside
	// the commit transaction with that transaction's own clock reading.
	CheckApproval(need ApprovalNeed, grant store.Approval, now time.Time) error
}

// Accepted is one input the run accepted, as the workflow sees it.
type Accepted struct {
	Seq        int64  // 1, 2, ... in the order the run accepted inputs
	Kind       string // "input", "receipt", "choice", "mrp"
	Body       []byte // canonical JSON
	Digest     string
	Actor      string // who submitted it (authenticated), "" for receipts
	ActorRole  string // the submitter's authenticated role ("" for receipts)
	Capability string // the capability the submitter exercised
	// Usage is the usage report that came with the input: its submitter's
	// (SubmitWithUsage) or, on a receipt, what the adapter reported the
	// effect's attempts cost. nil when none came.
	Usage *Usage
}

// Decision is what the workflow decided about one accepted input.
type Decision struct {
	// State is the next state, canonical JSON. The runner never changes
	// its bytes (it keeps them, hands them to the next Decide, and copies
	// them into the checkpoint), so a workflow may keep them too, as the
	// bundle's workflow keeps them as its cache's key (decision 1725).
	State []byte
	// StateCanonical vouches that State is cjson's own encoding of a value
	// whose root kind has no set-like members (as cjson.Marshal of a
	// workflow's state struct writes it). The runner then keeps the bytes
	// as they are instead of decoding and re-encoding them to be sure.
	StateCanonical bool
	Effects        []EffectPlan
	Completion     Completion
	Refusal        string              // why the input was refused ("" if it was not); the state must not change
	Trace          []store.TraceRecord // the turn's record (FHR, provenance), never authoritative
	// Offered are the proposals the input left waiting for a person to
	// choose among options; a runner writing notices tells of them.
	Offered []string
}

// Completion says whether the run is done once its effects are closed.
type Completion string

const (
	Continue Completion = "continue" // wait for more input
	Complete Completion = "complete" // done once every effect has a receipt
	Fail     Completion = "fail"     // the work cannot be done
)

// EffectPlan is one effect H authorized (or asks a person to approve).
type EffectPlan struct {
	Intent        protocol.EffectIntent // complete; IdempotencyKey set per the loop contract
	Payload       []byte                // what the adapter sends, canonical JSON
	ContentDigest string                // the digest the idempotency key is bound to
	Approval      *ApprovalNeed         // non-nil when a person must approve first
}

// ApprovalNeed is an approval request the run waits on.
type ApprovalNeed struct {
	RequestID     string `json:"request_id"`
	RequestDigest string `json:"request_digest"`
	IntentID      string `json:"intent_id"`
	Preview       string `json:"preview"` // exactly what the person is shown

	// Quorum says, where a request needs the approvals of several people,
	// how many. A workflow that plans the request may set it (a bundle's
	// gate policy asking a quorum of this one action); the run records it
	// with the request and takes as many grants as it says, or as the
	// workflow says of all its requests (Quorate), whichever is more.
	// Inspect fills in the larger. ApprovedBy, also Inspect's, says whose
	// grants the run holds so far; it is no part of what a run records.
	Quorum     int      `json:"quorum,omitempty"`
	ApprovedBy []string `json:"approved_by,omitempty"`
	// Approver is the approver the request names, where the workflow's
	// plan named one other than the one it names for all its requests (a
	// bundle's gates choosing who approves this action); the run records
	// it with the request, and the workflow holds grants to it.
	Approver string `json:"approver,omitempty"`
	// WhoMayApprove says who may give it, in a sentence, where the
	// workflow says (ApproverTeller); Inspect fills it in, and it is no
	// part of what a run records.
	WhoMayApprove string `json:"who_may_approve,omitempty"`
	// Awaiting says, where the request names a panel (Paneled), whom it
	// still waits for given the grants that stand ("a member of legal");
	// Inspect fills it in, and it is no part of what a run records.
	Awaiting string `json:"awaiting,omitempty"`
	// approvedWith are the grants ApprovedBy gave, in the same order.
	approvedWith []string
}

// Quorate is implemented by workflows whose approval requests may need the
// approvals of several people (a quorum: the four-eyes rule for a large
// payment). The run takes grants from that many distinct people, each
// answering the request exactly, before the effect's intent commits, and
// the intent consumes them all in its commit (store.ApprovalUse.Concurs).
// A grant that lapses (expires, is revoked) before the quorum is complete
// no longer counts. One denial still ends the request.
type Quorate interface {
	// Quorum is how many distinct people's grants need needs; less than
	// two means one.
	Quorum(need ApprovalNeed) int
}

// QuorumOf is how many distinct people's grants need needs from wf: the
// quorum its plan recorded, the one wf says (Quorate), or one for each
// group of the panel it names (Paneled), whichever is most; at least 1.
func QuorumOf(wf Workflow, need ApprovalNeed) int {
	n := max(need.Quorum, 1, len(PanelOf(wf, need)))
	if q, ok := wf.(Quorate); ok {
		n = max(n, q.Quorum(need))
	}
	return n
}

// ApprovalAuthorizer is implemented by workflows whose authority decides
// again once a grant is in hand: the grant is an input to H, which returns
// the intent that consumes it. Without it the runner commits the planned
// intent, naming the grant, once CheckApproval accepts the grant.
type ApprovalAuthorizer interface {
	// AuthorizeApproved re-authorizes the effect that waits on need with
	// the stored grant, at the run's logical time (inputs accepted so far).
	// It returns the effect to commit (its intent names the grant) or an
	// error that refuses the grant.
	AuthorizeApproved(state []byte, need ApprovalNeed, grant store.Approval, logicalTime int64) (EffectPlan, error)
}

// Keeper is implemented by workflows that keep proposals for a person to
// decide again (a proposal held or escalated, decision 0612). A run that
// keeps one is waiting on a person, not spinning: rounds that gain nothing
// meanwhile do not end it NO_PROGRESS (its step budget still bounds it).
type Keeper interface {
	Kept(state []byte) (int, error)
}

// Offerer is implemented by workflows that keep proposals waiting for a
// person to choose among options. Offered lists them, by proposal, as a
// run's state keeps them: a notifier that starts delivering tells of a
// run that came to wait for a choice while no one did (TellWaiting), as
// the input that offered them would have. A run that offers one is
// waiting on a person, as one that keeps a proposal is (Keeper): rounds
// that gain nothing meanwhile do not end it NO_PROGRESS (decision 1957).
type Offerer interface {
	Offered(state []byte) ([]string, error)
}

// Viewer is implemented by workflows that can show a person where their
// own deliberation stands (the MRP state and Journey Strip, options offered
// with their scores, what the run waits for). Inspect includes it.
type Viewer interface {
	View(state []byte) (any, error)
}
