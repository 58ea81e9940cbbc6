package workflow

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"flrh.dev/flrh/logic"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// TestFactChangesInARoomArePlain holds factChanges' one-allocation room
// (factRoom) to the changes made without it, over rapid-drawn deltas of
// the refund agent's facts — insertions, retractions of live supports,
// wrong types, missing and extra members, unmapped predicates — from
// drawn live supports; and holds what one call returned unchanged by the
// next call.
func TestFactChangesInARoomArePlain(t *testing.T) {
	w := compileExample(t, "refund-agent")
	preds := make([]string, 0, len(w.facts))
	for p := range w.facts {
		preds = append(preds, p)
	}
	slices.Sort(preds)
	rapid.Check(t, func(rt *rapid.T) {
		arg := func(label string) any {
			if rapid.Bool().Draw(rt, label+"-kind") {
				return int64(rapid.IntRange(-2, 3).Draw(rt, label))
			}
			return rapid.SampledFrom([]string{"a", "b", "payee-1", "r-1"}).Draw(rt, label)
		}
		delta := func(i int, pred string, diff int64) protocol.FactDelta {
			tuple := protocol.Object{"predicate": pred}
			for _, c := range w.facts[pred] {
				if rapid.IntRange(0, 20).Draw(rt, "drop") > 0 {
					tuple[c] = arg("arg")
				}
			}
			if rapid.IntRange(0, 20).Draw(rt, "extra") == 0 {
				tuple["extra"] = "x"
			}
			return protocol.FactDelta{Kind: protocol.KindFactDelta, Tuple: tuple, Diff: diff,
				DerivationID:    "derivation:" + strconv.Itoa(i),
				ProvenanceDelta: protocol.Object{"source": rapid.SampledFrom([]string{"f", "g"}).Draw(rt, "prov")}}
		}
		var live []support
		for i := range rapid.IntRange(0, 4).Draw(rt, "live") {
			pred := rapid.SampledFrom(preds).Draw(rt, "live-pred")
			args := make([]any, len(w.facts[pred]))
			for j := range args {
				args[j] = arg("live-arg")
			}
			live = append(live, support{ID: "fact:live-" + strconv.Itoa(i), Predicate: pred, Args: args, Provenance: `{"source":"f"}`})
		}
		var deltas []protocol.FactDelta
		for i := range rapid.IntRange(1, 3).Draw(rt, "deltas") {
			switch {
			case len(live) > 0 && rapid.Bool().Draw(rt, "retract"):
				s := live[rapid.IntRange(0, len(live)-1).Draw(rt, "which")]
				tuple := protocol.Object{"predicate": s.Predicate}
				for j, c := range w.facts[s.Predicate] {
					tuple[c] = s.Args[j]
				}
				deltas = append(deltas, protocol.FactDelta{Kind: protocol.KindFactDelta, Tuple: tuple, Diff: -1,
					DerivationID: "derivation:r" + strconv.Itoa(i), ProvenanceDelta: protocol.Object{"source": "f"}})
			case rapid.IntRange(0, 10).Draw(rt, "unmapped") == 0:
				deltas = append(deltas, delta(i, "no_such_fact", 1))
			default:
				deltas = append(deltas, delta(i, rapid.SampledFrom(preds).Draw(rt, "pred"), 1))
			}
		}
		run := func(room *factRoom) ([]logic.FactChange, []support, string, []Note) {
			tk := &tick{w: w, st: &state{Supports: slices.Clone(live)}}
			tk.trace = tk.notes[:0]
			c, s, r := tk.factChangesIn(deltas, room)
			return c, s, r, tk.trace
		}
		wc, ws, wr, wn := run(nil)
		gc, gs, gr, gn := run(new(factRoom))
		if !reflect.DeepEqual(gc, wc) || !reflect.DeepEqual(gs, ws) || gr != wr || !reflect.DeepEqual(gn, wn) {
			rt.Fatalf("with a room:\n%v\n%v\n%q\nwithout:\n%v\n%v\n%q", gc, gs, gr, wc, ws, wr)
		}
		// What the room held is the caller's: a second call changes none of it.
		keepC, keepS := slices.Clone(gc), slices.Clone(gs)
		for i := range keepC {
			keepC[i].Fact.Args = slices.Clone(keepC[i].Fact.Args)
		}
		for i := range keepS {
			keepS[i].Args = slices.Clone(keepS[i].Args)
		}
		run(new(factRoom))
		if !reflect.DeepEqual(gc, keepC) || !reflect.DeepEqual(gs, keepS) {
			rt.Fatal("a later call changed what an earlier one returned")
		}
		// Appending to what was returned writes into nothing else.
		for i := range gs {
			if cap(gs[i].Args) != len(gs[i].Args) {
				rt.Fatalf("support %d's arguments have room past their end", i)
			}
		}
		for i := range gc {
			if cap(gc[i].Fact.Args) != len(gc[i].Fact.Args) {
				rt.Fatalf("change %d's values have room past their end", i)
			}
		}
	})
}
