package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
	"flrh.dev/flrh/workflow"
)

// Tokens of the deliberation tests. The example bundles name
// "finance-lead" as the approver of large refunds.
const (
	tokDana    = "tok-dana-operator-8f3a2c"
	tokFinance = "tok-finance-approver-1b7e9d"
	tokBot     = "tok-bot-agent-6c4d0e"
	tokVic     = "tok-vic-viewer-2a9f5b"
	tokRita    = "tok-rita-reconciler-3e8c1a"
	tokAlex    = "tok-alex-approver-7d2f4b"   // an approver the bundles' policy does not name
	tokOncall  = "tok-oncall-approver-5e1c8d" // the operations example's approver
)

const steerTokens = `{"tokens":[
 {"actor":"dana","roles":["operator"],"token":"` + tokDana + `"},
 {"actor":"finance-lead","roles":["approver"],"token":"` + tokFinance + `"},
 {"actor":"refund-bot","roles":["agent"],"token":"` + tokBot + `"},
 {"actor":"vic","roles":["viewer"],"token":"` + tokVic + `"},
 {"actor":"rita","roles":["reconciler"],"token":"` + tokRita + `"},
 {"actor":"alex","roles":["approver"],"token":"` + tokAlex + `"},
 {"actor":"oncall-lead","roles":["approver"],"token":"` + tokOncall + `"}
]}`

// newBundleFixture serves the refund-agent and support-agent example
// bundles over a temporary SQLite store, paying refunds at an HTTP sandbox,
// with a background runner.
func newBundleFixture(t testing.TB) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, notifier := NotifyCommits(st)
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sbDone := make(chan struct{})
	go func() { defer close(sbDone); sb.Serve(ctx, ln, time.Second) }()
	url := "http://" + ln.Addr().String() + sandbox.EffectsPath
	var wfs []runner.Workflow
	reg := &effect.Registry{}
	for _, name := range []string{"refund-agent", "support-agent", "ops-agent"} {
		wf, ads, err := bundle.LoadExample(name)
		if err != nil {
			t.Fatal(err)
		}
		wfs = append(wfs, wf)
		own, err := ads.Registry(func(string) string { return url })
		if err != nil {
			t.Fatal(err)
		}
		// The refund bundles both pay refund.pay over http/1: the first
		// one's adapter serves both.
		for _, e := range own.Entries() {
			if _, ok := reg.Adapter(e[0], e[1]); ok {
				continue
			}
			a, _ := own.Adapter(e[0], e[1])
			if err := reg.Register(e[0], e[1], a); err != nil {
				t.Fatal(err)
			}
		}
	}
	runnerLog := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	if _, fuzzing := t.(*testing.F); fuzzing {
		runnerLog = slog.New(slog.DiscardHandler)
	}
	r, err := runner.New(runner.Config{Store: wrapped, Workflows: wfs, Adapters: reg, Owner: "test-server",
		Poll: 20 * time.Millisecond, Parallelism: 4, Logger: runnerLog, Reconcile: effect.Plan{Backoff: []time.Duration{0}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	tk, err := ParseTokens([]byte(steerTokens))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv, err := New(Config{Store: wrapped, Runner: r, Catalog: Static(wfs), Tokens: tk, Notifier: notifier,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), StreamPoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Shutdown()
		ts.Close()
		cancel()
		<-done
		<-sbDone
		st.Close()
		sb.Close()
	})
	return &fixture{t: t, store: wrapped, runner: r, server: srv, ts: ts, sb: sb, logs: logs}
}

func refundRequest(id string, amount int, payee, reason string) string {
	b, _ := json.Marshal(map[string]any{"type": "refund.requested/1",
		"payload": map[string]any{"refund_id": id, "amount": amount, "payee": payee, "reason": reason}})
	return string(b)
}

// startBundleRun starts a run of an example bundle with one refund request.
func (f *fixture) startBundleRun(workflow, runID, input string) {
	f.t.Helper()
	body := fmt.Sprintf(`{"workflow":%q,"run_id":%q,"input":%s}`, workflow, runID, input)
	if a := f.post("/v1/runs", tokDana, body); a.status != 201 {
		f.t.Fatalf("start %s: %d %s", runID, a.status, a.body)
	}
}

// viewOf reads the workflow's view from a run page.
func viewOf(t testing.TB, p RunPage) workflow.View {
	t.Helper()
	if p.View == nil {
		t.Fatalf("run %s: the page has no view", p.Run.ID)
	}
	b, _ := json.Marshal(p.View)
	var v workflow.View
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// chosenRun starts run id on the support agent, a goodwill refund of 60
// to carol (refundID), has dana choose option among the paths H offers,
// waits for the run's end, and returns the proposal the choice answered.
func (f *fixture) chosenRun(id, refundID, option string) (proposal string) {
	f.t.Helper()
	f.startBundleRun("support-agent", id, refundRequest(refundID, 60, "carol", "goodwill"))
	v := f.waitView(id, "OPTIONS", inOptions)
	if a := f.post("/v1/runs/"+id+"/choose", tokDana, fmt.Sprintf(`{"proposal_id":%q,"option":%q}`, v.Offers[0].ProposalID, option)); a.status != 202 {
		f.t.Fatalf("choose: %d %s", a.status, a.body)
	}
	f.waitFor(id, tokVic, "its end", ended)
	return v.Offers[0].ProposalID
}

// waitView polls a run's page until its view satisfies cond.
func (f *fixture) waitView(id, what string, cond func(workflow.View) bool) workflow.View {
	f.t.Helper()
	var v workflow.View
	f.waitFor(id, tokVic, what, func(p RunPage) bool {
		if p.View == nil {
			return false
		}
		v = viewOf(f.t, p)
		return cond(v)
	})
	return v
}

// mrpFHR is an FHR as stored: mrp.FHR with the moves by name (mrp.Move
// writes its name and reads none).
type mrpFHR struct {
	mrp.FHR
	Resolutions []ResolutionView `json:"resolutions"`
}

// Seal recomputes the digest over the stored record.
func (f mrpFHR) Seal() (mrp.FHR, error) {
	g := f.FHR
	for _, r := range f.Resolutions {
		m := slices.Index(moveNames, r.Move)
		g.Resolutions = append(g.Resolutions, mrp.ResolutionRecord{Ticket: r.Ticket, HighestTier: r.HighestTier, Decision: r.Decision,
			Move: mrp.Move(m), Contestable: r.Contestable, Options: r.Options, Ties: r.Ties, Outcome: r.Outcome})
	}
	return g.Seal()
}

var moveNames = func() []string {
	var out []string
	for m := mrp.Move(0); m < 32; m++ {
		out = append(out, m.String())
	}
	return out
}()

func inOptions(v workflow.View) bool { return v.MRPState == "OPTIONS" && len(v.Offers) == 1 }

// list reads a trace-backed list endpoint into dst.
func (f *fixture) list(path, member string, dst any) {
	f.t.Helper()
	a := f.get(path, tokVic)
	if a.status != 200 {
		f.t.Fatalf("GET %s: %d %s", path, a.status, a.body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &m); err != nil {
		f.t.Fatal(err)
	}
	raw, ok := m[member]
	if !ok || string(raw) == "null" {
		f.t.Fatalf("GET %s: no %s list: %s", path, member, a.body)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		f.t.Fatal(err)
	}
}

// A goodwill refund opens OPTIONS: the tickets show the exact preview and
// digests, the scorecard scores both options, people other than operators
// and approvers cannot choose, a bad choice is refused with nothing
// changed, and the operator's choice decides the proposal again and pays.
func TestChoiceInOptionsOverHTTP(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("support-agent", "gw-1", refundRequest("r-3001", 60, "carol", "goodwill"))
	v := f.waitView("gw-1", "OPTIONS", inOptions)
	off := v.Offers[0]
	if len(off.Options) != 2 || len(off.Ranking) != 2 || off.Scorecard == "" {
		t.Fatalf("offer %+v", off)
	}
	if strings.Join(v.Strip, ",") != "HOLD,OPTIONS" {
		t.Fatalf("strip %v", v.Strip)
	}

	var tickets []TicketRecord
	f.list("/v1/runs/gw-1/tickets", "tickets", &tickets)
	if len(tickets) != 1 {
		t.Fatalf("tickets %+v", tickets)
	}
	tk := tickets[0]
	if tk.ProposalID != off.ProposalID || tk.TicketID != off.TicketID || tk.Decision != "OPTIONS" || tk.MRPState != "OPTIONS" ||
		!strings.Contains(tk.Preview, `payee = "carol"`) || !strings.Contains(tk.Preview, tk.ActionDigest) ||
		!strings.HasPrefix(tk.TicketDigest, "sha256:") || tk.Ticket == nil || !tk.Ticket.Complete || tk.Ticket.TicketDigest != tk.TicketDigest ||
		tk.Resolution == nil || !tk.Resolution.Contestable || !slices.Equal(tk.Options, []string{"path:partial-refund", "path:store-credit"}) {
		t.Fatalf("ticket %+v", tk)
	}
	var gates []string
	for _, s := range tk.Signals {
		gates = append(gates, s.Source+"/"+s.Decision)
	}
	if !slices.Contains(gates, "G3/ASK_FIRST") || !slices.Contains(gates, "G4/ASK_FIRST") || !slices.Contains(gates, "G2/ALLOW") {
		t.Fatalf("signals %v", gates)
	}

	var cards []ScorecardRecord
	f.list("/v1/runs/gw-1/scorecard", "scorecards", &cards)
	if len(cards) != 1 || cards[0].Delegated || cards[0].Chooser != "person" || cards[0].Digest != off.Scorecard || cards[0].Turn != 1 {
		t.Fatalf("scorecards %+v", cards)
	}
	var card struct {
		Candidates []struct {
			ID            string          `json:"id"`
			Core          map[string]any  `json:"core"`
			Augmentations json.RawMessage `json:"augmentations"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(cards[0].Scorecard, &card); err != nil || len(card.Candidates) != 2 {
		t.Fatalf("scorecard %s: %v", cards[0].Scorecard, err)
	}
	for _, c := range card.Candidates {
		if c.Core["risk"] == nil || c.Core["ambiguity"] == nil || c.Core["efe"] == nil || len(c.Augmentations) == 0 {
			t.Fatalf("candidate %s: core %v, augmentations %s", c.ID, c.Core, c.Augmentations)
		}
	}

	choose := func(proposal, option string) string {
		return fmt.Sprintf(`{"proposal_id":%q,"option":%q}`, proposal, option)
	}
	good := choose(off.ProposalID, "path:store-credit")
	refused := []struct {
		name, token, body string
		status            int
		typ, field        string
	}{
		{"an agent", tokBot, good, 403, TypeForbidden, ""},
		{"a viewer", tokVic, good, 403, TypeForbidden, ""},
		{"a reconciler", tokRita, good, 403, TypeForbidden, ""},
		{"no token", "", good, 401, TypeUnauthenticated, ""},
		{"an unknown proposal", tokDana, choose("proposal:nope", "path:store-credit"), 404, TypeNotFound, "/proposal_id"},
		{"an option not offered", tokDana, choose(off.ProposalID, "path:cash"), 409, TypeConflict, "/option"},
		{"a missing option", tokDana, fmt.Sprintf(`{"proposal_id":%q}`, off.ProposalID), 422, TypeInvalid, "/"},
		{"an unknown member", tokDana, `{"proposal_id":"p","option":"o","actor":"someone-else"}`, 422, TypeInvalid, "/"},
		{"a bad id", tokDana, choose("no spaces allowed", "o"), 422, TypeInvalid, "/proposal_id"},
		{"not JSON", tokDana, `{"proposal_id":`, 400, TypeMalformed, ""},
	}
	for _, c := range refused {
		a := f.post("/v1/runs/gw-1/choose", c.token, c.body)
		typ, field := a.errorOf(t)
		if a.status != c.status || typ != c.typ || (c.field != "" && field != c.field) {
			t.Errorf("%s: %d %s %q: %s", c.name, a.status, typ, field, a.body)
		}
	}
	if a := f.post("/v1/runs/nobody/choose", tokDana, good); a.status != 404 {
		t.Errorf("unknown run: %d %s", a.status, a.body)
	}
	// Nothing was handed to the run: no choice in its inbox, still OPTIONS.
	inbox, _ := f.store.Inbox(context.Background(), "gw-1", true)
	if slices.ContainsFunc(inbox, func(in store.Inbound) bool { return in.Kind == runner.KindChoice }) {
		t.Fatal("a refused choice reached the run's inbox")
	}

	if a := f.post("/v1/runs/gw-1/choose", tokDana, good); a.status != 202 {
		t.Fatalf("choose: %d %s", a.status, a.body)
	}
	p := f.waitFor("gw-1", tokVic, "its end", ended)
	if p.Run.State != "SUCCEEDED" || len(f.sb.Mutations()) != 1 {
		t.Fatalf("after the choice: %s with %d payments", p.Run.State, len(f.sb.Mutations()))
	}
	v = viewOf(t, p)
	if strings.Join(v.Strip, ",") != "HOLD,OPTIONS,DECIDE" || len(v.Offers) != 0 {
		t.Fatalf("view after the choice: strip %v offers %v", v.Strip, v.Offers)
	}
	k := slices.IndexFunc(v.Journey, func(e mrp.Entry) bool { return e.Trigger == "CHOOSE_OPTION" })
	if k < 0 || v.Journey[k].ActorID != "dana" || v.Journey[k].Role != "operator" || v.Journey[k].Row != "H03" {
		t.Fatalf("journey %+v", v.Journey)
	}
	assertActor(t, f, "gw-1", runner.KindChoice, "dana", "operator", "mrp.choose_option")

	// One FHR per turn, each sealed and on the run's FHR hash chain; the
	// tickets list the proposal once per turn that decided it.
	var fhrs []FHRRecord
	f.list("/v1/runs/gw-1/fhr", "fhr", &fhrs)
	if int64(len(fhrs)) != v.Turns || v.Turns != 2 {
		t.Fatalf("%d FHRs for %d turns", len(fhrs), v.Turns)
	}
	chain := ""
	for i, r := range fhrs {
		var fhr mrpFHR
		if err := json.Unmarshal(r.FHR, &fhr); err != nil || fhr.Kind != "FHR" || fhr.Turn != int64(i+1) || r.Turn != fhr.Turn {
			t.Fatalf("FHR %d: %+v (%v)", i, fhr, err)
		}
		if sealed, err := fhr.Seal(); err != nil || sealed.Digest != fhr.Digest {
			t.Fatalf("FHR %d does not match its digest", i)
		}
		next, _ := cjson.DigestOf(map[string]any{"kind": "flrh.workflow.fhr-chain", "prev": chain, "fhr": fhr.Digest})
		if r.FHRChain != next {
			t.Fatalf("FHR %d: chain %s, want %s", i, r.FHRChain, next)
		}
		chain = next
	}
	f.list("/v1/runs/gw-1/tickets", "tickets", &tickets)
	if len(tickets) != 2 || tickets[1].ProposalID != off.ProposalID || tickets[1].Decision != "INTENT" || tickets[1].Turn != 2 || tickets[1].IntentID == "" {
		t.Fatalf("tickets after the choice %+v", tickets)
	}
	// The run has ended: a choice now is a conflict.
	if a := f.post("/v1/runs/gw-1/choose", tokDana, good); a.status != 409 {
		t.Fatalf("choice after the end: %d %s", a.status, a.body)
	}
	for _, path := range []string{"/v1/runs/gw-1/verify", "/v1/runs/gw-1/replay"} {
		if a := f.get(path, tokVic); a.status != 200 || a.json(t)["ok"] != true {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
	}
}

// lastEntry is the newest accepted line of the Journey Strip.
func lastEntry(v workflow.View) mrp.Entry {
	for i := len(v.Journey) - 1; i >= 0; i-- {
		if v.Journey[i].Rejected == "" {
			return v.Journey[i]
		}
	}
	return mrp.Entry{}
}

// A person pauses, escalates, resumes and ends a run's deliberation: each
// transition is checked by the MRP machine before the run is told (409 when
// the machine would refuse it), carried with the person's authenticated
// role and capability, and recorded in the Journey Strip under their name.
// Agents and viewers are refused; a paused run takes no choice.
func TestMRPTransitionsOverHTTP(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("support-agent", "steer-1", refundRequest("r-4001", 60, "carol", "goodwill"))
	v := f.waitView("steer-1", "OPTIONS", inOptions)
	off := v.Offers[0]
	mrpBody := func(trigger string) string {
		return fmt.Sprintf(`{"trigger":%q,"reason":"checking with the customer"}`, trigger)
	}

	refused := []struct {
		name, token, body string
		status            int
		typ, field        string
	}{
		{"an agent", tokBot, mrpBody("pause"), 403, TypeForbidden, ""},
		{"a viewer", tokVic, mrpBody("pause"), 403, TypeForbidden, ""},
		{"a reconciler", tokRita, mrpBody("pause"), 403, TypeForbidden, ""},
		{"resume from OPTIONS", tokDana, mrpBody("resume"), 409, TypeConflict, "/trigger"},
		{"leave safe mode when not in it", tokDana, mrpBody("leave_safe_mode"), 409, TypeConflict, "/trigger"},
		{"a runtime trigger", tokDana, `{"trigger":"tier1_allow"}`, 422, TypeInvalid, "/trigger"},
		{"choose_option through mrp", tokDana, `{"trigger":"choose_option"}`, 422, TypeInvalid, "/trigger"},
		{"an upper-case trigger", tokDana, `{"trigger":"PAUSE"}`, 422, TypeInvalid, "/trigger"},
		{"a proposal with pause", tokDana, fmt.Sprintf(`{"trigger":"pause","proposal_id":%q}`, off.ProposalID), 422, TypeInvalid, "/proposal_id"},
		{"reject_all of an unknown proposal", tokDana, `{"trigger":"reject_all","proposal_id":"proposal:nope"}`, 404, TypeNotFound, "/proposal_id"},
		{"an empty reason", tokDana, `{"trigger":"pause","reason":""}`, 422, TypeInvalid, "/reason"},
		{"an actor in the body", tokDana, `{"trigger":"pause","actor":"finance-lead"}`, 422, TypeInvalid, "/"},
		{"wrong content type", tokDana, "", 415, TypeUnsupportedMedia, ""},
	}
	for _, c := range refused {
		var a answer
		if c.typ == TypeUnsupportedMedia {
			a = f.do("POST", "/v1/runs/steer-1/mrp", c.token, "text/plain", []byte(mrpBody("pause")))
		} else {
			a = f.post("/v1/runs/steer-1/mrp", c.token, c.body)
		}
		typ, field := a.errorOf(t)
		if a.status != c.status || typ != c.typ || (c.field != "" && field != c.field) {
			t.Errorf("%s: %d %s %q: %s", c.name, a.status, typ, field, a.body)
		}
	}
	if inbox, _ := f.store.Inbox(context.Background(), "steer-1", true); slices.ContainsFunc(inbox, func(in store.Inbound) bool { return in.Kind == runner.KindControl }) {
		t.Fatal("a refused transition reached the run's inbox")
	}

	steps := []struct {
		token, trigger, actor, role, to, row string
	}{
		{tokDana, "pause", "dana", "operator", "HOLD", "H01"},
		{tokFinance, "escalate", "finance-lead", "human_approver", "ESCALATE", "H06"},
		{tokDana, "resume", "dana", "operator", "OPTIONS", "H11"}, // back to the options paused on
	}
	for i, s := range steps {
		if a := f.post("/v1/runs/steer-1/mrp", s.token, mrpBody(s.trigger)); a.status != 202 {
			t.Fatalf("%s: %d %s", s.trigger, a.status, a.body)
		}
		n := len(v.Journey)
		v = f.waitView("steer-1", s.to, func(v workflow.View) bool { return len(v.Journey) > n })
		e := lastEntry(v)
		if v.MRPState != s.to || e.Trigger != mrp.Trigger(strings.ToUpper(s.trigger)) || e.ActorID != s.actor || e.Role != s.role || e.Row != s.row ||
			!strings.Contains(e.Cause, "checking with the customer") {
			t.Fatalf("step %d (%s): state %s, entry %+v", i, s.trigger, v.MRPState, e)
		}
		if i == 0 {
			// Paused: the options are still on record, but no choice is taken.
			a := f.post("/v1/runs/steer-1/choose", tokDana, fmt.Sprintf(`{"proposal_id":%q,"option":"path:store-credit"}`, off.ProposalID))
			if a.status != 409 {
				t.Fatalf("a choice while paused: %d %s", a.status, a.body)
			}
		}
	}
	if strip := strings.Join(v.Strip, ","); strip != "HOLD,OPTIONS,HOLD,OPTIONS" {
		t.Fatalf("strip %s", strip) // ESCALATE shows as HOLD
	}
	if a := f.post("/v1/runs/steer-1/mrp", tokFinance, mrpBody("exit")); a.status != 202 {
		t.Fatalf("exit: %d %s", a.status, a.body)
	}
	v = f.waitView("steer-1", "EXIT", func(v workflow.View) bool { return v.MRPState == "EXIT" })
	if a := f.post("/v1/runs/steer-1/mrp", tokDana, mrpBody("pause")); a.status != 409 {
		t.Fatalf("pause after EXIT: %d %s", a.status, a.body)
	}
	if len(f.sb.Mutations()) != 0 {
		t.Fatal("steering the deliberation paid a refund")
	}
	controls := 0
	inbox, _ := f.store.Inbox(context.Background(), "steer-1", false)
	for _, in := range inbox {
		if in.Kind == runner.KindControl {
			controls++
			if in.Capability != "mrp."+strings.ToLower(controlTrigger(t, in.Body)) || (in.Actor != "dana" && in.Actor != "finance-lead") {
				t.Fatalf("control recorded as %s/%s/%s", in.Actor, in.ActorRole, in.Capability)
			}
		}
	}
	if controls != 4 {
		t.Fatalf("%d control inputs recorded, want 4", controls)
	}
	for _, path := range []string{"/v1/runs/steer-1/verify", "/v1/runs/steer-1/replay"} {
		if a := f.get(path, tokVic); a.status != 200 || a.json(t)["ok"] != true {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
	}
}

func controlTrigger(t *testing.T, body []byte) string {
	var c struct {
		Trigger string `json:"trigger"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	return c.Trigger
}

// Rejecting every option withdraws the offer: the machine goes back to
// HOLD and a later choice for the proposal is a conflict, not a 404.
func TestRejectAllWithdrawsTheOffer(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("support-agent", "reject-1", refundRequest("r-5001", 70, "erin", "goodwill"))
	off := f.waitView("reject-1", "OPTIONS", inOptions).Offers[0]
	body := fmt.Sprintf(`{"trigger":"reject_all","proposal_id":%q}`, off.ProposalID)
	if a := f.post("/v1/runs/reject-1/mrp", tokFinance, body); a.status != 202 {
		t.Fatalf("reject_all: %d %s", a.status, a.body)
	}
	v := f.waitView("reject-1", "HOLD", func(v workflow.View) bool { return v.MRPState == "HOLD" })
	if len(v.Offers) != 0 || lastEntry(v).Row != "H04" || lastEntry(v).Role != "human_approver" {
		t.Fatalf("after reject_all: offers %v, entry %+v", v.Offers, lastEntry(v))
	}
	a := f.post("/v1/runs/reject-1/choose", tokDana, fmt.Sprintf(`{"proposal_id":%q,"option":"path:store-credit"}`, off.ProposalID))
	if typ, field := a.errorOf(t); a.status != 409 || typ != TypeConflict || field != "/proposal_id" {
		t.Fatalf("a choice after reject_all: %d %s", a.status, a.body)
	}
	// A second reject_all of the same proposal: known, but nothing pending.
	if a := f.post("/v1/runs/reject-1/mrp", tokFinance, body); a.status != 409 {
		t.Fatalf("a second reject_all: %d %s", a.status, a.body)
	}
	if len(f.sb.Mutations()) != 0 {
		t.Fatal("rejected options paid a refund")
	}
}

// A workflow without a deliberation machine (the built-in refund
// workflow) has nothing to steer or choose: 409; its ticket, FHR and
// scorecard lists are empty, not missing.
func TestNoDeliberationToSteer(t *testing.T) {
	f := newFixture(t, tokenFileText)
	if a := f.post("/v1/runs", tokOperator, startBody("plain-1", largeRefund)); a.status != 201 {
		t.Fatalf("start: %d %s", a.status, a.body)
	}
	p := f.waitFor("plain-1", tokViewer, "an approval wait", waiting)
	if p.View != nil {
		t.Fatalf("view %v", p.View)
	}
	if a := f.post("/v1/runs/plain-1/choose", tokOperator, `{"proposal_id":"p-1","option":"o"}`); a.status != 409 {
		t.Fatalf("choose: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/runs/plain-1/mrp", tokApprover, `{"trigger":"pause"}`); a.status != 409 {
		t.Fatalf("mrp: %d %s", a.status, a.body)
	}
	if a := f.get("/v1/runs/plain-1/why?proposal=p-1", tokViewer); a.status != 404 {
		t.Fatalf("why: %d %s", a.status, a.body)
	}
	for path, member := range map[string]string{"tickets": "tickets", "fhr": "fhr", "scorecard": "scorecards"} {
		a := f.get("/v1/runs/plain-1/"+path, tokViewer)
		if a.status != 200 || strings.TrimSpace(string(a.body)) != `{"`+member+`":[]}` {
			t.Fatalf("%s: %d %s", path, a.status, a.body)
		}
		if a := f.get("/v1/runs/nobody/"+path, tokViewer); a.status != 404 {
			t.Fatalf("%s of an unknown run: %d", path, a.status)
		}
		if a := f.get("/v1/runs/plain-1/"+path+"?x=1", tokViewer); a.status != 400 {
			t.Fatalf("%s with an unknown parameter: %d", path, a.status)
		}
	}
}

// Why was a refund refused? The blocked payee's proposal is rejected as
// ineligible; the tickets name it and /why proves it from the rules: the
// eligibility literal -blocked("mallory") fails because blocked("mallory")
// holds by the rule over the block list. An allowed refund's explanation
// names the gate rule that allowed it.
func TestWhyOfARefusal(t *testing.T) {
	f := newBundleFixture(t)
	f.startBundleRun("refund-agent", "why-1", refundRequest("r-6001", 40, "mallory", "damaged"))
	var tickets []TicketRecord
	deadline := time.Now().Add(30 * time.Second)
	for len(tickets) == 0 && time.Now().Before(deadline) {
		f.list("/v1/runs/why-1/tickets", "tickets", &tickets)
		time.Sleep(20 * time.Millisecond)
	}
	if len(tickets) != 1 || tickets[0].Decision != "REJECTED" || tickets[0].Rejection == nil || tickets[0].Rejection.Code != "PROPOSAL_INELIGIBLE" {
		t.Fatalf("tickets %+v", tickets)
	}
	proposal := tickets[0].ProposalID
	a := f.get("/v1/runs/why-1/why?proposal="+proposal, tokVic)
	if a.status != 200 {
		t.Fatalf("why: %d %s", a.status, a.body)
	}
	var ans struct {
		ProposalID string         `json:"proposal_id"`
		Decisions  []workflow.Why `json:"decisions"`
	}
	if err := json.Unmarshal(a.body, &ans); err != nil || ans.ProposalID != proposal || len(ans.Decisions) != 1 {
		t.Fatalf("why answer %s (%v)", a.body, err)
	}
	y := ans.Decisions[0]
	if y.Outcome != "REJECTED" || y.Verdict != "ineligible" || y.Seq != 1 || y.Rejection == nil || y.Rejection.Code != "PROPOSAL_INELIGIBLE" {
		t.Fatalf("decision %+v", y)
	}
	k := slices.IndexFunc(y.Eligibility, func(e workflow.EligibilityWhy) bool { return e.Literal == `-blocked("mallory")` })
	if k < 0 || y.Eligibility[k].Explanation == nil || y.Eligibility[k].Explanation.State != "TRUE_ONLY" {
		t.Fatalf("eligibility %+v", y.Eligibility)
	}
	proof := y.Eligibility[k].Explanation.Positive
	if proof == nil || !strings.HasPrefix(proof.Rule, "blocked(p) :- blocked_payee(p)") || len(proof.Premises) != 1 || proof.Premises[0].Fact != `blocked_payee("mallory")` {
		t.Fatalf("proof %+v", proof)
	}

	// The same fact, asked directly, over the run's latest state.
	a = f.get(`/v1/runs/why-1/why?fact=`+urlQuery(`blocked("mallory")`), tokVic)
	var fa struct {
		Explanation workflow.Explanation `json:"explanation"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &fa) != nil || fa.Explanation.State != "TRUE_ONLY" || fa.Explanation.Positive == nil {
		t.Fatalf("why fact: %d %s", a.status, a.body)
	}

	// An allowed refund: the gate that allowed it, by rule and position.
	f.startBundleRun("refund-agent", "why-2", refundRequest("r-6002", 40, "alice", "damaged"))
	f.waitFor("why-2", tokVic, "its end", ended)
	f.list("/v1/runs/why-2/tickets", "tickets", &tickets)
	a = f.get("/v1/runs/why-2/why?proposal="+tickets[0].ProposalID, tokBot) // agents may read
	if err := json.Unmarshal(a.body, &ans); a.status != 200 || err != nil || len(ans.Decisions) != 1 || ans.Decisions[0].Outcome != "INTENT" {
		t.Fatalf("why allowed: %d %s", a.status, a.body)
	}
	g := slices.IndexFunc(ans.Decisions[0].Gates, func(g workflow.GateWhy) bool { return g.Gate == "G2" })
	if g < 0 || ans.Decisions[0].Gates[g].Decision != "ALLOW" || ans.Decisions[0].Gates[g].Reasons[0].Rule != "g2.refunds" {
		t.Fatalf("gates %+v", ans.Decisions[0].Gates)
	}

	bad := []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/runs/why-1/why", 400, "?proposal"},
		{"/v1/runs/why-1/why?proposal=p&fact=x", 400, "?proposal"},
		{"/v1/runs/why-1/why?proposal=" + urlQuery("a b"), 400, "?proposal"},
		{"/v1/runs/why-1/why?proposal=proposal:nope", 404, "?proposal"},
		{"/v1/runs/why-1/why?fact=" + urlQuery("blocked("), 400, "?fact"},
		{"/v1/runs/why-1/why?fact=" + urlQuery(`nosuch("x")`), 400, "?fact"},
		{"/v1/runs/why-1/why?fact=" + strings.Repeat("a", maxFactText+1), 400, "?fact"},
		{"/v1/runs/why-1/why?proposal=p&proposal=q", 400, "?proposal"},
		{"/v1/runs/why-1/why?who=x", 400, "?who"},
		{"/v1/runs/nobody/why?proposal=p", 404, ""},
	}
	for _, c := range bad {
		a := f.get(c.path, tokVic)
		_, field := a.errorOf(t)
		if a.status != c.status || field != c.field {
			t.Errorf("%s: %d %q %s", c.path, a.status, field, a.body)
		}
	}
}

func urlQuery(s string) string { return url.QueryEscape(s) }
