package workflow

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
	"flrh.dev/flrh/mrp"
)

func choiceInput(seq int64, proposal, option, actor, role, capability string) Input {
	b, _ := cjson.Marshal(map[string]any{"proposal_id": proposal, "option": option})
	return Input{Seq: seq, Kind: KindChoice, Body: b, Digest: cjson.Digest(b), Actor: actor, ActorRole: role, Capability: capability}
}

func notes(r Result, kind string) []map[string]any {
	var out []map[string]any
	for _, n := range r.Trace {
		if n.Kind == kind {
			var m map[string]any
			if err := json.Unmarshal(n.Body, &m); err != nil {
				panic(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// goodwill starts a support-agent run with a goodwill refund of amount
// and returns the state after it and the proposal waiting in OPTIONS.
func goodwill(t *testing.T, w *Workflow, amount int64) ([]byte, Result) {
	t.Helper()
	st, err := w.Init("run-choice")
	if err != nil {
		t.Fatal(err)
	}
	in := refundInput("r-7", amount, "carol", "goodwill")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: in, Digest: cjson.Digest(in), Actor: "agent"})
	if err != nil || r.Refusal != "" {
		t.Fatalf("goodwill input: %v %q", err, r.Refusal)
	}
	return r.State, r
}

func TestPersonChoosesAnOption(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, r := goodwill(t, w, 60) // above the delegation limit: a person chooses
	if len(r.Effects) != 0 {
		t.Fatalf("OPTIONS sent %d effects", len(r.Effects))
	}
	v, err := w.Inspect(st)
	if err != nil {
		t.Fatal(err)
	}
	if v.MRPState != "OPTIONS" || len(v.Offers) != 1 || len(v.Offers[0].Options) != 2 {
		t.Fatalf("view: state %s offers %+v", v.MRPState, v.Offers)
	}
	off := v.Offers[0]
	if len(off.Ranking) != 2 || off.Ranking[0].Total > off.Ranking[1].Total || off.Scorecard == "" {
		t.Fatalf("the ranking is not best first with a scorecard: %+v", off)
	}
	sc := notes(r, "aif.scorecard")
	if len(sc) != 1 || sc[0]["delegated"] != false || sc[0]["chooser"] != "person" {
		t.Fatalf("scorecard note: %v", sc)
	}

	refusals := []struct {
		name string
		in   Input
		code string
	}{
		{"agent role", choiceInput(2, off.ProposalID, off.Options[0], "bot", "agent", "mrp.choose_option"), ChoiceNotAPerson},
		{"no capability", choiceInput(2, off.ProposalID, off.Options[0], "dana", "operator", "refund.request"), ChoiceCapability},
		{"not offered", choiceInput(2, off.ProposalID, "path:cash", "dana", "operator", "mrp.choose_option"), ChoiceNotOffered},
		{"unknown proposal", choiceInput(2, "proposal:nope", off.Options[0], "dana", "operator", "mrp.choose_option"), ChoiceNotPending},
		{"malformed", Input{Seq: 2, Kind: KindChoice, Body: []byte(`{"option":"x"}`), ActorRole: "operator", Capability: "mrp.choose_option"}, ChoiceMalformed},
	}
	for _, c := range refusals {
		got, err := w.Decide(st, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.HasPrefix(got.Refusal, c.code+":") || string(got.State) != string(st) || len(got.Effects) != 0 {
			t.Errorf("%s: refusal %q, state changed %v, effects %d", c.name, got.Refusal, string(got.State) != string(st), len(got.Effects))
		}
	}

	in := choiceInput(2, off.ProposalID, "path:store-credit", "dana", "operator", "mrp.choose_option")
	got, err := w.Decide(st, in)
	if err != nil || got.Refusal != "" {
		t.Fatalf("choice: %v %q", err, got.Refusal)
	}
	if len(got.Effects) != 1 || got.Effects[0].Approval != nil {
		t.Fatalf("a chosen reversible refund should be one outright intent, got %+v", got.Effects)
	}
	o := outcomes(got)
	if len(o) != 1 || o[0]["outcome"] != "INTENT" {
		t.Fatalf("outcome after the choice: %v", o)
	}
	ch := notes(got, "choice")
	if len(ch) != 1 || ch[0]["chooser"] != "dana" || ch[0]["trigger"] != "CHOOSE_OPTION" {
		t.Fatalf("choice note: %v", ch)
	}
	v, _ = w.Inspect(got.State)
	if len(v.Offers) != 0 || v.MRPState != "DECIDE" {
		t.Fatalf("after the choice: %+v", v)
	}
	if strip := strings.Join(v.Strip, ","); strip != "HOLD,OPTIONS,DECIDE" {
		t.Fatalf("journey strip %s", strip)
	}
	// The same choice again answers nothing pending.
	again, _ := w.Decide(got.State, choiceInput(3, off.ProposalID, "path:store-credit", "dana", "operator", "mrp.choose_option"))
	if !strings.HasPrefix(again.Refusal, ChoiceNotPending) {
		t.Fatalf("a second choice: %q", again.Refusal)
	}
	determinism.Check(t, decideCase{st, in}, func(c decideCase) string {
		r, err := w.Decide(c.State, c.In)
		if err != nil {
			return err.Error()
		}
		b, _ := json.Marshal(r)
		return string(b)
	})
}

// For a small goodwill amount the policy delegates the choice: the
// controller picks from its scorecard and the pick goes to H as a choice
// by the controller. H accepts choices from people only, so the proposal
// is offered again and waits for a person, with every step traced.
func TestControllerChoosesWhenDelegated(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, r := goodwill(t, w, 20)
	steps := notes(r, "aif.step")
	if len(steps) != 1 {
		t.Fatalf("aif.step notes: %d", len(steps))
	}
	rec := steps[0]["record"].(map[string]any)
	if rec["observation"].([]any)[0] != "asked" || rec["free_energy"] == nil {
		t.Fatalf("step record: %v", rec)
	}
	sc := notes(r, "aif.scorecard")
	if len(sc) < 1 || sc[0]["delegated"] != true || sc[0]["chooser"] != ControllerActorID {
		t.Fatalf("scorecard: %v", sc)
	}
	card := sc[0]["scorecard"].(map[string]any)
	pick := card["pick"].(string)
	if pick == "" || pick != card["argmin_core"] {
		t.Fatalf("the controller picked %q, its core favours %v", pick, card["argmin_core"])
	}
	ch := notes(r, "choice")
	if len(ch) != 1 || ch[0]["chooser"] != ControllerActorID || ch[0]["role"] != ControllerRole || ch[0]["trigger"] != "OPTION_SELECTED" || ch[0]["option"] != pick {
		t.Fatalf("choice note: %v", ch)
	}
	fhrs := notes(r, "h.fhr")
	if len(fhrs) != 2 || fhrs[1]["fhr"].(map[string]any)["scorecard_digest"] != sc[0]["scorecard_digest"] {
		t.Fatalf("the FHR of the controller's decision does not name its scorecard: %v", fhrs)
	}
	o := outcomes(r)
	if len(o) != 2 {
		t.Fatalf("outcomes: %v", o)
	}
	v, _ := w.Inspect(st)
	if o[1]["outcome"] == "INTENT" {
		if len(r.Effects) != 1 || len(v.Offers) != 0 {
			t.Fatalf("an accepted autonomous choice: effects %d offers %d", len(r.Effects), len(v.Offers))
		}
		return
	}
	// H does not take the controller's choice: it is audited, and the
	// ranked options wait for a person.
	audit, _ := o[1]["audit"].([]any)
	if o[1]["outcome"] != "OPTIONS" || len(audit) == 0 || !strings.Contains(audit[0].(string), ControllerActorID) {
		t.Fatalf("second outcome: %v", o[1])
	}
	if len(r.Effects) != 0 || len(v.Offers) != 1 || v.MRPState != "OPTIONS" {
		t.Fatalf("after a declined autonomous choice: effects %d, %+v", len(r.Effects), v)
	}
	if len(sc) != 2 || sc[1]["chooser"] != "person" {
		t.Fatalf("the re-offer is not scored for a person: %v", sc)
	}
	got, err := w.Decide(st, choiceInput(2, v.Offers[0].ProposalID, pick, "dana", "reviewer", "mrp.choose_option"))
	if err != nil || got.Refusal != "" || len(got.Effects) != 1 {
		t.Fatalf("the person's choice after the controller: %v %q %d", err, got.Refusal, len(got.Effects))
	}
}

func TestControllerBeliefFollowsObservations(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	got, _ := w.Decide(st, choiceInput(2, mustOffer(t, w, st), "path:partial-refund", "dana", "operator", "mrp.choose_option"))
	if len(notes(got, "aif.step")) != 0 {
		t.Fatal("a choice is not an observation")
	}
	rc := receiptFor(got.Effects[0], "confirmed_success")
	done, err := w.Decide(got.State, Input{Seq: 3, Kind: KindReceipt, Body: rc, Digest: cjson.Digest(rc)})
	if err != nil || done.Refusal != "" || done.Completion != Complete {
		t.Fatalf("receipt: %v %q %s", err, done.Refusal, done.Completion)
	}
	steps := notes(done, "aif.step")
	if len(steps) != 1 {
		t.Fatalf("aif.step notes: %d", len(steps))
	}
	rec := steps[0]["record"].(map[string]any)
	belief := rec["belief"].([]any)[0].([]any)
	content, _ := belief[0].(float64)
	if rec["observation"].([]any)[0] != "settled" || rec["tick"] != float64(2) || content < 0.5e9 {
		t.Fatalf("after a settled receipt the belief should favour a content customer: %v", rec)
	}
}

func mustOffer(t *testing.T, w *Workflow, st []byte) string {
	t.Helper()
	v, err := w.Inspect(st)
	if err != nil || len(v.Offers) != 1 {
		t.Fatalf("offers: %v %+v", err, v.Offers)
	}
	return v.Offers[0].ProposalID
}

func TestControllerManifestErrors(t *testing.T) {
	base := readBundle(t, "../examples/support-agent")
	cases := []struct {
		name, find, replace, code, ptr string
	}{
		{"unknown event", `"refund.requested/1": ["asked"]`, `"refund.asked/1": ["asked"]`, CodeMalformed, "/controller/observe/events/refund.asked~11"},
		{"unknown outcome", `"confirmed_success": ["settled"]`, `"confirmed_success": ["happy"]`, CodeMalformed, "/controller/observe/receipts/confirmed_success/0"},
		{"unknown action", `"path:store-credit": ["store-credit"]`, `"path:store-credit": ["cash"]`, CodeMalformed, "/controller/options/path:store-credit"},
		{"negative temperature", `"temperature": 0`, `"temperature": -1`, CodeMalformed, "/controller/temperature"},
		{"missing model", `"model": "controller.json"`, `"model": "nope.json"`, CodeMissingFile, ""},
		{"unknown member", `"margin": 0`, `"margin": 0, "greed": 1`, CodeMalformed, "/controller/greed"},
	}
	for _, c := range cases {
		files := map[string][]byte{}
		for k, v := range base {
			files[k] = v
		}
		m := string(files[ManifestFile])
		if !strings.Contains(m, c.find) {
			t.Fatalf("%s: the manifest has no %s", c.name, c.find)
		}
		files[ManifestFile] = []byte(strings.Replace(m, c.find, c.replace, 1))
		_, err := Compile(files)
		e, ok := err.(*Error)
		if !ok || e.Code != c.code || (c.ptr != "" && e.Pointer != c.ptr) {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	files := map[string][]byte{}
	for k, v := range base {
		files[k] = v
	}
	files["controller.json"] = []byte(strings.Replace(string(base["controller.json"]), `[0.1, 0.7, 0.5]`, `[0.2, 0.7, 0.5]`, 1))
	if _, err := Compile(files); err == nil || err.(*Error).Code != CodeBadController {
		t.Errorf("a model whose A columns do not sum to 1: %v", err)
	}
}

// FuzzDecideChoice feeds arbitrary choice bodies, roles and capabilities to
// a run waiting in OPTIONS: Decide refuses or decides, never panics; a
// refusal keeps the state, and only a person's choice of an offered option
// for the pending proposal is accepted.
func FuzzDecideChoice(f *testing.F) {
	w := compileExample(f, "support-agent")
	st, _ := w.Init("run-fuzz")
	in := refundInput("r-1", 60, "carol", "goodwill")
	r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: in, Digest: cjson.Digest(in)})
	if err != nil {
		f.Fatal(err)
	}
	v, _ := w.Inspect(r.State)
	ok, _ := cjson.Marshal(map[string]any{"proposal_id": v.Offers[0].ProposalID, "option": "path:store-credit"})
	f.Add(ok, "operator", "mrp.choose_option")
	f.Add(ok, "agent", "mrp.choose_option")
	f.Add([]byte(`{"proposal_id":"p","option":"o","x":1}`), "reviewer", "mrp.choose_option")
	f.Add([]byte(`[]`), "", "")
	f.Fuzz(func(t *testing.T, body []byte, role, capability string) {
		got, err := w.Decide(r.State, Input{Seq: 2, Kind: KindChoice, Body: body, Digest: cjson.Digest(body), Actor: "x", ActorRole: role, Capability: capability})
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if got.Refusal != "" {
			if !bytes.Equal(got.State, r.State) || len(got.Effects) > 0 {
				t.Fatal("a refused choice changed the state or planned effects")
			}
			return
		}
		c, perr := ParseChoice(body)
		if perr != nil || c.ProposalID != v.Offers[0].ProposalID || !slices.Contains(v.Offers[0].Options, c.Option) ||
			!slices.Contains(mrp.HumanRoles, role) || capability != "mrp.choose_option" {
			t.Fatalf("accepted a choice that should be refused: %s by %q/%q", body, role, capability)
		}
	})
}

// Any role outside the human roles, any capability but CHOOSE_OPTION's,
// any option H did not offer: refused with its code, and nothing changes.
func TestChoiceRefusalsProperty(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 60)
	prop := mustOffer(t, w, st)
	rapid.Check(t, func(rt *rapid.T) {
		role := rapid.SampledFrom([]string{"operator", "reviewer", "human_approver", "agent", "model", "aif_controller", ""}).Draw(rt, "role")
		capability := rapid.SampledFrom([]string{"mrp.choose_option", "mrp.pause", "approval.grant_exact_hash", ""}).Draw(rt, "capability")
		option := rapid.SampledFrom([]string{"path:store-credit", "path:partial-refund", "path:cash", "path:x"}).Draw(rt, "option")
		got, err := w.Decide(st, choiceInput(2, prop, option, "someone", role, capability))
		if err != nil {
			rt.Fatal(err)
		}
		var want string
		switch {
		case !slices.Contains(mrp.HumanRoles, role):
			want = ChoiceNotAPerson
		case capability != "mrp.choose_option":
			want = ChoiceCapability
		case option != "path:store-credit" && option != "path:partial-refund":
			want = ChoiceNotOffered
		}
		if want == "" {
			if got.Refusal != "" || len(got.Effects) != 1 {
				rt.Fatalf("a valid choice: refusal %q, %d effects", got.Refusal, len(got.Effects))
			}
			return
		}
		if !strings.HasPrefix(got.Refusal, want+":") || !bytes.Equal(got.State, st) || len(got.Effects) != 0 {
			rt.Fatalf("want %s, got %q", want, got.Refusal)
		}
	})
}

// FuzzCompileController mutates the support agent's manifest and model:
// Compile returns a workflow or a typed *Error, never panics.
func FuzzCompileController(f *testing.F) {
	files := readBundle(f, "../examples/support-agent")
	f.Add(files[ManifestFile], files["controller.json"])
	f.Add([]byte(strings.Replace(string(files[ManifestFile]), `"nothing": ["wait"]`, `"nothing": []`, 1)), files["controller.json"])
	f.Fuzz(func(t *testing.T, manifest, model []byte) {
		fs := map[string][]byte{}
		for k, v := range files {
			fs[k] = v
		}
		fs[ManifestFile], fs["controller.json"] = manifest, model
		w, err := Compile(fs)
		if (w == nil) == (err == nil) {
			t.Fatalf("workflow %v with error %v", w, err)
		}
		if _, ok := err.(*Error); err != nil && !ok {
			t.Fatalf("untyped error %T: %v", err, err)
		}
	})
}

// A chosen path whose refund is large still needs the named approver: the
// choice yields an approval request, and the grant's re-decision presents
// the choice again, so the approved intent is exactly the planned one and
// the receipt closes the run.
func TestChoiceThenApproval(t *testing.T) {
	w := compileExample(t, "support-agent")
	st, _ := goodwill(t, w, 700)
	r, err := w.Decide(st, choiceInput(2, mustOffer(t, w, st), "path:partial-refund", "dana", "reviewer", "mrp.choose_option"))
	if err != nil || r.Refusal != "" || len(r.Effects) != 1 || r.Effects[0].Approval == nil {
		t.Fatalf("%v %q %v", err, r.Refusal, outcomes(r))
	}
	planned := r.Effects[0]
	e, err := w.AuthorizeApproved(r.State, *planned.Approval, grantFor(*planned.Approval, "finance-lead", "human_approver"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cjson.Marshal(e.Intent)
	b, _ := cjson.Marshal(planned.Intent)
	if string(a) != string(b) {
		t.Fatalf("approved intent differs from the planned one\n%s\n%s", a, b)
	}
	done, err := w.Decide(r.State, Input{Seq: 3, Kind: KindReceipt, Body: receiptFor(planned, "confirmed_success")})
	if err != nil || done.Completion != Complete {
		t.Fatalf("%v %s", err, done.Completion)
	}
	v, _ := w.Inspect(done.State)
	if v.MRPState != "DECIDE" || len(v.Pending) != 0 {
		t.Fatalf("after the receipt: %+v", v)
	}
}

// The scorecard's cores are the model's own policy scores: each option's
// risk and ambiguity equal (to the fixed-point grid) those the tick's
// aif.step record gives the policy the bundle maps it to, and the
// do-nothing baseline is the "wait" policy.
func TestScorecardCoresAreThePolicyScores(t *testing.T) {
	w := compileExample(t, "support-agent")
	_, r := goodwill(t, w, 60)
	rec := notes(r, "aif.step")[0]["record"].(map[string]any)
	byAction := map[string]map[string]any{}
	for _, p := range rec["policies"].([]any) {
		pm := p.(map[string]any)
		byAction[pm["actions"].([]any)[0].([]any)[0].(string)] = pm
	}
	card := notes(r, "aif.scorecard")[0]["scorecard"].(map[string]any)
	near := func(a, b any) bool {
		d := a.(float64) - b.(float64)
		return d < 4 && d > -4 // a few units of 10^-9: the belief is persisted on the grid
	}
	check := func(id string, core map[string]any, action string) {
		p := byAction[action]
		if !near(core["risk"], p["risk"]) || !near(core["ambiguity"], p["ambiguity"]) {
			t.Errorf("%s: core %v, policy %s scores %v", id, core, action, p)
		}
	}
	want := map[string]string{"path:store-credit": "store-credit", "path:partial-refund": "partial-refund"}
	cs := card["candidates"].([]any)
	if len(cs) != 2 {
		t.Fatalf("candidates %v", cs)
	}
	for _, c := range cs {
		cm := c.(map[string]any)
		check(cm["id"].(string), cm["core"].(map[string]any), want[cm["id"].(string)])
	}
	check("nothing", card["do_nothing"].(map[string]any)["core"].(map[string]any), "wait")
}

// channelBundle is the support agent with a channel model as its
// controller: satisfaction and the refund amount as channels.
func channelBundle(t testing.TB) map[string][]byte {
	t.Helper()
	files := readBundle(t, "../examples/support-agent")
	model, err := os.ReadFile("testdata/support-channels.json")
	if err != nil {
		t.Fatal(err)
	}
	files["controller.json"] = model
	m := string(files[ManifestFile])
	i, j := strings.Index(m, `"controller": {`), strings.Index(m, `"adapters": {`)
	files[ManifestFile] = []byte(m[:i] + `"controller": {
    "model": "controller.json",
    "observe": {
      "events": {"refund.requested/1": {"satisfaction": 3, "amount": "$payload.amount"}},
      "receipts": {"confirmed_success": {"satisfaction": 9, "amount": 0}}
    },
    "options": {"path:store-credit": ["store-credit"], "path:partial-refund": ["partial-refund"]},
    "nothing": ["wait"],
    "temperature": 0,
    "margin": 0
  },
  ` + m[j:])
	return files
}

func TestChannelController(t *testing.T) {
	w, err := Compile(channelBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	st, r := goodwill(t, w, 20)
	steps := notes(r, "aif.step")
	if len(steps) != 1 || steps[0]["record"].(map[string]any)["kind"] != "flrh.aif.channel-tick" {
		t.Fatalf("aif.step %v", steps)
	}
	mu := steps[0]["record"].(map[string]any)["mu"].([]any)
	if mu[0].(float64) >= 0.5e9 || mu[1].(float64) <= 0 {
		t.Fatalf("a request observed at satisfaction 3/10 and amount 20 should lower satisfaction and raise amount: mu %v", mu)
	}
	cards := notes(r, "aif.scorecard")
	if len(cards) == 0 || cards[0]["delegated"] != true {
		t.Fatalf("scorecards %v", cards)
	}
	card := cards[0]["scorecard"].(map[string]any)
	cs := card["candidates"].([]any)
	if len(cs) != 2 || card["pick"] == "" {
		t.Fatalf("scorecard %v", card)
	}
	for _, c := range cs {
		if steps := c.(map[string]any)["steps"].([]any); len(steps) != 1 {
			t.Fatalf("a cascade of one action has one step: %v", c)
		}
	}
	// A person completes a large case; the receipt is observed as a happy
	// customer and moves satisfaction up.
	st, _ = goodwill(t, w, 60)
	got, err := w.Decide(st, choiceInput(2, mustOffer(t, w, st), "path:store-credit", "dana", "operator", "mrp.choose_option"))
	if err != nil || len(got.Effects) != 1 {
		t.Fatalf("choice: %v %q", err, got.Refusal)
	}
	done, err := w.Decide(got.State, Input{Seq: 3, Kind: KindReceipt, Body: receiptFor(got.Effects[0], "confirmed_success")})
	if err != nil || done.Completion != Complete {
		t.Fatalf("receipt: %v %s", err, done.Completion)
	}
	after := notes(done, "aif.step")
	if len(after) != 1 || after[0]["tick"] != float64(2) {
		t.Fatalf("receipt step %v", after)
	}
	mu2 := after[0]["record"].(map[string]any)["mu"].([]any)
	if mu2[0].(float64) <= mu[0].(float64) {
		t.Fatalf("satisfaction did not rise after a confirmed refund: %v → %v", mu, mu2)
	}
	// An amount outside the channel's range is not an observation: the
	// step is skipped and traced, and the input is still decided.
	_, big := goodwill(t, w, 20000)
	if len(notes(big, "aif.step")) != 0 || len(notes(big, "aif.observation_skipped")) != 1 || len(notes(big, "h.outcome")) == 0 {
		t.Fatalf("out-of-range observation: %v", big.Trace)
	}
	determinism.Check(t, decideCase{got.State, Input{Seq: 3, Kind: KindReceipt, Body: receiptFor(got.Effects[0], "confirmed_success")}}, func(c decideCase) string {
		r, err := w.Decide(c.State, c.In)
		if err != nil {
			return err.Error()
		}
		b, _ := json.Marshal(r)
		return string(b)
	})
}

func TestChannelControllerManifestErrors(t *testing.T) {
	base := channelBundle(t)
	cases := []struct{ name, find, replace, ptr string }{
		{"unknown channel", `"satisfaction": 3,`, `"mood": 3,`, "/controller/observe/events/refund.requested~11/mood"},
		{"missing channel", `"satisfaction": 9, "amount": 0`, `"satisfaction": 9`, "/controller/observe/receipts/confirmed_success"},
		{"payload reference in a receipt", `"amount": 0`, `"amount": "$payload.amount"`, "/controller/observe/receipts/confirmed_success/amount"},
		{"unknown action", `["store-credit"]`, `["cash"]`, "/controller/options/path:store-credit/0"},
		{"empty cascade", `"nothing": ["wait"]`, `"nothing": []`, "/controller/nothing"},
	}
	for _, c := range cases {
		files := map[string][]byte{}
		for k, v := range base {
			files[k] = v
		}
		files[ManifestFile] = []byte(strings.Replace(string(base[ManifestFile]), c.find, c.replace, 1))
		_, err := Compile(files)
		e, ok := err.(*Error)
		if !ok || e.Code != CodeMalformed || e.Pointer != c.ptr {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	files := map[string][]byte{}
	for k, v := range base {
		files[k] = v
	}
	files["controller.json"] = []byte(strings.Replace(string(base["controller.json"]), `"alpha": 0.05`, `"alpha": 5`, 1))
	if _, err := Compile(files); err == nil || err.(*Error).Code != CodeBadController {
		t.Errorf("an invalid channel model: %v", err)
	}
}

// FuzzDecideChannelInput feeds arbitrary inputs to a run whose controller
// is a channel model: Decide refuses or decides, never panics, and a
// refusal keeps the state.
func FuzzDecideChannelInput(f *testing.F) {
	w, err := Compile(channelBundle(f))
	if err != nil {
		f.Fatal(err)
	}
	st, _ := w.Init("run-fuzz")
	f.Add([]byte(refundInput("r-1", 20, "carol", "goodwill")))
	f.Add([]byte(refundInput("r-2", 1<<40, "carol", "goodwill")))
	f.Add([]byte(`{"type":"refund.requested/1","payload":{"refund_id":"r","amount":"x","payee":"p","reason":"goodwill"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := w.Decide(st, Input{Seq: 1, Kind: KindInput, Body: body, Digest: cjson.Digest(body)})
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if r.Refusal != "" && (!bytes.Equal(r.State, st) || len(r.Effects) > 0) {
			t.Fatal("a refusal changed the state or planned effects")
		}
	})
}
