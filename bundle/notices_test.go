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

// noticeBodies takes every notice due from h's store and settles it.
func (h *harness) noticeBodies() []store.NoticeBody {
	h.t.Helper()
	nb, ok := store.NoticeboardOf(h.st)
	if !ok {
		h.t.Fatal("the store keeps no notices")
	}
	ns, err := nb.ClaimNotices(h.ctx, "test", time.Minute, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]store.NoticeBody, len(ns))
	for i, n := range ns {
		if err := json.Unmarshal(n.Body, &out[i]); err != nil || out[i].Kind != n.Kind {
			h.t.Fatalf("notice %s: %s (%v)", n.ID, n.Body, err)
		}
		if err := nb.NoticeDone(h.ctx, n.ID, "test"); err != nil {
			h.t.Fatal(err)
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
