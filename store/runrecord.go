package store

import (
	"context"
	"slices"
)

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
	// and number, Approvals the grants the run's intents name (whichever
	// run each belongs to) and those its intents consumed with them (a
	// quorum's concurring approvals, ApprovalUse.Concurs), ordered by id.
	Receipts  []Receipt
	Attempts  []Attempt
	Approvals []Approval
}

// ConcurringGrants is the SQL condition on a grant a, joined to the intent
// i that consumed it (i.intent_id = a.consumed_by), that it concurs: i is
// of a's run and names another grant, as a quorum's other approvals are
// (ApprovalUse.Concurs). A run's record holds them with the grants its
// intents name. Joined so, a run's grants are found by its index and each
// one's consumer by its key: the run's few grants cost a probe each. Both
// stores' dialects read it as it is.
const ConcurringGrants = `a.status = 'consumed' AND i.run_id = a.run_id AND i.approval_id <> a.approval_id`

// RecordParts reads a run's record table by table: a Store that also
// reads all of a run's attempts, and the grants its intents name, at once.
type RecordParts interface {
	Run(ctx context.Context, runID string) (Run, error)
	Events(ctx context.Context, runID string, after int64) ([]Event, error)
	Checkpoint(ctx context.Context, runID string) (Checkpoint, error)
	Intents(ctx context.Context, runID string) ([]Intent, error)
	Receipts(ctx context.Context, runID string) ([]Receipt, error)
	RunAttempts(ctx context.Context, runID string) ([]Attempt, error)
	RunApprovals(ctx context.Context, runID string) ([]Approval, error)
}

// ReadRunRecordByParts reads runID's record through each part's own
// method, so that what it returns, errors included, is what those methods
// return: the header only when all, the effects only when all, attempts
// only for a run with intents, grants only for one whose intents name one
// (a read that would find none is not made).
func ReadRunRecordByParts(ctx context.Context, r RecordParts, runID string, all bool) (RunRecord, error) {
	var rec RunRecord
	var err error
	if all {
		if rec.Run, err = r.Run(ctx, runID); err != nil {
			return RunRecord{}, err
		}
	}
	if rec.Events, err = r.Events(ctx, runID, 0); err != nil {
		return RunRecord{}, err
	}
	rec.Checkpoint, err = r.Checkpoint(ctx, runID)
	switch {
	case err == nil:
		rec.HasCheckpoint = true
	case CodeOf(err) == CodeNotFound:
		rec.Checkpoint = Checkpoint{}
	default:
		return RunRecord{}, err
	}
	if rec.Intents, err = r.Intents(ctx, runID); err != nil {
		return RunRecord{}, err
	}
	if !all {
		return rec, nil
	}
	if rec.Receipts, err = r.Receipts(ctx, runID); err != nil {
		return RunRecord{}, err
	}
	if len(rec.Intents) == 0 {
		return rec, nil
	}
	if rec.Attempts, err = r.RunAttempts(ctx, runID); err != nil {
		return RunRecord{}, err
	}
	if slices.ContainsFunc(rec.Intents, func(in Intent) bool { return in.ApprovalID != "" }) {
		if rec.Approvals, err = r.RunApprovals(ctx, runID); err != nil {
			return RunRecord{}, err
		}
	}
	return rec, nil
}

// ReadRunRecordsInBatches is a store's ReadRunRecords: runIDs are read
// batch at a time by readBatch, which fills recs and reports for each run
// whether it read it plainly; every run it did not is read alone by
// readOne, so that recs[i] and errs[i] are what reading runIDs[i] alone
// returns, errors included.
func ReadRunRecordsInBatches(ctx context.Context, runIDs []string, all bool, batch int,
	readBatch func(ctx context.Context, ids []string, all bool, recs []RunRecord) []bool,
	readOne func(ctx context.Context, runID string, all bool) (RunRecord, error)) ([]RunRecord, []error) {
	recs := make([]RunRecord, len(runIDs))
	errs := make([]error, len(runIDs))
	for lo := 0; lo < len(runIDs); lo += batch {
		ids := runIDs[lo:min(lo+batch, len(runIDs))]
		ok := readBatch(ctx, ids, all, recs[lo:])
		for i, id := range ids {
			if !ok[i] {
				recs[lo+i], errs[lo+i] = readOne(ctx, id, all)
			}
		}
	}
	return recs, errs
}
