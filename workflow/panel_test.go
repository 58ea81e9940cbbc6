package workflow

import (
	"slices"
	"strings"
	"testing"

	"flrh.dev/flrh/panel"
)

// boardPolicy knows the groups treasury (carol, dave) and legal (dave,
// erin) and the panel board of both.
func boardPolicy(a map[string]any) {
	a["groups"] = map[string]any{"treasury": []any{"carol", "dave"}, "legal": []any{"dave", "erin"}}
	a["panels"] = map[string]any{"board": []any{"treasury", "legal"}}
}

// boardBundle is the refund example with boardPolicy, whose gates send
// large refunds to the board; more edits the approval policy further.
func boardBundle(t testing.TB, more func(a map[string]any)) (*Workflow, error) {
	t.Helper()
	return bundleSendingTo(t, "board", boardPolicy, more)
}

// A request naming a panel: a member of either group may answer it, no one
// else; it needs two people; who may approve says how; the workflow tells
// the runner the panel's groups.
func TestGatesNameAPanel(t *testing.T) {
	w, err := boardBundle(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	const who = "one member of each of treasury (carol, dave) and legal (dave, erin), each a different person (panel board)"
	if got, want := w.WhoMayApprove(), "finance-lead; or, where the gate policy names them, "+who; got != want {
		t.Fatalf("who may approve: %q, want %q", got, want)
	}
	st, _ := w.Init("run-a")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 3000, "bob", "late")})
	if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("%v %v", err, outcomes(r))
	}
	need := *r.Effects[0].Approval
	if need.Approver != "board" {
		t.Fatalf("the need names %q", need.Approver)
	}
	v, err := w.Inspect(r.State)
	if err != nil || len(v.Pending) != 1 {
		t.Fatalf("view %v %+v", err, v.Pending)
	}
	p := v.Pending[0]
	if p.Approver != "board" || p.Who != who || p.Quorum != 2 || !slices.Equal(p.Members, []string{"carol", "dave", "erin"}) ||
		len(p.Panel) != 2 || p.Panel[1].Name != "legal" || !slices.Equal(p.Panel[1].Members, []string{"dave", "erin"}) {
		t.Fatalf("pending %+v", p)
	}
	if got := w.WhoMayApproveRequest(need.Approver, need.Quorum); got != who {
		t.Fatalf("who may approve the request: %q", got)
	}
	if got := w.ApprovalPanel("board"); len(got) != 2 || got[0].Name != "treasury" {
		t.Fatalf("the panel: %+v", got)
	}
	if w.ApprovalPanel("") != nil || w.ApprovalPanel("treasury") != nil {
		t.Fatal("a person or a group is no panel")
	}
	for _, by := range []string{"carol", "dave", "erin"} {
		if err := w.CheckGrant(need, grantFor(need, by, "human_approver")); err != nil {
			t.Fatalf("%s's grant: %v", by, err)
		}
	}
	for _, by := range []string{"finance-lead", "board", "treasury", "mallory"} {
		if err := w.CheckGrant(need, grantFor(need, by, "human_approver")); err == nil {
			t.Fatalf("%s's grant answers a request naming the board", by)
		}
	}
	// A group listed twice asks two of its members.
	w2, err := boardBundle(t, func(a map[string]any) {
		a["groups"] = map[string]any{"treasury": []any{"carol", "dave", "frank"}, "legal": []any{"dave", "erin"}}
		a["panels"] = map[string]any{"board": []any{"treasury", "legal", "treasury"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := w2.WhoMayApproveRequest("board", 0); got != "2 of treasury (carol, dave, frank) and one of legal (dave, erin), each a different person (panel board)" {
		t.Fatalf("who may approve, two of treasury: %q", got)
	}
	if got := w2.ApprovalPanel("board"); len(got) != 3 || got[2].Name != "treasury" {
		t.Fatalf("the panel: %+v", got)
	}
	// A quorum beyond the panel's groups asks for more people in all.
	w3, err := boardBundle(t, func(a map[string]any) {
		a["groups"] = map[string]any{"treasury": []any{"carol", "dave", "frank"}, "legal": []any{"dave", "erin", "gina"}}
		a["members"], a["quorum"], a["approver"] = []any{"alice", "bob", "finance-lead"}, int64(3), "finance-leads"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := w3.WhoMayApproveRequest("board", 0); got != "one member of each of treasury (carol, dave, frank) and legal (dave, erin, gina), each a different person (panel board), 3 people in all" {
		t.Fatalf("who may approve, a quorum of 3: %q", got)
	}
}

// The approval policy's own approver may be a panel: every request needs
// its groups.
func TestApproverIsAPanel(t *testing.T) {
	w, err := Compile(editBundle(t, func(m map[string]any) {
		a := m["approval"].(map[string]any)
		a["approver"] = "board"
		a["groups"] = map[string]any{"treasury": []any{"carol", "dave"}, "legal": []any{"erin"}}
		a["panels"] = map[string]any{"board": []any{"treasury", "legal"}}
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.ApprovalPanel(""); len(got) != 2 || got[1].Name != "legal" {
		t.Fatalf("the approver's panel: %+v", got)
	}
	st, _ := w.Init("run-a")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: refundInput("r-9", 600, "bob", "late")})
	if err != nil || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("%v %v", err, outcomes(r))
	}
	need := *r.Effects[0].Approval
	if err := w.CheckGrant(need, grantFor(need, "erin", "human_approver")); err != nil {
		t.Fatal(err)
	}
	if got := w.WhoMayApproveRequest(need.Approver, need.Quorum); got != "one member of each of treasury (carol, dave) and legal (erin), each a different person (panel board)" {
		t.Fatalf("who may approve: %q", got)
	}
}

// A malformed panel does not compile: the place and what is wrong are said.
func TestPanelsAreChecked(t *testing.T) {
	checkPolicyCases(t, "board", boardPolicy, []policyCase{
		{"one group", func(a map[string]any) { a["panels"] = map[string]any{"board": []any{"treasury"}} }, "", "/approval/panels/board", "must list from 2 to 10 groups"},
		{"eleven groups", func(a map[string]any) {
			gs, names := map[string]any{}, []any{}
			for _, n := range strings.Fields("g0 g1 g2 g3 g4 g5 g6 g7 g8 g9 g10") {
				gs[n], names = []any{"p-" + n}, append(names, n)
			}
			a["groups"], a["panels"] = gs, map[string]any{"board": names}
		}, "", "/approval/panels/board", "must list from 2 to 10 groups"},
		{"three of a group of two", func(a map[string]any) {
			a["panels"] = map[string]any{"board": []any{"treasury", "treasury", "treasury"}}
		}, "", "/approval/panels/board",
			"it would always wait for a member of treasury"},
		{"two of a group of two", func(a map[string]any) { a["panels"] = map[string]any{"board": []any{"treasury", "treasury"}} }, "", "", ""},
		{"an unknown group", func(a map[string]any) { a["panels"] = map[string]any{"board": []any{"treasury", "audit"}} }, "", "/approval/panels/board/1",
			`"audit" is not a group the approval policy lists with its members (legal, treasury)`},
		{"a person for a group", func(a map[string]any) { a["panels"] = map[string]any{"board": []any{"treasury", "finance-lead"}} }, "", "/approval/panels/board/1",
			`"finance-lead" is not a group`},
		{"a panel of panels", func(a map[string]any) {
			a["panels"] = map[string]any{"board": []any{"treasury", "legal"}, "super": []any{"board", "legal"}}
		}, "", "/approval/panels/super/0", `"board" is a panel`},
		{"a panel named like a group", func(a map[string]any) {
			a["panels"] = map[string]any{"board": []any{"treasury", "legal"}, "legal": []any{"treasury", "board"}}
		}, "", "/approval/panels/legal", "also a group's name"},
		{"a panel named like the approver's group", func(a map[string]any) {
			a["approver"], a["members"] = "board", []any{"alice"}
		}, "", "/approval/panels/board", "is the approver's group"},
		{"a panel's name not an id", func(a map[string]any) {
			a["panels"] = map[string]any{"board": []any{"treasury", "legal"}, "bo ard": []any{"treasury", "legal"}}
		}, "", "/approval/panels/bo ard", "is not an id"},
		{"one person for two groups", func(a map[string]any) {
			a["groups"] = map[string]any{"treasury": []any{"dave"}, "legal": []any{"dave"}}
		}, "", "/approval/panels/board", "its groups' members cannot give it a different person for each place: it would always wait for a member of legal"},
		{"a quorum of four over three groups", func(a map[string]any) {
			a["approver"], a["members"], a["quorum"] = "finance-leads", []any{"alice", "bob", "erin", "frank"}, int64(4)
			a["groups"] = map[string]any{"treasury": []any{"carol", "dave", "x1", "x2"}, "legal": []any{"dave", "erin", "x3", "x4"}}
			a["panels"] = map[string]any{"board": []any{"treasury", "legal", "finance-leads"}}
		}, "", "", ""},
		{"the gates' quorum beyond a panel's group", func(a map[string]any) {
			a["members"], a["approver"] = []any{"alice", "bob", "erin", "frank"}, "finance-leads"
		},
			".decl quorum(n: number, rule: symbol)\nquorum(4, \"q\") :- param_num(t, \"amount\", n), n > 5000.\n", "/approval/groups/legal", `asks up to 4 people to approve (quorum), but "legal" has 2 members`},
		{"the gates name an unknown panel", func(a map[string]any) { delete(a, "panels") }, "", "/approval/groups",
			`names approver "board", whom the approval policy does not name (it names finance-lead, legal, treasury)`},
	})
}

// The panel a policy describes is the one the pairing works on: its groups
// in order, each with its members.
func TestPanelOfThePolicy(t *testing.T) {
	p := ApprovalPolicy{Approver: "finance-leads", Members: []string{"alice"}, Groups: map[string][]string{"legal": {"erin"}},
		Panels: map[string][]string{"board": {"legal", "finance-leads"}}}
	got := p.panelOf("board")
	want := []panel.Group{{Name: "legal", Members: []string{"erin"}}, {Name: "finance-leads", Members: []string{"alice"}}}
	if len(got) != 2 || got[0].Name != want[0].Name || !slices.Equal(got[1].Members, want[1].Members) {
		t.Fatalf("panel %+v", got)
	}
	if err := p.mayAnswer("board", "alice"); err != nil {
		t.Fatal(err)
	}
	if p.quorumOf("board") != 2 || p.quorumOf("legal") != 0 || p.quorumOf("nobody") != 0 {
		t.Fatal("quorumOf")
	}
}
