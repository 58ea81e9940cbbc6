package bundle

import (
	"fmt"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
)

// MayApprove answers what Approve would, person by person, and writes
// nothing: checked against Approve itself at each step of a run that
// separates duties and needs two of three people.
func TestMayApproveAnswersAsApproveWould(t *testing.T) {
	wf, ads := groupBundleWith(t, `"quorum": 2, "separate_duties": true,`)
	h := newHarnessWith(t, wf, ads)
	const run = "refund-may"
	maker := runner.Actor{Name: "alice", Role: "operator", Capability: "run.start"}
	if err := h.r.StartAs(h.ctx, run, wf.ID(), wf.Version(), []byte(refund("r-7001", 5000, "gina", "damaged")), maker); err != nil {
		t.Fatal(err)
	}
	h.idle()
	req := h.status(run).Waiting[0].RequestID
	written := func() string {
		in, err := h.st.Inbox(h.ctx, run, false)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d inbox entries, %d grants", len(in), len(h.grants(run)))
	}
	text := func(err error) string {
		if err == nil {
			return "may"
		}
		return fmt.Sprintf("%T: %v", err, err)
	}
	for i, c := range []struct {
		who, request string
		may          bool
		idle         bool // let the run take what was approved
	}{
		{"mallory", req, false, false},                 // not a member
		{"alice", req, false, false},                   // the maker
		{"bob", "approval-request:none", false, false}, // no such request
		{"bob", req, true, false},
		{"bob", req, false, true},  // a second approval by bob, pending
		{"bob", req, false, false}, // and taken
		{"carol", req, true, true},
		{"carol", req, false, false}, // the run has ended
	} {
		before := written()
		may := h.r.MayApprove(h.ctx, run, c.request, runner.ApproverActor(c.who))
		if after := written(); after != before {
			t.Fatalf("step %d: MayApprove wrote: %s, then %s", i, before, after)
		}
		did := h.r.Approve(h.ctx, run, c.request, runner.ApproverActor(c.who), 10*time.Minute)
		if text(may) != text(did) || (may == nil) != c.may {
			t.Fatalf("step %d, %s: MayApprove says %s, Approve %s; want may=%v", i, c.who, text(may), text(did), c.may)
		}
		if c.idle {
			h.idle()
		}
	}
	h.paid(run)
}
