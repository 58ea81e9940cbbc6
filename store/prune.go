package store

import (
	"context"
	"time"

	"flrh.dev/flrh/label"
)

// Pruner is implemented by stores that can remove an ended run's record
// once it is kept elsewhere (an archive, package archive), so that a store
// serving runs for years does not grow without bound.
//
// Pruning keeps the run's header: its id stays taken (a client that starts
// a run by id again is refused, as for any run that exists, and never
// starts a second one that would redo its effects), its final state and
// outcome stay listed and counted, and its head hash, which the chained
// log commits to, stays to prove that an archive holds this run's record
// and no other (the archive's events must chain to it).
type Pruner interface {
	// Grants returns every grant recorded for the run, whichever intent
	// consumed it (if any), ordered by id: what Prune removes from the
	// approvals ledger, which RunApprovals (the grants the run's intents
	// name) may not all be.
	Grants(ctx context.Context, runID string) ([]Approval, error)
	// Prune removes, in one transaction, everything the store holds of
	// the run but its header: events, checkpoints, intents with their
	// outbox rows and attempts, receipts, grants, inbox entries and
	// trace; and records p, with the store's clock reading as p.At.
	//
	// Each intent's idempotency key stays taken, bound to its content
	// digest: an intent of another run with the key is refused as before
	// (CodeExists with the same content, CodeIdempotencyConflict with
	// other), so that pruning never lets an effect be committed twice. A
	// destination may forget a key; the store does not. The run's reads
	// (Intents and the rest) return nothing.
	//
	// It refuses, changing nothing:
	//   - CodeNotFound: no such run;
	//   - CodeInvalidTransition: the run has not ended, is quarantined,
	//     was pruned already, or has an intent whose outbox is not done
	//     and p.Open is 0 (an effect that may have reached the world is
	//     forgotten only when the caller says it kept it open);
	//   - CodeHeadMismatch: the run's head hash is not p.HeadHash, it
	//     holds other numbers of records than p.Kept says, or another
	//     number of outbox entries not done than p.Open: its record is
	//     not the one the caller kept;
	//   - CodeInvalidInput: p is malformed (ValidatePruning).
	Prune(ctx context.Context, p Pruning) error
	// Pruning returns what Prune recorded of a run; CodeNotFound when the
	// run was not pruned (or does not exist).
	Pruning(ctx context.Context, runID string) (Pruning, error)
}

// PrunerOf returns the Pruner of s, or of the first store it wraps that
// has one.
func PrunerOf(s Store) (Pruner, bool) { return As[Pruner](s) }

// PruningOf returns what st recorded of the pruning of run (a header it
// read), or nil when run was not pruned: it has not ended, st does not
// prune, or st holds no pruning of it.
func PruningOf(ctx context.Context, st Store, run Run) (*Pruning, error) {
	pr, ok := PrunerOf(st)
	if !ok || run.Outcome == "" {
		return nil, nil
	}
	switch p, err := pr.Pruning(ctx, run.ID); {
	case CodeOf(err) == CodeNotFound:
		return nil, nil
	case err != nil:
		return nil, err
	default:
		return &p, nil
	}
}

// Pruning records that a run's record was removed from the store.
type Pruning struct {
	RunID string
	// HeadHash is the run's chain hash when its record was read: the
	// hash after its last event, which the kept record must reach.
	HeadHash string
	// Archive is the digest (sha256:<hex>) of the archive the record was
	// written to before it was removed; "" when it was discarded.
	Archive string
	// Kept counts the records the caller kept (or chose to discard), by
	// kind; Prune removes exactly these or nothing.
	Kept RecordCounts
	// Open counts the run's effects the caller kept with their outbox
	// not done: effects a person abandoned when the run ended
	// (EFFECT_OUTCOME_UNKNOWN), whose outcome no one learned. Their
	// record (intent, attempts, and the outbox not done) is in the
	// archive; their keys stay taken, as every pruned intent's do.
	Open int64
	// At is when the store removed the record (its clock); set by Prune.
	At time.Time
}

// RecordCounts counts a run's records by kind.
type RecordCounts struct {
	Events   int64 `json:"events"`
	Intents  int64 `json:"intents"`
	Attempts int64 `json:"attempts"`
	Receipts int64 `json:"receipts"`
	Grants   int64 `json:"grants"`
	Inbox    int64 `json:"inbox"`
	Trace    int64 `json:"trace"`
}

// ValidatePruning checks what a Pruning must hold before a store looks
// at the run: a run id, a head hash of the chain's shape, an archive
// digest of the shape sha256:<64 hex> or none, and no negative count.
func ValidatePruning(op string, p Pruning) error {
	switch {
	case p.RunID == "":
		return Errorf(CodeInvalidInput, op, "", nil, "a run id is required")
	case !isDigest(p.HeadHash):
		return Errorf(CodeInvalidInput, op, p.RunID, nil, "head hash %q is not sha256:<64 hex>", p.HeadHash)
	case p.Archive != "" && !isDigest(p.Archive):
		return Errorf(CodeInvalidInput, op, p.RunID, nil, "archive digest %q is not sha256:<64 hex>", p.Archive)
	}
	k := p.Kept
	for _, n := range []int64{k.Events, k.Intents, k.Attempts, k.Receipts, k.Grants, k.Inbox, k.Trace} {
		if n < 0 {
			return Errorf(CodeInvalidInput, op, p.RunID, nil, "a negative count of kept records: %+v", k)
		}
	}
	if p.Open < 0 || p.Open > k.Intents {
		return Errorf(CodeInvalidInput, op, p.RunID, nil, "%d effects kept open, of %d intents", p.Open, k.Intents)
	}
	return nil
}

// CheckPrunable says why a run whose header is r may not be pruned, as
// Prune refuses it, or nil: it has ended, is not quarantined, and was not
// pruned already (pruned says whether the store holds a Pruning of it).
// openOutbox is how many of its intents' outbox rows are not done; keptOpen
// is how many the caller says it kept so (Pruning.Open): none refuses a run
// with any, and CheckKept refuses another number.
func CheckPrunable(op string, r Run, pruned bool, openOutbox, keptOpen int64) error {
	switch {
	case pruned:
		return Errorf(CodeInvalidTransition, op, r.ID, nil, "the run was pruned already")
	case r.Outcome == "":
		return Errorf(CodeInvalidTransition, op, r.ID, nil, "the run has not ended (state %s)", r.State)
	case r.Quarantine != "":
		return Errorf(CodeInvalidTransition, op, r.ID, nil, "the run is quarantined: %s", r.Quarantine)
	case openOutbox > 0 && keptOpen == 0:
		return Errorf(CodeInvalidTransition, op, r.ID, nil, "%d of its effects' outbox entries are not done", openOutbox)
	}
	return nil
}

// CheckKept says whether the run's record is the one the caller kept:
// head is the run's head hash, have the records it holds, open its outbox
// entries not done.
func CheckKept(op string, p Pruning, head string, have RecordCounts, open int64) error {
	switch {
	case head != p.HeadHash:
		return Errorf(CodeHeadMismatch, op, p.RunID, nil, "the run's head hash is %s, the kept record's %s", head, p.HeadHash)
	case have != p.Kept:
		return Errorf(CodeHeadMismatch, op, p.RunID, nil, "the run holds %+v, the kept record %+v", have, p.Kept)
	case open != p.Open:
		return Errorf(CodeHeadMismatch, op, p.RunID, nil, "the run has %d effects open, the kept record %d", open, p.Open)
	}
	return nil
}

func isDigest(s string) bool {
	const prefix = "sha256:"
	if len(s) != len(prefix)+64 || s[:len(prefix)] != prefix {
		return false
	}
	for _, c := range s[len(prefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// PrunableLister is implemented by stores that find the runs prune may
// take inside the database, where PrunableRuns would read every header
// and ask each ended run's pruning on its own.
type PrunableLister interface {
	// Prunable answers what PrunableRuns answers for the same arguments.
	Prunable(ctx context.Context, before time.Time, after string, limit int) ([]Run, error)
}

// PrunableRuns returns, in creation order after the run id after ("" for
// the start), at most limit headers of the runs that may be pruned: ended,
// not quarantined, last written before before, and not pruned yet. Fewer
// than limit means there are no more. A store that is a PrunableLister
// (or wraps one) answers inside the database; any other is paged through,
// its ended runs' prunings read one by one.
func PrunableRuns(ctx context.Context, st Store, before time.Time, after string, limit int) ([]Run, error) {
	if limit < 1 {
		return nil, Errorf(CodeInvalidInput, "prunable runs", "", nil, "limit %d: it must be at least 1", limit)
	}
	if pl, ok := As[PrunableLister](st); ok {
		return pl.Prunable(ctx, before, after, limit)
	}
	pr, ok := PrunerOf(st)
	if !ok {
		return nil, Errorf(CodeInvalidInput, "prunable runs", "", nil, "the store does not prune")
	}
	var out []Run
	for {
		page, err := st.Runs(ctx, after, listPage)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if r.Outcome == "" || r.Quarantine != "" || !r.UpdatedAt.Before(before) {
				continue
			}
			switch _, err := pr.Pruning(ctx, r.ID); {
			case err == nil:
				continue
			case CodeOf(err) != CodeNotFound:
				return nil, err
			}
			if out = append(out, r); len(out) == limit {
				return out, nil
			}
		}
		if len(page) < listPage {
			return out, nil
		}
		after = page[len(page)-1].ID
	}
}

// PrunedRun is what a store keeps of a pruned run: its header, its
// pruning, and each of its intents stripped to its keys (ID, RunID, Seq,
// EffectType, IdempotencyKey, ContentDigest; no body, digest or grant).
type PrunedRun struct {
	Run     Run
	Pruning Pruning
	Keys    []Intent
}

// PrunedMover is implemented by stores that hand over what they keep of a
// pruned run and take in another store's: how runs archived and pruned in
// one store (the embedded one, say) move to another (PostgreSQL) with
// their ids still taken and their effects' idempotency keys still bound,
// so that no run of the new store commits an effect an old run did.
type PrunedMover interface {
	// PrunedKeys returns a pruned run's intents as the store keeps them,
	// stripped to their keys, in the order they were committed.
	PrunedKeys(ctx context.Context, runID string) ([]Intent, error)
	// ImportPruned writes r in one transaction: the header (unleased,
	// with the times it holds; its place in the creation order is the
	// store's next), the pruning (with its own time) and the keys. It
	// returns false, writing nothing, when the store holds the same pruned
	// run already (same head hash and archive): importing twice is
	// importing once. It refuses, writing nothing:
	//   - CodeInvalidInput: r is malformed (ValidatePrunedRun);
	//   - CodeExists: the run id is taken by another run, or an intent id
	//     or an idempotency key (with the same content) by another intent;
	//   - CodeIdempotencyConflict: a key is bound to other content.
	ImportPruned(ctx context.Context, r PrunedRun) (bool, error)
}

// PrunedMoverOf returns the PrunedMover of s, or of the first store it
// wraps that has one.
func PrunedMoverOf(s Store) (PrunedMover, bool) { return As[PrunedMover](s) }

// ValidatePrunedRun refuses a pruned run that could not have been kept so:
// a header that has not ended or is quarantined, a pruning of another run
// or at another head hash, keys of another run or missing one of their
// members, or another number of keys than the pruning kept.
func ValidatePrunedRun(op string, r PrunedRun) error {
	id := r.Run.ID
	switch {
	case id == "":
		return Errorf(CodeInvalidInput, op, "", nil, "a run id is required")
	case r.Run.Outcome == "":
		return Errorf(CodeInvalidInput, op, id, nil, "the run has not ended (state %s)", r.Run.State)
	case r.Run.Quarantine != "":
		return Errorf(CodeInvalidInput, op, id, nil, "the run is quarantined")
	case r.Pruning.RunID != id || r.Pruning.HeadHash != r.Run.HeadHash:
		return Errorf(CodeInvalidInput, op, id, nil, "the pruning (run %s at %s) is not the header's (at %s)", r.Pruning.RunID, r.Pruning.HeadHash, r.Run.HeadHash)
	case int64(len(r.Keys)) != r.Pruning.Kept.Intents:
		return Errorf(CodeInvalidInput, op, id, nil, "%d keys, but the pruning kept %d intents", len(r.Keys), r.Pruning.Kept.Intents)
	}
	if err := label.Check(r.Run.Labels); err != nil {
		return Errorf(CodeInvalidInput, op, id, err, "%v", err)
	}
	if err := ValidatePruning(op, r.Pruning); err != nil {
		return err
	}
	for _, k := range r.Keys {
		if k.RunID != id || k.ID == "" || k.IdempotencyKey == "" || k.ContentDigest == "" || k.EffectType == "" {
			return Errorf(CodeInvalidInput, op, id, nil, "key of intent %q (run %q) is incomplete or of another run", k.ID, k.RunID)
		}
	}
	return nil
}

// ImportedBefore answers, for ImportPruned, a store that holds a run of
// r's id already, at headHash and pruned with the archive digest archive
// (nil when it is not pruned): nil when it is r, imported before, and
// CodeExists when it is another run.
func ImportedBefore(op string, r PrunedRun, headHash string, archive *string) error {
	if archive != nil && headHash == r.Run.HeadHash && *archive == r.Pruning.Archive {
		return nil
	}
	return Errorf(CodeExists, op, r.Run.ID, nil, "the run id is taken by another run")
}

// KeyTaken is ImportPruned's refusal of key k of run id, whose intent id
// or idempotency key the store holds already for run (another), bound to
// content digest: CodeIdempotencyConflict for other content, CodeExists
// for the same.
func KeyTaken(op, id string, k Intent, run, digest string) error {
	if digest != k.ContentDigest {
		return Errorf(CodeIdempotencyConflict, op, id, nil, "idempotency key %s is bound to other content by run %s", k.IdempotencyKey, run)
	}
	return Errorf(CodeExists, op, id, nil, "intent %s or its idempotency key %s is taken by run %s", k.ID, k.IdempotencyKey, run)
}
