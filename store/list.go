package store

import "context"

// RunLister pages through a store's runs in creation order.
type RunLister interface {
	Runs(ctx context.Context, after string, limit int) ([]Run, error)
}

// listPage is how many run headers MatchingRuns reads at a time.
const listPage = 500

// MatchingRuns reads runs after the run id after, in creation order, and
// keeps those match accepts, until it has limit of them or has read scan
// headers (scan 0: no bound). next is where a following call goes on (the
// last run read), or "" when the store was read to its end. The store
// pages in creation order only, so a filter scans: the API bounds a
// request's scan, the command line does not.
func MatchingRuns(ctx context.Context, st RunLister, after string, limit, scan int, match func(Run) bool) (runs []Run, next string, err error) {
	cursor, scanned := after, 0
	for {
		page, err := st.Runs(ctx, cursor, listPage)
		if err != nil {
			return nil, "", err
		}
		for _, run := range page {
			cursor = run.ID
			scanned++
			if match(run) {
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
