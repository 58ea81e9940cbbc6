package workflow

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
)

// Property, against a model of the order: whenever a tick decides kept
// proposals again, it decides them in the order they were kept, the one a
// person's RESUME names first, and the Journey Strip records one REDECIDE
// per proposal in that order, each followed by H's own entry for it
// before the next. Whatever a person does in between, a receipt never
// removes an entry a person added: the count of people's entries in the
// strip never goes down.
func TestKeptProposalsAreDecidedInTheOrderKept(t *testing.T) {
	w := compileExample(t, "ops-agent")
	rapid.Check(t, func(rt *rapid.T) {
		st, _ := w.Init("run-order")
		var open []Effect
		seq := int64(0)
		people := func(v View) int {
			n := 0
			for _, e := range v.Journey {
				if slices.Contains(mrp.HumanRoles, e.Role) {
					n++
				}
			}
			return n
		}
		step := func(in Input, named string) {
			before := mustView(rt, w, st)
			r, err := w.Decide(st, in)
			if err != nil {
				rt.Fatal(err)
			}
			if r.Refusal != "" {
				return
			}
			after := mustView(rt, w, r.State)
			if in.Kind == KindReceipt && people(after) < people(before) {
				rt.Fatalf("a receipt removed a person's entry: %d then %d", people(before), people(after))
			}
			var got []string
			for _, n := range notes(r, "held.redecide") {
				got = append(got, n["proposal_id"].(string))
			}
			if len(got) > 0 {
				var want []string
				for _, h := range before.Held {
					want = append(want, h.ProposalID)
				}
				if slices.Contains(want, named) {
					want = append([]string{named}, slices.DeleteFunc(want, func(p string) bool { return p == named })...)
				}
				if !slices.Equal(got, want) {
					rt.Fatalf("decided again in order %v, want %v", got, want)
				}
				var strip []string
				added := after.Journey[len(before.Journey):]
				for i, e := range added {
					if e.Trigger != mrp.Redecide {
						continue
					}
					strip = append(strip, e.Cause[:len(got[len(strip)])])
					if i+1 >= len(added) || added[i+1].Trigger == mrp.Redecide || added[i+1].ActorID != "authority" {
						rt.Fatalf("REDECIDE of %s not followed by H's entry: %+v", strip[len(strip)-1], added)
					}
				}
				if !slices.Equal(strip, got) {
					rt.Fatalf("journey REDECIDE order %v, notes %v", strip, got)
				}
			}
			for _, e := range r.Effects {
				if e.Approval != nil {
					need := *e.Approval
					ae, err := w.AuthorizeApproved(r.State, need, grantFor(need, "oncall-lead", "human_approver"))
					if err != nil {
						continue // deliberation ended: never carried out
					}
					e = ae
				}
				open = append(open, e)
			}
			st = r.State
		}
		n := rapid.IntRange(2, 16).Draw(rt, "steps")
		for i := 0; i < n; i++ {
			seq++
			switch rapid.IntRange(0, 4).Draw(rt, "kind") {
			case 0, 1:
				reason := rapid.SampledFrom([]string{"unknown", "leak"}).Draw(rt, "reason")
				step(Input{Seq: seq, Kind: KindInput, Body: opsInput("restart.requested/1", fmt.Sprintf("rst-%d", i), "api", "dest:ops-api", "reason", reason)}, "")
			case 2:
				if len(open) == 0 {
					seq--
					continue
				}
				k := rapid.IntRange(0, len(open)-1).Draw(rt, "receipt")
				e := open[k]
				open = slices.Delete(open, k, k+1)
				step(Input{Seq: seq, Kind: KindReceipt, Body: receiptFor(e, protocol.OutcomeConfirmedSuccess)}, "")
			case 3:
				body := trig(mrp.Resume)
				named := ""
				if held := mustView(rt, w, st).Held; len(held) > 0 && rapid.Bool().Draw(rt, "name") {
					named = held[rapid.IntRange(0, len(held)-1).Draw(rt, "named")].ProposalID
					body["proposal_id"] = named
				}
				step(controlInput(seq, body, "oncall-lead", "operator", "mrp.resume"), named)
			default:
				tr := rapid.SampledFrom([]mrp.Trigger{mrp.Pause, mrp.RequestTest, mrp.HumanEscalate, mrp.LeaveSafeMode}).Draw(rt, "act")
				capName, _ := mrp.RequiredCapability(tr)
				step(controlInput(seq, trig(tr), "oncall-lead", "operator", capName), "")
			}
		}
	})
}
