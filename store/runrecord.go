package store

// RunRecord is what a reader that checks a whole run (a verifier) reads
// of it, each part exactly as the Store method of the same name returns
// it. A store may offer to read it at once (see the SQLite store's
// ReadRunRecord), which reads one state of the database instead of one
// per table.
type RunRecord struct {
	Run    Run // when the reader asked for the run's header
	Events []Event
	// Checkpoint is the latest checkpoint; HasCheckpoint is false when the
	// run has none (Checkpoint's CodeNotFound).
	Checkpoint    Checkpoint
	HasCheckpoint bool
	Intents       []Intent
	// Receipts, Attempts and Approvals, when the reader asked for the
	// run's effects: Attempts every intent's attempts ordered by intent id
	// and number, Approvals the grants the run's intents name, ordered by
	// id (whichever run each belongs to).
	Receipts  []Receipt
	Attempts  []Attempt
	Approvals []Approval
}
