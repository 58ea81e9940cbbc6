// Package store defines flrh's durable record of runs: accepted events with a
// hash chain, checkpoints, effect intents with their outbox, attempts,
// receipts, the approvals ledger, and an append-only trace.
//
// The runtime's first promise, "no effect without a durable intent", rests
// on one rule this package enforces: everything a tick decides is committed
// in one transaction ([Store.Commit]) — the accepted events, the checkpoint,
// the new effect intents and their outbox rows, the consumption of the
// approvals they rely on, the receipts they close — and that transaction
// first checks the run's lease generation (the fence). A runner that lost its
// lease, say because it was paused past the lease's expiry, finds its commit
// refused with [CodeFenced]; it can never publish a receipt or claim an
// effect for a run another runner now owns.
//
// Attempts are recorded before adapter I/O ([Store.BeginAttempt]), so after
// a crash the store knows an effect may have reached the world and the
// runner reconciles instead of sending it again.
//
// Approvals are revalidated inside the commit transaction: the store reads
// the grant, takes its own clock reading within the transaction, and calls
// the caller's check (the pure authority revalidation) before consuming the
// grant once.
//
// A tick's bytes are the caller's again once Commit returns: a store keeps
// none of the slices a tick hands it (its bodies, its lists of records)
// past the call, a lagging tick's included, whose transaction may stay
// open and whose work may run again afterwards; what it keeps, it copies
// ([CloneTick]). So a runner may encode each tick into buffers it reuses
// at its next tick. The conformance suite holds every implementation to it
// (storetest.RunKeepsNone).
//
// Implementations: store/sqlite (the embedded default) and store/postgres
// (many runners sharing one database). The conformance suite in
// store/storetest runs against every implementation.
package store
