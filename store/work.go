package store

import (
	"context"
	"time"
)

// Claimer is implemented by stores that hand ready runs to runners without
// a central coordinator: each call leases a batch of runs that have
// something to do, and runners claiming at once never receive the same
// run. A runner that finds one claims its work instead of trying
// AcquireLease on every live run in turn.
type Claimer interface {
	// ClaimReady leases up to limit ready runs to owner for ttl, oldest
	// first, each with its generation raised (fencing any earlier holder).
	// A run is ready when it has not ended, is not quarantined, holds no
	// unexpired lease, and has a pending inbox entry, is in a state that
	// is not one of resting (nil: every such run is ready), or, when due
	// is not zero, has a due time (Run.DueAt) at or before due. due is a
	// reading of the caller's clock, the one its ticks' due times come
	// from.
	ClaimReady(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, due time.Time) ([]Lease, error)
}

// DefinitionClaimer is implemented by Claimers that can leave alone the
// runs a runner cannot advance: those created under a workflow definition
// it has not loaded (another process, holding that definition, will).
type DefinitionClaimer interface {
	Claimer
	// ClaimReadyOf is ClaimReady limited to runs whose recorded definition
	// digest (Run.WorkflowDigest) is one of definitions, or "" (a run that
	// records none, which any runner of its workflow id and version may
	// take).
	ClaimReadyOf(ctx context.Context, owner string, ttl time.Duration, limit int, resting []string, definitions []string, due time.Time) ([]Lease, error)
}

// WorkWatcher is implemented by stores that can tell a runner when there
// may be new work (a run created, an input submitted, a lease released).
type WorkWatcher interface {
	WatchWork(ctx context.Context) WorkWaiter
}

// WorkWaiter waits for the next sign of work. Wait returns the run id a
// notification names, or "" when poll elapsed (or notifications are not
// being received): the caller then looks for work itself, since a
// notification may be lost. Only ctx's end is an error.
type WorkWaiter interface {
	Wait(ctx context.Context, poll time.Duration) (string, error)
	Close() error
}

// Settler is implemented by stores that can remember that a run has
// nothing to take from its inbox as it stands, so that it is not listed
// or claimed as ready for entries it will not take. A run resting for a
// person's approval, with a new input or a pause pending that its state
// does not take until the approval comes, would otherwise be ready at
// every poll: each runner would pass it, move nothing, and let it go,
// for as long as the person takes.
type Settler interface {
	// Settle records, fenced by lease, that the run takes none of its
	// pending inbox entries numbered up to seq (Inbound.Seq) in the state
	// and at the head it holds now. Until its head or state changes, or
	// an entry numbered after seq arrives, the run is ready (Ready,
	// ClaimReady) only if its state is not a resting one or its due time
	// has come. With release
	// the lease is given up in the same transaction, as ReleaseLease
	// would. A seq below zero or after the run's last inbox entry is
	// CodeInvalidInput, and nothing is written.
	Settle(ctx context.Context, lease Lease, seq int64, release bool) error
}

// SettlerOf returns the Settler of s, or of the first store it wraps that
// has one.
func SettlerOf(s Store) (Settler, bool) { return As[Settler](s) }

// DueSetter is implemented by stores that can record a run's due time
// outside a tick: a runner that finds the recorded one wrong (a run
// written before stores kept it, which the migration marks due at once)
// records what the run's checkpoint says.
type DueSetter interface {
	// SetDue records, fenced by lease, the run's due time (zero: none).
	// With release the lease is given up in the same transaction, as
	// ReleaseLease would.
	SetDue(ctx context.Context, lease Lease, due time.Time, release bool) error
}

// DueSetterOf returns the DueSetter of s, or of the first store it wraps
// that has one.
func DueSetterOf(s Store) (DueSetter, bool) { return As[DueSetter](s) }

// OutboxLister is implemented by stores that can list the outbox entries
// not yet done across every run in one read: what a health check reports
// (flrh store check), without a read of each run's intents.
type OutboxLister interface {
	// OpenOutbox returns every intent whose outbox row is not done, in
	// the order of their runs' creation (Runs) and then of the run's
	// commits (Intents).
	OpenOutbox(ctx context.Context) ([]OutboxEntry, error)
}

// OutboxEntry is an intent's outbox row, with what names the intent.
type OutboxEntry struct {
	RunID      string
	IntentID   string
	EffectType string
	Status     OutboxStatus
	Route      string
	Attempts   int64
}

// OutboxListerOf returns the OutboxLister of s, or of the first store it
// wraps that has one.
func OutboxListerOf(s Store) (OutboxLister, bool) { return As[OutboxLister](s) }

// CensusTaker is implemented by stores that count their runs and find the
// ones an operator must look at inside the database: what a health check
// (flrh store check) and a metrics scrape read without handing the caller
// every run's header, which takes seconds for a million runs.
type CensusTaker interface {
	// Census counts the runs (and by state, when asked) and returns the
	// headers of the live runs that are quarantined and of the live,
	// unquarantined runs whose lease has an owner and expired at or
	// before the time asked, each list in the order of the runs' creation
	// (Runs). It reads one snapshot.
	Census(ctx context.Context, q CensusQuery) (Census, error)
	// LiveIn returns the headers of the live runs (not ended, not
	// quarantined) in state, in the order of their creation, from an
	// index of the live runs.
	LiveIn(ctx context.Context, state string) ([]Run, error)
}

// CensusQuery says what a census asks beyond the counts.
type CensusQuery struct {
	// ExpiredBy is the time by which a lease counts as expired.
	ExpiredBy time.Time
	// ByState asks for the runs counted by state too, which costs
	// grouping every run (on SQLite, a sort: twice the census's time).
	ByState bool
}

// Census is what CensusTaker.Census finds. Runs = Live + Ended +
// len(Quarantined): a run that ended is counted ended whether or not it
// was quarantined, and a live run is quarantined or live.
type Census struct {
	Runs, Live, Ended int64
	// Pruned counts the ended runs whose record was pruned (Pruner): the
	// store holds their headers alone. Zero from a store that does not
	// prune.
	Pruned      int64
	States      map[string]int64 // every run by its state, when asked; nil when not or when there are none
	Quarantined []Run            // runs not ended and quarantined, but those moved away
	Moved       []Run            // runs not ended that moved to another store (MovedAway)
	Expired     []Run            // live runs whose lease expired by the time asked, owner still named
}

// AddQuarantined adds run r, not ended and quarantined, to the census:
// to Moved when it moved to another store, to Quarantined otherwise.
func (c *Census) AddQuarantined(r Run) {
	if _, _, moved := MovedFrom(r.Quarantine); moved {
		c.Moved = append(c.Moved, r)
		return
	}
	c.Quarantined = append(c.Quarantined, r)
}

// CensusTakerOf returns the CensusTaker of s, or of the first store it
// wraps that has one.
func CensusTakerOf(s Store) (CensusTaker, bool) { return As[CensusTaker](s) }

// Count adds n runs in state, of which ended have ended and live are
// live, to the census's counts: how a store folds a grouped count. An
// empty state counts the runs alone.
func (c *Census) Count(state string, n, ended, live int64) {
	if state != "" {
		if c.States == nil {
			c.States = map[string]int64{}
		}
		c.States[state] += n
	}
	c.Runs, c.Ended, c.Live = c.Runs+n, c.Ended+ended, c.Live+live
}

// CensusCounts is the census's count of runs: one row of an empty state
// and the counts, or with byState a row for each state. Both stores'
// dialects read it as it is.
func CensusCounts(byState bool) string {
	if byState {
		return `SELECT state, count(*), count(*) FILTER (WHERE outcome <> ''),
	count(*) FILTER (WHERE outcome = '' AND quarantine = '') FROM runs GROUP BY state`
	}
	return `SELECT '', count(*), count(*) FILTER (WHERE outcome <> ''),
	count(*) FILTER (WHERE outcome = '' AND quarantine = '') FROM runs`
}

// Pinger is implemented by stores that can say cheaply whether they are
// reachable and answering: a readiness probe's question.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Ping asks s whether it answers: its own Ping when it is (or wraps) a
// Pinger, otherwise a read of one run header.
func Ping(ctx context.Context, s Store) error {
	if p, ok := As[Pinger](s); ok {
		return p.Ping(ctx)
	}
	_, err := s.Runs(ctx, "", 1)
	return err
}
