// Package archive writes an ended run's whole durable record as one
// document, and reads it back byte for byte, so that a store may drop the
// record (store.Pruner) and the run stay verifiable and replayable from
// the archive alone (verify.Record).
//
// A document is canonical JSON (package cjson) of kind KindV1. Every body
// a store keeps by digest (events, checkpoint, intents, receipts, grants,
// inbox entries, trace records) is embedded as the JSON value it is when
// its bytes are canonical, so that the archive reads as the run did, and
// as base64 otherwise: either way Decode returns the exact bytes, and
// their digests are those the store recorded. Times are RFC 3339 with
// nanoseconds, in UTC.
//
// An archive document holds the record in clear, as `flrh run export`
// prints it, whatever the store sealed at rest; flrh store prune seals the
// file whole with the store's key when the store is encrypted
// (store.SealArchive), and the store's pruning records the digest of the
// document in clear.
package archive

import (
	"context"
	"fmt"

	"flrh.dev/flrh/store"
)

// KindV1 names the layout of an archive document.
const KindV1 = "flrh-run-archive/1"

// Archive is an ended run's whole record: the run as a store holds it
// (store.WholeRun: record, every grant, inbox, trace).
type Archive struct {
	store.WholeRun
}

// Whole is the run a holds, as a store takes it in (store.RunImporter).
func (a *Archive) Whole() store.WholeRun { return a.WholeRun }

// Counts counts the records a holds as store.Pruning.Kept counts them.
func (a *Archive) Counts() store.RecordCounts {
	r := &a.Record
	return store.RecordCounts{Events: int64(len(r.Events)), Intents: int64(len(r.Intents)), Attempts: int64(len(r.Attempts)),
		Receipts: int64(len(r.Receipts)), Grants: int64(len(a.Grants)), Inbox: int64(len(a.Inbox)), Trace: int64(len(a.Trace))}
}

// Open counts the intents a holds whose outbox is not done: effects whose
// outcome no one learned before the run ended (a person abandoned them).
func (a *Archive) Open() int64 {
	var n int64
	for _, in := range a.Record.Intents {
		if in.Outbox != store.OutboxDone {
			n++
		}
	}
	return n
}

// Pruning is the pruning that removes, from the store a was read from,
// exactly the records a holds, its archive's document having digest
// digest ("" when the record is discarded): its effects open (Open)
// included, which the store refuses to forget unless told how many.
func (a *Archive) Pruning(digest string) store.Pruning {
	return store.Pruning{RunID: a.Record.Run.ID, HeadHash: a.Record.Run.HeadHash, Archive: digest, Kept: a.Counts(), Open: a.Open()}
}

// Read reads runID's whole record from st, which must be (or wrap) a
// store.Pruner. Each part is read as the store's method of that name
// returns it; nothing ties the reads to one state of the store, which is
// why Prune is handed the counts and head hash of what was read
// (Pruning) and refuses when the run holds anything else.
func Read(ctx context.Context, st store.Store, runID string) (*Archive, error) {
	p, ok := store.PrunerOf(st)
	if !ok {
		return nil, fmt.Errorf("archive: the store cannot list a run's grants (it does not prune)")
	}
	parts, ok := store.As[store.RecordParts](st)
	if !ok {
		return nil, fmt.Errorf("archive: the store cannot read a run's attempts and grants at once")
	}
	rec, err := store.ReadRunRecordByParts(ctx, parts, runID, true)
	if err != nil {
		return nil, err
	}
	a := &Archive{WholeRun: store.WholeRun{Record: rec}}
	if a.Grants, err = p.Grants(ctx, runID); err != nil {
		return nil, err
	}
	if a.Inbox, err = st.Inbox(ctx, runID, false); err != nil {
		return nil, err
	}
	if a.Trace, err = st.Trace(ctx, runID); err != nil {
		return nil, err
	}
	return a, nil
}
