package store

import (
	"context"
	"time"
)

// TakeCensus is the census of st: taken by the store when it is (or
// wraps) a CensusTaker, otherwise by paging through every run's header,
// which finds the same.
func TakeCensus(ctx context.Context, st RunLister, q CensusQuery) (Census, error) {
	if ct, ok := listerAs[CensusTaker](st); ok {
		return ct.Census(ctx, q)
	}
	var c Census
	var ended []string
	err := eachRun(ctx, st, func(r Run) {
		state := ""
		if q.ByState {
			state = r.State
		}
		switch {
		case r.Outcome != "":
			c.Count(state, 1, 1, 0)
			ended = append(ended, r.ID)
		case r.Quarantine != "":
			c.Count(state, 1, 0, 0)
			c.AddQuarantined(r)
		default:
			c.Count(state, 1, 0, 1)
			if r.Lease.Owner != "" && !r.Lease.ExpiresAt.After(q.ExpiredBy) {
				c.Expired = append(c.Expired, r)
			}
		}
	})
	if err != nil {
		return c, err
	}
	// Pruned runs, asked one by one: the fallback's price, as its paging.
	if pr, ok := listerAs[Pruner](st); ok {
		for _, id := range ended {
			switch _, err := pr.Pruning(ctx, id); {
			case err == nil:
				c.Pruned++
			case CodeOf(err) != CodeNotFound:
				return c, err
			}
		}
	}
	return c, nil
}

// LiveRunsIn returns the headers of the live runs of st in state, in
// creation order: from the store's index when it is a CensusTaker,
// otherwise by paging through every run's header.
func LiveRunsIn(ctx context.Context, st RunLister, state string) ([]Run, error) {
	if ct, ok := listerAs[CensusTaker](st); ok {
		return ct.LiveIn(ctx, state)
	}
	var runs []Run
	err := eachRun(ctx, st, func(r Run) {
		if r.Outcome == "" && r.Quarantine == "" && r.State == state {
			runs = append(runs, r)
		}
	})
	return runs, err
}

// RunHead is where a run's record stands: what a reader that remembers
// something it read of the run (the approvals it waits on, say) compares
// to know whether the run moved since, without reading its whole header.
type RunHead struct {
	ID        string
	Head      int64
	HeadHash  string
	UpdatedAt time.Time
}

// HeadOf is r's RunHead.
func HeadOf(r Run) RunHead {
	return RunHead{ID: r.ID, Head: r.Head, HeadHash: r.HeadHash, UpdatedAt: r.UpdatedAt}
}

// LiveHeadLister is implemented by stores that list where their live runs
// in a state stand, reading from their index of live runs four columns of
// each header instead of all of them (a metrics scrape over tens of
// thousands of runs waiting for a person).
type LiveHeadLister interface {
	// LiveHeadsIn answers, for each run LiveRunsIn lists and in its
	// order, its RunHead.
	LiveHeadsIn(ctx context.Context, state string) ([]RunHead, error)
}

// LiveHeadsIn returns where the live runs of st in state stand, in
// creation order: from the store when it is a LiveHeadLister, otherwise
// from LiveRunsIn's headers.
func LiveHeadsIn(ctx context.Context, st RunLister, state string) ([]RunHead, error) {
	if hl, ok := listerAs[LiveHeadLister](st); ok {
		return hl.LiveHeadsIn(ctx, state)
	}
	runs, err := LiveRunsIn(ctx, st, state)
	if err != nil {
		return nil, err
	}
	var heads []RunHead
	for _, r := range runs {
		heads = append(heads, HeadOf(r))
	}
	return heads, nil
}

// listerAs is As for a RunLister that may be a Store (searched through
// its wrappers) or a bare lister.
func listerAs[T any](st RunLister) (T, bool) {
	if s, ok := st.(Store); ok {
		return As[T](s)
	}
	t, ok := st.(T)
	return t, ok
}

// eachRun hands every run of st to f, in creation order, a page at a
// time.
func eachRun(ctx context.Context, st RunLister, f func(Run)) error {
	after := ""
	for {
		page, err := st.Runs(ctx, after, listPage)
		if err != nil {
			return err
		}
		for _, r := range page {
			f(r)
		}
		if len(page) < listPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}
