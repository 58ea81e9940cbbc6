package runner

import (
	"fmt"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
)

// CheckpointKind and CheckpointFormat identify the runner's checkpoint
// layout. A checkpoint of another kind or a newer format quarantines the run.
const (
	CheckpointKind   = "flrh.runner.checkpoint"
	CheckpointFormat = 1
)

// checkpoint is everything the runner needs to resume a run, in canonical
// JSON. It is derived state: replaying the run's accepted inputs through the
// workflow reproduces it byte for byte.
type checkpoint struct {
	Kind           string                `json:"kind"`
	Format         int64                 `json:"format"`
	WorkflowID     string                `json:"workflow_id"`
	WorkflowDigest string                `json:"workflow_digest"`
	Control        control.Configuration `json:"control"`
	State          any                   `json:"state"`      // the workflow's state (canonical value)
	Accepted       int64                 `json:"accepted"`   // inputs accepted so far
	Completion     Completion            `json:"completion"` // the workflow's latest verdict
	Open           []openEffect          `json:"open"`       // effects planned and not yet closed, in order
	Ingest         []pendingReceipt      `json:"ingest"`     // committed receipts not yet accepted as inputs, in order
	Transitions    int64                 `json:"transitions"`
	// Progress is the loop contract's plateau detector: one round per
	// visit to VERIFY_COMPLETION, a round's gain the receipts it accepted.
	Progress      control.ProgressWindow `json:"progress"`
	RoundReceipts int64                  `json:"round_receipts"`
	// RoundSteered marks a round whose input was a person's MRP transition
	// the workflow accepted: a person steered, the loop did not spin, so
	// the detector does not judge it.
	RoundSteered bool `json:"round_steered,omitempty"`
	// Budget is the run's budget ledger (budget.go); checkpoints written
	// before runs kept one have none.
	Budget *budgetLedger `json:"budget,omitempty"`
}

// pendingReceipt is a committed receipt the run has still to accept.
type pendingReceipt struct {
	IntentID string `json:"intent_id"`
	Digest   string `json:"digest"`
	Receipt  any    `json:"receipt"`
}

// openEffect is an effect the run owes the world, from plan to receipt.
type openEffect struct {
	IntentID      string        `json:"intent_id"`
	Stage         string        `json:"stage"` // planned, awaiting_approval, committed, unknown
	Intent        any           `json:"intent"`
	Payload       any           `json:"payload"`
	ContentDigest string        `json:"content_digest"`
	Approval      *ApprovalNeed `json:"approval"`
	ApprovalID    string        `json:"approval_id"`
}

const (
	stagePlanned          = "planned"
	stageAwaitingApproval = "awaiting_approval"
	stageCommitted        = "committed"
	stageUnknown          = "unknown"
)

func (c *checkpoint) encode() ([]byte, error) { return cjson.Marshal(c) }

// decodeCheckpoint reads a stored checkpoint and refuses anything it cannot
// trust: a digest that does not match, another kind, a newer format, a
// workflow other than the run's. The caller quarantines the run on error.
func decodeCheckpoint(cp store.Checkpoint, wf Workflow) (*checkpoint, error) {
	if store.BodyDigest(cp.Body) != cp.Digest {
		return nil, fmt.Errorf("checkpoint at event %d: digest does not match its bytes", cp.Seq)
	}
	if cp.FormatVersion != CheckpointFormat {
		return nil, fmt.Errorf("checkpoint at event %d: format %d, this build reads %d", cp.Seq, cp.FormatVersion, CheckpointFormat)
	}
	v, err := cjson.Decode(cp.Body)
	if err != nil {
		return nil, fmt.Errorf("checkpoint at event %d: %w", cp.Seq, err)
	}
	canon, err := cjson.Encode(v)
	if err != nil || string(canon) != string(cp.Body) {
		return nil, fmt.Errorf("checkpoint at event %d: not canonical", cp.Seq)
	}
	var c checkpoint
	if err := decodeInto(cp.Body, &c); err != nil {
		return nil, fmt.Errorf("checkpoint at event %d: %w", cp.Seq, err)
	}
	if c.Kind != CheckpointKind {
		return nil, fmt.Errorf("checkpoint at event %d: kind %q", cp.Seq, c.Kind)
	}
	if c.WorkflowID != wf.ID() || c.WorkflowDigest != wf.Digest() {
		return nil, fmt.Errorf("checkpoint at event %d: written by workflow %s@%s, loaded %s@%s", cp.Seq, c.WorkflowID, c.WorkflowDigest, wf.ID(), wf.Digest())
	}
	return &c, nil
}
