package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// runSlice is a RunLister over runs in creation order.
type runSlice []Run

func (rs runSlice) Runs(_ context.Context, after string, limit int) ([]Run, error) {
	i := 0
	if after != "" {
		i = slices.IndexFunc(rs, func(r Run) bool { return r.ID == after }) + 1
	}
	return rs[i:min(len(rs), i+limit)], nil
}

// MatchingRuns keeps what the filter accepts, across pages, up to the
// limit or the scan bound, and says where to go on; read to the end it
// says nowhere.
func TestMatchingRuns(t *testing.T) {
	var rs runSlice
	for i := range 1234 {
		state := "INGEST"
		if i%100 == 7 {
			state = "WAIT_APPROVAL"
		}
		rs = append(rs, Run{ID: fmt.Sprintf("r-%04d", i), State: state})
	}
	waiting := RunFilter{State: "WAIT_APPROVAL"}
	ids := func(runs []Run) []string {
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, c := range []struct {
		name        string
		after       string
		limit, scan int
		match       RunFilter
		want        []string
		next        string
	}{
		{"all waiting, read to the end", "", 100, 0, waiting,
			[]string{"r-0007", "r-0107", "r-0207", "r-0307", "r-0407", "r-0507", "r-0607", "r-0707", "r-0807", "r-0907", "r-1007", "r-1107", "r-1207"}, ""},
		{"the limit across a page boundary", "", 6, 0, waiting,
			[]string{"r-0007", "r-0107", "r-0207", "r-0307", "r-0407", "r-0507"}, "r-0507"},
		{"after a cursor", "r-0507", 2, 0, waiting, []string{"r-0607", "r-0707"}, "r-0707"},
		{"the scan bound", "", 100, 300, waiting, []string{"r-0007", "r-0107", "r-0207"}, "r-0299"},
		{"nothing matches", "", 10, 0, RunFilter{State: "NOWHERE"}, nil, ""},
		{"the last run exactly at the limit", "r-1200", 1, 0, waiting, []string{"r-1207"}, "r-1207"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, next, err := MatchingRuns(context.Background(), rs, c.after, c.limit, c.scan, c.match)
			if err != nil || !slices.Equal(ids(got), c.want) || next != c.next {
				t.Fatalf("got %v next %q (%v), want %v next %q", ids(got), next, err, c.want, c.next)
			}
		})
	}
}

// A limit below 1 or a negative scan bound is refused, typed, whatever
// the store.
func TestMatchingRunsRefusesBadBounds(t *testing.T) {
	rs := runSlice{{ID: "r-1", State: "INGEST"}}
	for _, bad := range [][2]int{{0, 0}, {-1, 0}, {1, -1}} {
		runs, next, err := MatchingRuns(context.Background(), rs, "", bad[0], bad[1], RunFilter{})
		if CodeOf(err) != CodeInvalidInput || runs != nil || next != "" {
			t.Fatalf("limit %d scan %d: %v %q %v", bad[0], bad[1], runs, next, err)
		}
	}
}
