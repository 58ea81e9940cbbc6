package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/workflow"
)

// chooser is a person allowed to choose among options.
var chooser = runner.Actor{Name: "dana", Role: "operator", Capability: "mrp.choose_option"}

// choose hands the run a choice and runs it to idle.
func (h *harness) choose(runID, proposal, option string, by runner.Actor) {
	h.t.Helper()
	if err := h.r.Choose(h.ctx, runID, proposal, option, by); err != nil {
		h.t.Fatal(err)
	}
	h.idle()
}

// paid checks that the run succeeded with exactly one refund at the
// sandbox.
func (h *harness) paid(runID string) {
	h.t.Helper()
	if s := h.status(runID); s.State != "SUCCEEDED" {
		h.t.Fatalf("%s: state %s", runID, s.State)
	}
	ins := h.intents(runID)
	if len(ins) != 1 || h.mutationsFor(ins[0].IdempotencyKey) != 1 {
		h.t.Fatalf("%s: intents %+v", runID, ins)
	}
}

func TestSupportAgentChoices(t *testing.T) {
	h := newHarness(t, "support-agent")

	t.Run("a large goodwill case goes to a person with ranked options", func(t *testing.T) {
		h.start("goodwill-large", refund("r-2001", 60, "carol", "goodwill"))
		if s := h.status("goodwill-large"); s.State != "INGEST" || len(h.intents("goodwill-large")) != 0 {
			t.Fatalf("state %s before a choice", s.State)
		}
		cards := h.trace("goodwill-large", "aif.scorecard")
		if len(cards) != 1 || cards[0]["delegated"] != false || cards[0]["chooser"] != "person" {
			t.Fatalf("scorecards %v", cards)
		}
		card := cards[0]["scorecard"].(map[string]any)
		if cs := card["candidates"].([]any); len(cs) != 2 {
			t.Fatalf("candidates %v", cs)
		}
		for _, c := range card["candidates"].([]any) {
			core := c.(map[string]any)["core"].(map[string]any)
			if core["risk"] == nil || core["ambiguity"] == nil || core["efe"] == nil {
				t.Fatalf("a candidate without its core: %v", c)
			}
		}
		steps := h.trace("goodwill-large", "aif.step")
		if len(steps) != 1 || steps[0]["record"].(map[string]any)["free_energy"] == nil {
			t.Fatalf("aif steps %v", steps)
		}
		proposal := cards[0]["proposal_id"].(string)

		// An agent cannot choose: the workflow refuses the choice before it
		// is handed on, and nothing changes.
		agent := runner.Actor{Name: "refund-bot", Role: "agent", Capability: "mrp.choose_option"}
		var nw *runner.NotWaitingError
		if err := h.r.Choose(h.ctx, "goodwill-large", proposal, "path:store-credit", agent); !errors.As(err, &nw) ||
			!strings.Contains(nw.What, workflow.ChoiceNotAPerson) {
			t.Fatalf("an agent's choice: err = %v", err)
		}
		// Nor can a person choose an option not offered, or for a proposal
		// with none pending.
		if err := h.r.Choose(h.ctx, "goodwill-large", proposal, "path:cash", chooser); !errors.As(err, &nw) ||
			!strings.Contains(nw.What, workflow.ChoiceNotOffered) {
			t.Fatalf("an option not offered: err = %v", err)
		}
		if err := h.r.Choose(h.ctx, "goodwill-large", "proposal:none", "path:store-credit", chooser); !errors.As(err, &nw) ||
			!strings.Contains(nw.What, workflow.ChoiceNotPending) {
			t.Fatalf("a proposal with no options pending: err = %v", err)
		}
		h.idle()
		if refusals := h.trace("goodwill-large", "refusal"); len(refusals) != 0 || len(h.intents("goodwill-large")) != 0 {
			t.Fatalf("refused choices reached the run: refusals %v", refusals)
		}

		// People choosing at the same instant: one choice is taken, the
		// others are told it has yet to be taken, before anything is
		// stored; so is a second choice while the first waits.
		people := []string{"dana", "erin", "frank", "gina"}
		errs := make([]error, len(people))
		var wg sync.WaitGroup
		for i, p := range people {
			wg.Go(func() {
				errs[i] = h.r.Choose(h.ctx, "goodwill-large", proposal, "path:store-credit", runner.Actor{Name: p, Role: chooser.Role, Capability: chooser.Capability})
			})
		}
		wg.Wait()
		var took []string
		for i, err := range errs {
			switch {
			case err == nil:
				took = append(took, people[i])
			case !errors.As(err, &nw) || !strings.Contains(nw.What, "has yet to be taken"):
				t.Fatalf("%s choosing at the same instant: %v", people[i], err)
			}
		}
		if len(took) != 1 {
			t.Fatalf("choices taken at the same instant: %v", took)
		}
		if err := h.r.Choose(h.ctx, "goodwill-large", proposal, "path:store-credit", chooser); !errors.As(err, &nw) ||
			nw.What != "a choice of "+proposal+" ("+took[0]+"'s choice of path:store-credit has yet to be taken)" {
			t.Fatalf("a second choice while the first waits: %v", err)
		}
		h.idle()
		h.paid("goodwill-large")
		choices := h.trace("goodwill-large", "choice")
		if len(choices) != 1 || choices[0]["chooser"] != took[0] || choices[0]["trigger"] != "CHOOSE_OPTION" {
			t.Fatalf("choices %v", choices)
		}
		journeys := h.trace("goodwill-large", "mrp.journey")
		var strip []string
		for _, s := range journeys[len(journeys)-1]["strip"].([]any) {
			strip = append(strip, s.(string))
		}
		if got := strings.Join(strip, ","); got != "HOLD,OPTIONS,DECIDE" {
			t.Fatalf("journey strip %s", got)
		}
		h.checkRecord("goodwill-large")
	})

	t.Run("a small goodwill case is the controller's to choose", func(t *testing.T) {
		h.start("goodwill-small", refund("r-2002", 20, "dave", "goodwill"))
		cards := h.trace("goodwill-small", "aif.scorecard")
		if len(cards) == 0 || cards[0]["delegated"] != true || cards[0]["chooser"] != workflow.ControllerActorID {
			t.Fatalf("scorecards %v", cards)
		}
		pick := cards[0]["scorecard"].(map[string]any)["pick"].(string)
		choices := h.trace("goodwill-small", "choice")
		if len(choices) != 1 || choices[0]["chooser"] != workflow.ControllerActorID || choices[0]["role"] != workflow.ControllerRole ||
			choices[0]["option"] != pick || choices[0]["trigger"] != "OPTION_SELECTED" {
			t.Fatalf("the controller's choice is not recorded as its own: %v", choices)
		}
		fhrs := h.trace("goodwill-small", "h.fhr")
		if len(fhrs) != 2 || fhrs[1]["fhr"].(map[string]any)["scorecard_digest"] != cards[0]["scorecard_digest"] {
			t.Fatalf("the FHR of the controller's decision does not name its scorecard")
		}
		outs := h.trace("goodwill-small", "h.outcome")
		// The policy delegates this ticket, so H takes the controller's
		// pick: no person is asked.
		if last := outs[len(outs)-1]["outcome"]; last == "OPTIONS" {
			t.Fatalf("H did not take the delegated choice: last outcome %v, outcomes %v", last, outs)
		}
		h.paid("goodwill-small")
		h.checkRecord("goodwill-small")
	})

	t.Run("Decide with the controller is deterministic", func(t *testing.T) {
		st, err := h.wf.Init("det")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := cjson.Canonicalize([]byte(refund("r-2003", 20, "erin", "goodwill")))
		in := runner.Accepted{Seq: 1, Kind: "input", Body: body, Digest: cjson.Digest(body), Actor: "agent"}
		d, err := h.wf.Decide(st, in)
		if err != nil || d.Refusal != "" {
			t.Fatalf("%v %q", err, d.Refusal)
		}
		type c struct {
			State []byte
			In    runner.Accepted
		}
		cases := []c{{st, in}}
		st60, err := h.wf.Decide(st, runner.Accepted{Seq: 1, Kind: "input", Body: mustCanon(t, refund("r-2004", 60, "erin", "goodwill")), Actor: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := h.wf.Inspect(st60.State)
		if err != nil || len(v.Offers) != 1 {
			t.Fatalf("offers %v %+v", err, v.Offers)
		}
		choice, _ := cjson.Marshal(map[string]any{"proposal_id": v.Offers[0].ProposalID, "option": "path:store-credit"})
		cases = append(cases, c{st60.State, runner.Accepted{Seq: 2, Kind: "choice", Body: choice, Digest: cjson.Digest(choice), Actor: "dana", ActorRole: "operator", Capability: "mrp.choose_option"}})
		for _, k := range cases {
			determinism.Check(t, k, func(k c) string {
				d, err := h.wf.Decide(k.State, k.In)
				if err != nil {
					return err.Error()
				}
				b, _ := cjson.Marshal(map[string]any{"state": string(d.State), "refusal": d.Refusal, "effects": int64(len(d.Effects)), "trace": int64(len(d.Trace))})
				return string(b)
			})
		}
		// The person's choice decides the offer: one intent, no refusal.
		got, err := h.wf.Decide(cases[1].State, cases[1].In)
		if err != nil || got.Refusal != "" || len(got.Effects) != 1 {
			t.Fatalf("choice: %v %q %d", err, got.Refusal, len(got.Effects))
		}
	})
}

func mustCanon(t *testing.T, s string) []byte {
	t.Helper()
	b, err := cjson.Canonicalize([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The support agent with a channel model as its controller (the model the
// workflow package's tests use): a person's choice completes a run, the
// receipt is observed, and the record verifies and replays.
func TestSupportAgentChannelController(t *testing.T) {
	dir := filepath.Join("..", "examples", "support-agent")
	fsys := fstest.MapFS{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fsys[e.Name()] = &fstest.MapFile{Data: b}
	}
	model, err := os.ReadFile(filepath.Join("..", "workflow", "testdata", "support-channels.json"))
	if err != nil {
		t.Fatal(err)
	}
	fsys["controller.json"] = &fstest.MapFile{Data: model}
	m := string(fsys[workflow.ManifestFile].Data)
	i, j := strings.Index(m, `"observe": {`), strings.Index(m, `"options": {`)
	fsys[workflow.ManifestFile] = &fstest.MapFile{Data: []byte(m[:i] + `"observe": {
      "events": {"refund.requested/1": {"satisfaction": 3, "amount": "$payload.amount"}},
      "receipts": {"confirmed_success": {"satisfaction": 9, "amount": 0}}
    },
    ` + m[j:])}
	wf, ads, err := LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, wf, ads)
	h.start("channels", refund("r-3001", 60, "frank", "goodwill"))
	cards := h.trace("channels", "aif.scorecard")
	if len(cards) != 1 || cards[0]["chooser"] != "person" {
		t.Fatalf("scorecards %v", cards)
	}
	h.choose("channels", cards[0]["proposal_id"].(string), "path:partial-refund", chooser)
	h.paid("channels")
	steps := h.trace("channels", "aif.step")
	if len(steps) != 2 || steps[1]["record"].(map[string]any)["kind"] != "flrh.aif.channel-tick" {
		t.Fatalf("aif steps %v", steps)
	}
	h.checkRecord("channels")
}

// The runner's status carries the workflow's own view: a person sees the
// ranked options and the Journey Strip without reading the trace.
func TestStatusShowsTheWorkflowView(t *testing.T) {
	h := newHarness(t, "support-agent")
	h.start("view", refund("r-9001", 400, "erin", "goodwill"))
	st := h.status("view")
	v, ok := st.View.(workflow.View)
	if !ok {
		t.Fatalf("status view %T", st.View)
	}
	if v.MRPState != "OPTIONS" || len(v.Offers) != 1 || len(v.Offers[0].Ranking) == 0 || len(v.Strip) == 0 {
		t.Fatalf("view %+v", v)
	}
}

// The refund agent's goodwill contest: G3 and G4 offer different safe
// paths and the run waits in OPTIONS; a person's choice settles it, the
// refund is decided again under G2 alone and paid once. Before the gates
// stood down on chosen(t, path), the choice led straight back to OPTIONS.
func TestRefundAgentChoiceSettles(t *testing.T) {
	h := newHarness(t, "refund-agent")
	h.start("goodwill", refund("r-3001", 60, "carol", "goodwill"))
	v, ok := h.status("goodwill").View.(workflow.View)
	if !ok || v.MRPState != "OPTIONS" || len(v.Offers) != 1 {
		t.Fatalf("want one offer in OPTIONS, got %+v", h.status("goodwill").View)
	}
	off := v.Offers[0]
	if strings.Join(off.Options, ",") != "path:partial-refund,path:store-credit" {
		t.Fatalf("options %v", off.Options)
	}
	if len(h.intents("goodwill")) != 0 {
		t.Fatal("an intent before anyone chose")
	}
	h.choose("goodwill", off.ProposalID, "path:store-credit", chooser)
	h.paid("goodwill")
	v = h.status("goodwill").View.(workflow.View)
	if len(v.Offers) != 0 || strings.Join(v.Strip, ",") != "HOLD,OPTIONS,DECIDE" {
		t.Fatalf("after the choice: offers %+v, strip %v", v.Offers, v.Strip)
	}
	h.checkRecord("goodwill")
}
