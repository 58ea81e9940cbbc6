package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/workflow"
)

// withLoop copies an example and sets its workflow.json loop section.
func withLoop(t *testing.T, example, loop string) string {
	t.Helper()
	dir := copyExample(t, example)
	p := filepath.Join(dir, "workflow.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	s = strings.TrimSuffix(s, "}") + `,"loop":` + loop + "}\n"
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoopSectionSetsTheBudgets(t *testing.T) {
	plain, _, err := Load(filepath.Join("..", "examples", "refund-agent"))
	if err != nil {
		t.Fatal(err)
	}
	if c := plain.LoopContract(); c.Digest != control.DefaultContract().Digest {
		t.Fatalf("a bundle without a loop section runs under %s, not the default contract", c.Digest)
	}
	wf, _, err := Load(withLoop(t, "refund-agent", `{"budgets":{"steps":5,"tool_calls":2,"wall_seconds":30,"suspended_seconds":600},"retry":{"base_millis":50,"cap_millis":200}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := wf.LoopContract()
	l := c.Budgets.Limits
	if l.Steps != 5 || l.ToolCalls != 2 || l.WallSeconds != 30 || l.SuspendedSeconds != 600 || c.Retry.BaseMillis != 50 || c.Retry.CapMillis != 200 {
		t.Fatalf("limits %+v retry %+v", l, c.Retry)
	}
	if wf.Digest() == plain.Digest() {
		t.Fatal("the workflow digest does not bind its budgets")
	}
}

func TestLoopSectionErrorsAreTyped(t *testing.T) {
	for _, tc := range []struct{ name, loop, ptr string }{
		{"not an object", `7`, "/loop"},
		{"unknown member", `{"budget":{"steps":3}}`, "/loop/budget"},
		{"unknown budget", `{"budgets":{"max_steps":3}}`, "/loop/budgets/max_steps"},
		{"zero", `{"budgets":{"tool_calls":0}}`, "/loop/budgets/tool_calls"},
		{"too many retries", `{"budgets":{"retries_per_transition":99}}`, "/loop/budgets/retries_per_transition"},
		{"cap below base", `{"retry":{"base_millis":900,"cap_millis":100}}`, "/loop/retry/cap_millis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, a, err := Load(withLoop(t, "refund-agent", tc.loop))
			var be *workflow.Error
			if w != nil || a != nil || !errors.As(err, &be) || be.Code != workflow.CodeBadLoop || be.File != "workflow.json" || be.Pointer != tc.ptr {
				t.Fatalf("got %v, want %s at %s", err, workflow.CodeBadLoop, tc.ptr)
			}
		})
	}
}

func TestBundleBudgetEndsTheRun(t *testing.T) {
	// A second of waiting for a person: a large refund that waits longer
	// for its approval times out, and nothing is paid.
	wf, ads, err := Load(withLoop(t, "refund-agent", `{"budgets":{"suspended_seconds":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, wf, ads)
	h.start("b1", refund("b1", 400, "alice", "damaged item"))
	if s := h.status("b1"); s.State != "WAIT_APPROVAL" {
		t.Fatalf("state %s", s.State)
	}
	time.Sleep(1100 * time.Millisecond)
	h.idle()
	s := h.status("b1")
	if s.State != "TIMED_OUT" || s.Run.Outcome != "timeout" || len(h.intents("b1")) != 0 {
		t.Fatalf("state %s outcome %s, %d intents", s.State, s.Run.Outcome, len(h.intents("b1")))
	}
	if len(h.trace("b1", "budget_exhausted")) != 1 {
		t.Fatal("no budget_exhausted trace record")
	}
	h.checkRecord("b1")
}
