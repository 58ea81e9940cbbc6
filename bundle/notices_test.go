package bundle

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// noticeBodies takes every notice due from h's store, settles it and
// returns its body.
func (h *harness) noticeBodies() []store.NoticeBody {
	h.t.Helper()
	ns := h.claimNotices()
	out := make([]store.NoticeBody, len(ns))
	for i, n := range ns {
		if err := json.Unmarshal(n.Body, &out[i]); err != nil || out[i].Kind != n.Kind {
			h.t.Fatalf("notice %s: %s (%v)", n.ID, n.Body, err)
		}
	}
	return out
}

// A proposal offered to a person to choose among options is told of with
// the input that offered it; one the controller chooses for itself is
// not; the run's end is told of once chosen.
func TestChoiceWaitingNotice(t *testing.T) {
	wf, ads, err := Load(filepath.Join("..", "examples", "support-agent"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })

	h.start("goodwill-large", refund("r-2001", 60, "carol", "goodwill"))
	cards := h.trace("goodwill-large", "aif.scorecard")
	if len(cards) != 1 || cards[0]["chooser"] != "person" {
		t.Fatalf("scorecards %v", cards)
	}
	proposal := cards[0]["proposal_id"].(string)
	got := h.noticeBodies()
	if len(got) != 1 || got[0].Kind != store.NoticeChoice || got[0].RunID != "goodwill-large" || got[0].State != "INGEST" ||
		!slices.Equal(got[0].Proposals, []string{proposal}) {
		t.Fatalf("notices %+v, want one choice_waiting for %s", got, proposal)
	}
	h.choose("goodwill-large", proposal, "path:store-credit", chooser)
	h.paid("goodwill-large")
	if got = h.noticeBodies(); len(got) != 1 || got[0].Kind != store.NoticeEnded || got[0].Outcome != "success" {
		t.Fatalf("after the choice: %+v", got)
	}

	h.start("goodwill-small", refund("r-2002", 20, "dave", "goodwill"))
	h.paid("goodwill-small")
	if got = h.noticeBodies(); len(got) != 1 || got[0].Kind != store.NoticeEnded || got[0].RunID != "goodwill-small" {
		t.Fatalf("a choice the controller made: %+v", got)
	}
}

// A run that came to wait for a choice while its runner wrote no notices
// is told of by TellWaiting with the notice, ID and body, its input's
// tick would have written; told once however often it is asked, and not
// at all once the choice is made.
func TestTellWaitingTellsOfChoices(t *testing.T) {
	wf, ads, err := Load(filepath.Join("..", "examples", "support-agent"))
	if err != nil {
		t.Fatal(err)
	}
	noticing := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })
	quiet := newHarnessWith(t, wf, ads)
	for _, h := range []*harness{noticing, quiet} {
		h.start("goodwill-large", refund("r-2001", 60, "carol", "goodwill"))
		h.start("goodwill-small", refund("r-2002", 20, "dave", "goodwill"))
	}
	want := noticing.claimNotices()
	if len(want) != 2 || want[0].Kind != store.NoticeChoice || want[1].Kind != store.NoticeEnded {
		t.Fatalf("the noticing runner wrote %+v", want)
	}
	if got := quiet.claimNotices(); len(got) != 0 {
		t.Fatalf("the quiet runner wrote %+v", got)
	}
	for range 2 {
		if n, err := quiet.r.TellWaiting(quiet.ctx, time.Time{}, time.Time{}); err != nil || n != 1 {
			t.Fatalf("told of %d runs (%v), want 1", n, err)
		}
	}
	got := quiet.claimNotices()
	if len(got) != 1 || got[0].ID != want[0].ID || got[0].Kind != want[0].Kind || string(got[0].Body) != string(want[0].Body) {
		t.Fatalf("told of %+v,\nwant %+v", got, want[:1])
	}
	st, err := quiet.r.Inspect(quiet.ctx, "goodwill-large")
	if err != nil || len(st.Offered) != 1 {
		t.Fatalf("status %+v (%v)", st, err)
	}
	quiet.choose("goodwill-large", st.Offered[0], "path:store-credit", chooser)
	if n, err := quiet.r.TellWaiting(quiet.ctx, time.Time{}, time.Time{}); err != nil || n != 0 {
		t.Fatalf("told of %d runs (%v) after the choice", n, err)
	}
}

// claimNotices takes every notice due from h's store, settles it and
// returns it.
func (h *harness) claimNotices() []store.Notice {
	h.t.Helper()
	nb, ok := store.NoticeboardOf(h.st)
	if !ok {
		h.t.Fatal("the store keeps no notices")
	}
	ns, err := nb.ClaimNotices(h.ctx, "test", time.Minute, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, n := range ns {
		if err := nb.NoticeDone(h.ctx, n.ID, "test"); err != nil {
			h.t.Fatal(err)
		}
	}
	return ns
}

// An approval's notice says who may give it, in the workflow's words, as
// the tick that came to wait writes it and as TellWaiting tells of a run
// that waited while no one wrote notices.
func TestApprovalNoticeSaysWhoMayApprove(t *testing.T) {
	wf, ads := groupBundleWith(t, `"quorum": 2, "separate_duties": true,`)
	noticing := newHarnessWith(t, wf, ads, func(c *runner.Config) { c.Notices = true })
	quiet := newHarnessWith(t, wf, ads)
	for _, h := range []*harness{noticing, quiet} {
		h.start("refund-big", refund("r-6001", 5000, "dave", "damaged"))
	}
	want := noticing.claimNotices()
	var b store.NoticeBody
	if len(want) != 1 || json.Unmarshal(want[0].Body, &b) != nil || b.Kind != store.NoticeApproval ||
		b.Approvers != "2 of alice, bob, carol (members of finance-leads), each approving; no one who handed the run an input" {
		t.Fatalf("the approval's notice: %+v %+v", want, b)
	}
	if n, err := quiet.r.TellWaiting(quiet.ctx, time.Time{}, time.Time{}); err != nil || n != 1 {
		t.Fatalf("told of %d runs (%v), want 1", n, err)
	}
	if got := quiet.claimNotices(); len(got) != 1 || got[0].ID != want[0].ID || string(got[0].Body) != string(want[0].Body) {
		t.Fatalf("told of %+v,\nwant %+v", got, want)
	}
}
