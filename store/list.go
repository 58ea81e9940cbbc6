package store

import (
	"context"
	"maps"
	"slices"

	"flrh.dev/flrh/label"
)

// RunLister pages through a store's runs in creation order.
type RunLister interface {
	Runs(ctx context.Context, after string, limit int) ([]Run, error)
}

// listPage is how many run headers MatchingRuns reads at a time.
const listPage = 500

// RunFilter selects runs by state, workflow and labels; an empty member
// selects any.
type RunFilter struct {
	State, WorkflowID, WorkflowVersion string
	// WorkflowIDs, when not nil, are the workflows whose runs may be
	// selected, beside WorkflowID: a principal's scope. Empty selects
	// none.
	WorkflowIDs []string
	// Labels are labels a run must bear, every one with the value given.
	// They narrow what a scan bound counts too (MatchingRuns): a store
	// finds the runs bearing a label by an index, not by reading every
	// header.
	Labels map[string]string
}

// IndexLabel is the label of f a store reads its label index by, the
// first in key order, and all of f's labels as label.Encode writes them
// (the others checked by the same index); "" when f has none.
func (f RunFilter) IndexLabel() (key, value, all string) {
	if len(f.Labels) == 0 {
		return "", "", ""
	}
	key = slices.Min(slices.Collect(maps.Keys(f.Labels)))
	return key, f.Labels[key], label.Encode(f.Labels)
}

// Match reports whether r is selected.
func (f RunFilter) Match(r Run) bool {
	return (f.State == "" || r.State == f.State) && (f.WorkflowID == "" || r.WorkflowID == f.WorkflowID) &&
		(f.WorkflowVersion == "" || r.WorkflowVersion == f.WorkflowVersion) && (f.WorkflowIDs == nil || slices.Contains(f.WorkflowIDs, r.WorkflowID)) &&
		label.Matches(r.Labels, f.Labels)
}

// RunMatcher is implemented by stores that filter their runs inside the
// database, where MatchingRuns would read every header to its filter.
type RunMatcher interface {
	// MatchRuns answers what MatchingRuns answers for the same arguments:
	// the same runs and the same next.
	MatchRuns(ctx context.Context, after string, limit, scan int, f RunFilter) (runs []Run, next string, err error)
}

// MatchingRuns reads runs after the run id after, in creation order, and
// keeps those f selects, until it has limit of them or has read scan
// headers (scan 0: no bound), counting only headers bearing f's labels
// when it has any. next is where a following call goes on (the last run
// read, or counted), or "" when the store was read to its end. A store that
// is a RunMatcher (or wraps one) filters inside the database; any other is
// paged through, a header at a time: the API bounds a request's scan, the
// command line does not.
func MatchingRuns(ctx context.Context, st RunLister, after string, limit, scan int, f RunFilter) (runs []Run, next string, err error) {
	if err := ValidateMatch(limit, scan); err != nil {
		return nil, "", err
	}
	if m, ok := listerAs[RunMatcher](st); ok {
		return m.MatchRuns(ctx, after, limit, scan, f)
	}
	cursor, scanned := after, 0
	for {
		page, err := st.Runs(ctx, cursor, listPage)
		if err != nil {
			return nil, "", err
		}
		for _, run := range page {
			cursor = run.ID
			if !label.Matches(run.Labels, f.Labels) {
				continue
			}
			scanned++
			if f.Match(run) {
				runs = append(runs, run)
				if len(runs) == limit {
					return runs, cursor, nil
				}
			}
			if scan > 0 && scanned >= scan {
				return runs, cursor, nil
			}
		}
		if len(page) < listPage {
			return runs, "", nil
		}
	}
}

// MatchNext is next for a RunMatcher that found runs with a limit, having
// scanned up to the run boundID (the scan-th after the cursor; "" when
// there were fewer or no bound): the limit-th run's id when it reached
// the limit, else the bound's, else "" for the store read to its end.
func MatchNext(runs []Run, limit int, boundID string) string {
	if len(runs) == limit {
		return runs[len(runs)-1].ID
	}
	return boundID
}

// ValidateMatch refuses a limit below 1 or a negative scan bound, for
// MatchingRuns and every RunMatcher alike.
func ValidateMatch(limit, scan int) error {
	if limit < 1 || scan < 0 {
		return Errorf(CodeInvalidInput, "match runs", "", nil, "limit %d and scan %d: the limit must be at least 1, the scan bound not negative", limit, scan)
	}
	return nil
}
