package authority

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/mrp"
)

func loadPolicy(t testing.TB) *Policy {
	t.Helper()
	src, err := os.ReadFile("testdata/gates.dl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompilePolicy("policy/1", "gates.dl", src, logic.Limits{MaxFirings: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ticketFor(t testing.TB, action string, params map[string]any, effects ...SideEffect) Ticket {
	t.Helper()
	if len(effects) == 0 {
		effects = []SideEffect{SideEffectWrite}
	}
	tk, err := DraftTicket(TicketSpec{TicketID: "ticket:t", Action: action, Destination: "dest:shop", Scope: "scope:team", Parameters: params, SideEffects: effects, AssessedRisk: RiskReversible})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func gateOf(ev Evaluation, g string) GateResult {
	for _, r := range ev.Gates {
		if r.Gate == g {
			return r
		}
	}
	return GateResult{}
}

func TestGatesDecide(t *testing.T) {
	p := loadPolicy(t)
	withCap := []logic.Fact{CapabilityFact("ticket:t", "capability:any")}
	cases := []struct {
		name     string
		ticket   Ticket
		extra    []logic.Fact
		decision Decision
		move     mrp.Move
		risk     string
	}{
		{"publish allowed", ticketFor(t, "artifact.publish", nil), withCap, Allow, mrp.MoveProceed, RiskReversible},
		{"publish without capability is denied by default", ticketFor(t, "artifact.publish", nil), nil, Refuse, mrp.MoveRefuse, RiskReversible},
		{"unknown action denied by default", ticketFor(t, "rocket.launch", nil), withCap, Refuse, mrp.MoveRefuse, ""},
		{"small payment to an untrusted recipient asks first", ticketFor(t, "payment.send", map[string]any{"amount": int64(10)}), withCap, AskFirst, mrp.MoveAskFirst, RiskHighRiskExternal},
		{"hard ceiling refuses outright", ticketFor(t, "payment.send", map[string]any{"amount": int64(20000)}), withCap, Refuse, mrp.MoveRefuse, RiskHighRiskExternal},
		{"irreversible without capability is a G1 block", ticketFor(t, "artifact.publish", nil, SideEffectIrreversible), nil, Refuse, mrp.MoveRefuse, RiskReversible},
		{"blunt post opens contestable mode", ticketFor(t, "message.post", map[string]any{"tone": "blunt"}), withCap, ShapeDecision, mrp.MoveOptions, RiskReversible},
		{"evaluation error never allows", ticketFor(t, "ratio.check", map[string]any{"d": int64(0)}), withCap, Refuse, mrp.MoveRefuse, ""},
		{"evaluation succeeds otherwise", ticketFor(t, "ratio.check", map[string]any{"d": int64(2)}), withCap, Allow, mrp.MoveProceed, ""},
	}
	for _, c := range cases {
		ev := p.Evaluate(c.ticket, c.extra...)
		res, err := Resolve(ev.Signals)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Decision != c.decision || res.Move != c.move || ev.AssessedRisk != c.risk {
			t.Errorf("%s: %s/%s risk %q, want %s/%s risk %q", c.name, res.Decision, res.Move, ev.AssessedRisk, c.decision, c.move, c.risk)
		}
	}
}

func TestGateProvenance(t *testing.T) {
	p := loadPolicy(t)
	ev := p.Evaluate(ticketFor(t, "payment.send", map[string]any{"amount": int64(10)}), CapabilityFact("ticket:t", "capability:pay"))
	g3 := gateOf(ev, GateG3)
	if g3.Decision != AskFirst || len(g3.Reasons) != 1 {
		t.Fatalf("G3: %+v", g3)
	}
	why := g3.Reasons[0]
	if why.Rule != "g3.external-recipient" || !strings.Contains(why.Detail, "gates.dl:") {
		t.Errorf("reason does not name the rule and its position: %+v", why)
	}
	if strings.Join(why.Facts, " ") != `action("ticket:t", "payment.send") destination("ticket:t", "dest:shop")` {
		t.Errorf("facts: %q", why.Facts)
	}
	if len(why.Absent) != 1 || why.Absent[0] != `!trusted("dest:shop")` {
		t.Errorf("absences: %q", why.Absent)
	}
	// Default deny names itself.
	ev = p.Evaluate(ticketFor(t, "rocket.launch", nil))
	if g2 := gateOf(ev, GateG2); g2.Decision != Refuse || g2.Reasons[len(g2.Reasons)-1].Rule != "default-deny" {
		t.Errorf("default deny: %+v", g2)
	}
}

func TestGateFailsClosed(t *testing.T) {
	p := loadPolicy(t)
	ev := p.Evaluate(ticketFor(t, "ratio.check", map[string]any{"d": int64(0)}), CapabilityFact("ticket:t", "c"))
	for _, g := range ev.Gates {
		if g.Decision != Refuse || g.Error == "" {
			t.Errorf("%s after an evaluation error: %s %q", g.Gate, g.Decision, g.Error)
		}
	}
	// A firing budget the policy exceeds also fails closed.
	src, _ := os.ReadFile("testdata/gates.dl")
	tight, err := CompilePolicy("policy/1", "gates.dl", src, logic.Limits{MaxFirings: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev = tight.Evaluate(ticketFor(t, "artifact.publish", nil), CapabilityFact("ticket:t", "c"))
	if r, _ := Resolve(ev.Signals); r.Decision != Refuse {
		t.Errorf("budget exhaustion decided %s", r.Decision)
	}
	// Unknown verdicts and unknown gates refuse. Written as constants they
	// are refused when the policy loads (TestCompilePolicyErrors); bound
	// from the ticket's facts, only evaluation can see them.
	bad, err := CompilePolicy("policy/2", "bad.dl", []byte(`decision("G2", v, "r") :- action(t, v).
decision(g, "ALLOW", "r2") :- action(t, g).`), logic.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ev = bad.Evaluate(ticketFor(t, "x.y", nil))
	if r, _ := Resolve(ev.Signals); r.Decision != Refuse {
		t.Errorf("unknown verdict/gate decided %s", r.Decision)
	}
}

func TestCompilePolicyErrors(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":          `decision("G2", "ALLOW" :- ticket(t).`,
		"foreign input":   ".decl secrets(x: symbol)\n.input secrets\ndecision(\"G2\", \"ALLOW\", \"r\") :- secrets(x).",
		"arity":           `decision("G2", "ALLOW") :- ticket(t).`,
		"unknown gate":    `decision("G9", "ALLOW", "r") :- ticket(t).`,
		"unknown verdict": `decision("G2", "ALOW", "r") :- ticket(t).`,
	} {
		if _, err := CompilePolicy("p/1", name+".dl", []byte(src), logic.Limits{}); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	if _, err := CompilePolicy("bad version", "x.dl", nil, logic.Limits{}); err == nil {
		t.Error("bad version accepted")
	}
	// A misspelt gate or verdict is named with its position, not only
	// refused later under G2.
	for src, want := range map[string]string{
		"decision(\"G2\", \"ALLOW\", \"ok\") :- ticket(t).\ndecision(\"G9\", \"ALLOW\", \"r\") :- ticket(t).": `p.dl:2:10: decision names unknown gate "G9"`,
		`decision("G3", "ALOW", "r") :- ticket(t).`:                                                           `p.dl:1:16: decision names unknown verdict "ALOW"`,
	} {
		_, err := CompilePolicy("p/1", "p.dl", []byte(src), logic.Limits{})
		var pe *PolicyError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want a PolicyError containing %q", src, err, want)
		}
	}
}

func TestHardGateRefusalIsTierZero(t *testing.T) {
	p := loadPolicy(t)
	for _, tk := range []Ticket{
		ticketFor(t, "artifact.publish", nil, SideEffectIrreversible),
		ticketFor(t, "payment.send", map[string]any{"amount": int64(20000)}),
	} {
		res, _ := Resolve(p.Evaluate(tk, CapabilityFact("ticket:t", "c")).Signals)
		if tk.SideEffects[0] == SideEffectIrreversible {
			res, _ = Resolve(p.Evaluate(tk).Signals)
		}
		if res.HighestTier != 0 || res.Decision != Refuse {
			t.Errorf("%s: tier %d decision %s", tk.Action, res.HighestTier, res.Decision)
		}
	}
	// The contest is recorded with its options.
	res, _ := Resolve(p.Evaluate(ticketFor(t, "message.post", map[string]any{"tone": "blunt"}), CapabilityFact("ticket:t", "c")).Signals)
	if !res.Contestable || strings.Join(res.Options, ",") != "rephrase-politely,send-as-is-with-notice" {
		t.Errorf("contest: %+v", res)
	}
	// SHAPE carries its constraint to the ticket and the preview.
	tk := ticketFor(t, "payment.send", map[string]any{"amount": int64(5000)})
	ev := p.Evaluate(tk, CapabilityFact("ticket:t", "c"))
	res, _ = Resolve(ev.Signals)
	if res.Decision != AskFirst || len(res.Constraints) != 1 {
		t.Fatalf("payment 5000: %s %+v", res.Decision, res.Constraints)
	}
	shaped, err := Shape(tk, res.Constraints...)
	if err != nil || shaped.Parameters["amount"] != int64(1000) || !strings.Contains(shaped.Preview, "limited to 1000") {
		t.Fatalf("shaped: %v %v", err, shaped.Parameters)
	}
}

// FuzzCompilePolicy: any policy text either fails to compile with a typed
// error or evaluates without panicking, and the flat evaluator (when used)
// agrees with the engine on the decisions.
func FuzzCompilePolicy(f *testing.F) {
	src, _ := os.ReadFile("testdata/gates.dl")
	f.Add(string(src))
	f.Add(fixturePolicy)
	f.Add(`decision("G2", "ALLOW", "r") :- action(t, a), a != "x", !missing(t, _).`)
	f.Add(`decision(_, "ALLOW", "r") :- ticket(t).`)
	f.Add(`option("G4", "r", p) :- param_sym(t, "p", p).`)
	f.Add(".decl quorum(n: number, rule: symbol)\n" + `quorum(2, "q") :- param_num(t, "amount", n), n > 10.` + "\n" + fixturePolicy)
	f.Add(".decl approver(name: symbol, rule: symbol)\n" + `approver("leads", "a") :- param_num(t, "amount", n), n > 10.` + "\n" + fixturePolicy)
	f.Add(`decision("G2", "DENY", "many") :- action(t, _), count : param_sym(t, _, _) > 1, sum n : param_num(t, _, n) >= 50.` + "\n" + fixturePolicy)
	tk, _ := DraftTicket(TicketSpec{TicketID: "ticket:f", Action: "payment.send", Destination: "dest:shop", Scope: "scope:s",
		Parameters: map[string]any{"amount": int64(50), "p": "x"}, SideEffects: []SideEffect{SideEffectExternal}, AssessedRisk: RiskReversible})
	f.Fuzz(func(t *testing.T, text string) {
		p, err := CompilePolicy("p/1", "fuzz.dl", []byte(text), logic.Limits{MaxFirings: 10000, MaxInputs: 1000})
		if err != nil {
			if _, ok := err.(*PolicyError); !ok {
				t.Fatalf("untyped error %T", err)
			}
			return
		}
		facts := TicketFacts(tk, CapabilityFact(tk.TicketID, "c"))
		ev := p.Evaluate(tk, CapabilityFact(tk.TicketID, "c"))
		if _, err := Resolve(ev.Signals); err != nil {
			t.Fatalf("gates produced a malformed signal: %v", err)
		}
		// A quorum is within the bound the policy compiled with, or none.
		if n, _, err := p.Quorum(tk, CapabilityFact(tk.TicketID, "c")); err == nil && (n > p.MaxQuorum() || n == 1 || n < 0) {
			t.Fatalf("quorum %d, the policy's most %d", n, p.MaxQuorum())
		}
		if p.Flat {
			got, e1 := p.engine.derive(facts)
			want, e2 := p.oracle.derive(facts)
			if (e1 == nil) != (e2 == nil) || (e1 == nil && !reflect.DeepEqual(normalizeDerived(got), normalizeDerived(want))) {
				t.Fatalf("flat and engine disagree on\n%s\n%+v\n%+v", text, got, want)
			}
		}
	})
}
