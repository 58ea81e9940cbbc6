package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// Runs started with --label show their labels and are listed by them,
// as the API's ?label= lists them; a label the rules refuse, or one of
// flrh's own, is a usage error that starts nothing.
func TestRunLabelsOverTheCLI(t *testing.T) {
	c := newCLIRig(t)
	c.ok("run", "start", "example:refund-agent", "--id", "big", "--input-json", largeRefund, c.dest, "--label", "order=A-1042", "--label", "team=payments")
	c.ok("run", "start", "example:support-agent", "--id", "gw", "--input-json", goodwillRefund, c.dest, "--label", "team=support")
	if out := c.ok("run", "show", "big"); !strings.Contains(out, "labels order=A-1042, team=payments") {
		t.Errorf("run show does not say the labels:\n%s", out)
	}
	var shown struct {
		Run struct {
			Labels map[string]string `json:"labels"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(c.ok("run", "show", "big", "--json")), &shown); err != nil || !maps.Equal(shown.Run.Labels, map[string]string{"order": "A-1042", "team": "payments"}) {
		t.Errorf("run show --json: %+v %v", shown, err)
	}
	for _, f := range []struct {
		args []string
		want []string
	}{
		{[]string{"--label", "team=payments"}, []string{"big"}},
		{[]string{"--label", "team=support", "--workflow", "support-agent"}, []string{"gw"}},
		{[]string{"--label", "team=payments", "--label", "order=A-1042"}, []string{"big"}},
		{[]string{"--label", "team=payments", "--label", "order=A-1"}, nil},
		{[]string{"--label", "team=support", "--state", "WAIT_APPROVAL"}, nil},
	} {
		if ids := c.listed(f.args...); !slices.Equal(ids, f.want) {
			t.Errorf("run list %v: %v, want %v", f.args, ids, f.want)
		}
	}
	if out := c.ok("run", "export", "big"); !strings.Contains(out, `"labels":{"order":"A-1042","team":"payments"}`) {
		t.Errorf("run export does not carry the labels:\n%s", out)
	}
	if out := c.ok("run", "list", "--label", "team=payments"); !strings.Contains(out, "LABELS") || !strings.Contains(out, "order=A-1042, team=payments") {
		t.Errorf("run list does not show labels:\n%s", out)
	}
	if out := c.ok("approvals", "--label", "team=payments"); !strings.Contains(out, "run big (refund-agent@1) waits for approval") || !strings.Contains(out, "    labels order=A-1042, team=payments\n") {
		t.Errorf("approvals --label team=payments:\n%s", out)
	}
	if out := c.ok("approvals", "--label", "team=support"); strings.Contains(out, "run big") {
		t.Errorf("approvals --label team=support lists big:\n%s", out)
	}
	for _, bad := range [][]string{{"--label", "Team=x"}, {"--label", "flrh.schedule=nightly"}, {"--label", "team"}, {"--label", "team=a", "--label", "team=b"}} {
		args := append([]string{"run", "start", "example:refund-agent", "--id", "refused", "--input-json", largeRefund, c.dest}, bad...)
		if out, code := c.run(args...); code != 2 || !strings.Contains(out, "--label") {
			t.Errorf("run start %v: exit %d, want a usage error:\n%s", bad, code, out)
		}
	}
	if out, code := c.run("run", "show", "refused"); code != 1 {
		t.Errorf("a start refused for its labels started a run: exit %d\n%s", code, out)
	}
	if out, code := c.run("run", "list", "--label", "Team=x"); code != 2 {
		t.Errorf("run list --label Team=x: exit %d\n%s", code, out)
	}
}
