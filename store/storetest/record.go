package storetest

import (
	"context"
	"testing"

	"flrh.dev/flrh/store"
)

// Record is everything a store reads back of one run: what a migration
// of a backend's layout must leave exactly as it was.
type Record struct {
	Run        store.Run
	Events     []store.Event
	Checkpoint store.Checkpoint
	Intents    []store.Intent
	Attempts   []store.Attempt
	Approvals  []store.Approval
	Receipts   []store.Receipt
	Trace      []store.TraceRecord
	Inbox      []store.Inbound
}

// RecordReader is a store that also lists a run's attempts and approvals,
// as both backends do.
type RecordReader interface {
	store.Store
	RunAttempts(ctx context.Context, runID string) ([]store.Attempt, error)
	RunApprovals(ctx context.Context, runID string) ([]store.Approval, error)
}

// ReadRecord reads run id's Record, failing the test on any error.
func ReadRecord(t testing.TB, ctx context.Context, st RecordReader, id string) Record {
	t.Helper()
	var r Record
	var err error
	check := func(what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s %s: %v", what, id, err)
		}
	}
	r.Run, err = st.Run(ctx, id)
	check("run")
	r.Events, err = st.Events(ctx, id, 0)
	check("events")
	r.Checkpoint, err = st.Checkpoint(ctx, id)
	check("checkpoint")
	r.Intents, err = st.Intents(ctx, id)
	check("intents")
	r.Attempts, err = st.RunAttempts(ctx, id)
	check("attempts")
	r.Approvals, err = st.RunApprovals(ctx, id)
	check("approvals")
	r.Receipts, err = st.Receipts(ctx, id)
	check("receipts")
	r.Trace, err = st.Trace(ctx, id)
	check("trace")
	r.Inbox, err = st.Inbox(ctx, id, false)
	check("inbox")
	return r
}
