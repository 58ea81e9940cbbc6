package ground

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/determinism"
)

// randomProgram draws a stratified ground bundle over a few atoms. Every
// literal gets a level; a rule lives at its head's level, requires literals
// of lower or equal level and default-negates atoms whose positive level is
// strictly lower, so the bundle is stratified by construction.
type randomProgram struct {
	atoms  []map[string]any
	bundle map[string]any
	rules  []ruleT
	corpus corpus
}

func drawProgram(t *rapid.T) randomProgram {
	nAtoms := rapid.IntRange(2, 5).Draw(t, "atoms")
	c := corpus{atoms: map[string]atomT{}, bundles: map[string]bundleT{}}
	var names []string
	for i := range nAtoms {
		name := fmt.Sprintf("a%d", i)
		names = append(names, name)
		c.atoms[name] = obj("predicate", "p", "subject", name)
	}
	level := map[litT]int64{}
	for _, n := range names {
		level[pos(n)] = int64(rapid.IntRange(0, 2).Draw(t, "level+"+n))
		level[neg(n)] = int64(rapid.IntRange(0, 2).Draw(t, "level-"+n))
	}
	nRules := rapid.IntRange(0, 7).Draw(t, "rules")
	var rules []ruleT
	for i := range nRules {
		head := litT{rapid.SampledFrom(names).Draw(t, "head"), rapid.SampledFrom([]string{positive, negative}).Draw(t, "headpol")}
		s := level[head]
		var req []litT
		for _, n := range names {
			for _, l := range []litT{pos(n), neg(n)} {
				if level[l] <= s && rapid.IntRange(0, 4).Draw(t, "req") == 0 {
					req = append(req, l)
				}
			}
		}
		var defs []defT
		for _, n := range names {
			if lv := level[pos(n)]; lv < s && rapid.IntRange(0, 3).Draw(t, "def") == 0 {
				defs = append(defs, defT{n, int64(rapid.IntRange(int(lv), int(s-1)).Draw(t, "ref"))})
			}
		}
		if len(req) == 0 && len(defs) == 0 {
			continue
		}
		rules = append(rules, ruleT{id: fmt.Sprintf("rule:%d", i), stratum: s, head: head, required: req, defaults: defs})
	}
	// Small declared limits now and then, so that budget rejections are
	// part of the differential too.
	firings, depth := int64(1000), int64(8)
	if rapid.IntRange(0, 3).Draw(t, "tight") == 0 {
		firings = int64(rapid.IntRange(1, 4).Draw(t, "firings"))
		depth = int64(rapid.IntRange(1, 3).Draw(t, "depth"))
	}
	c.bundles["p"] = bundleT{maxFirings: firings, maxDepth: depth, queries: names[:1], rules: rules}
	return randomProgram{bundle: buildBundle(c, "p", false), rules: rules, corpus: c}
}

// drawBatch draws one batch of deltas against the ids currently active.
func drawBatch(t *rapid.T, p randomProgram, active map[string]litT, lt int64) []any {
	var names []string
	for n := range p.corpus.atoms {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []any
	n := rapid.IntRange(0, 4).Draw(t, "batch")
	for range n {
		id := fmt.Sprintf("d:%d", rapid.IntRange(0, 5).Draw(t, "id"))
		diff := int64(1)
		l := litT{rapid.SampledFrom(names).Draw(t, "atom"), rapid.SampledFrom([]string{positive, negative}).Draw(t, "pol")}
		if prev, ok := active[id]; ok && rapid.Bool().Draw(t, "retract") {
			diff, l = -1, prev
		}
		out = append(out, obj("kind", "LFactDeltaInput", "schema_version", InputSchemaVersion, "polarity", l.polarity,
			"delta", obj("kind", "FactDelta", "tuple", cloneValue(p.corpus.atoms[l.ref]), "logical_time", lt, "diff", diff,
				"derivation_id", id, "causation_id", fmt.Sprintf("event:%d", lt),
				"provenance_delta", obj("source", id), "rule_set_version", "rules/m2-test/1",
				"dataflow_version", "dataflow/m2-test/1")))
	}
	return out
}

// naiveStates is an independent oracle: naive stratified fixpoint by
// repeated passes, counting one support per satisfied rule.
func naiveStates(p randomProgram, active map[string]litT) map[string][2]int {
	present := map[litT]bool{}
	for _, l := range active {
		present[l] = true
	}
	var strata []int64
	for _, r := range p.rules {
		strata = append(strata, r.stratum)
		for _, d := range r.defaults {
			strata = append(strata, d.referenced)
		}
	}
	slices.Sort(strata)
	strata = slices.Compact(strata)
	completed := map[int64]map[litT]bool{}
	satisfied := map[string]bool{}
	for _, s := range strata {
		for changed := true; changed; {
			changed = false
			for _, r := range p.rules {
				if r.stratum != s || satisfied[r.id] {
					continue
				}
				ok := true
				for _, l := range r.required {
					ok = ok && present[l]
				}
				for _, d := range r.defaults {
					ok = ok && !completed[d.referenced][pos(d.ref)]
				}
				if ok {
					satisfied[r.id], present[r.head], changed = true, true, true
				}
			}
		}
		completed[s] = map[litT]bool{}
		for l := range present {
			completed[s][l] = true
		}
	}
	counts := map[string][2]int{}
	bump := func(l litT) {
		c := counts[l.ref]
		if l.polarity == positive {
			c[0]++
		} else {
			c[1]++
		}
		counts[l.ref] = c
	}
	for _, l := range active {
		bump(l)
	}
	for _, r := range p.rules {
		if satisfied[r.id] {
			bump(r.head)
		}
	}
	return counts
}

// naiveMaxDepth is the largest least depth of a satisfied rule's support:
// base literals have depth 0, a support 1 + the deepest of its required
// literals, each literal the least depth of its supports (relaxed to a
// fixpoint).
func naiveMaxDepth(p randomProgram, active map[string]litT, satisfied func(ruleT) bool) int64 {
	depth := map[litT]int64{}
	for _, l := range active {
		depth[l] = 0
	}
	support := map[string]int64{}
	for changed := true; changed; {
		changed = false
		for _, r := range p.rules {
			if !satisfied(r) {
				continue
			}
			d, ok := int64(1), true
			for _, l := range r.required {
				ld, known := depth[l]
				if !known {
					ok = false
					break
				}
				d = max(d, ld+1)
			}
			if !ok {
				continue
			}
			if old, had := support[r.id]; !had || d < old {
				support[r.id], changed = d, true
			}
			if old, had := depth[r.head]; !had || d < old {
				depth[r.head], changed = d, true
			}
		}
	}
	var m int64
	for _, r := range p.rules {
		m = max(m, support[r.id])
	}
	return m
}

// applyToLedger mirrors an accepted batch on the test's own ledger.
func applyToLedger(active map[string]litT, p randomProgram, batch []any) {
	for _, raw := range batch {
		d := raw.(map[string]any)["delta"].(map[string]any)
		id := d["derivation_id"].(string)
		if d["diff"] == int64(-1) {
			delete(active, id)
			continue
		}
		for name, a := range p.corpus.atoms {
			if string(mustCanonical(a)) == string(mustCanonical(d["tuple"])) {
				active[id] = litT{name, raw.(map[string]any)["polarity"].(string)}
			}
		}
	}
}

// The incremental step agrees with a clean full recompute after every batch
// of every random sequence, accepted or rejected, and the full recompute
// agrees with the independent naive oracle.
func TestIncrementalMatchesFullRecompute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		active := map[string]litT{}
		var cp, prior any
		steps := rapid.IntRange(1, 6).Draw(t, "steps")
		for i := range steps {
			lt := int64(i + 1)
			batch := drawBatch(t, p, active, lt)
			step, srej := StepIncremental(cp, p.bundle, batch, lt)
			full, frej := Solve(prior, p.bundle, batch, lt)
			if (srej == nil) != (frej == nil) {
				t.Fatalf("step %d: incremental rejection %v, full rejection %v", i, srej, frej)
			}
			if frej != nil {
				if string(mustCanonical(srej.Wire())) != string(mustCanonical(frej.Wire())) {
					t.Fatalf("different rejections %v / %v", srej.Wire(), frej.Wire())
				}
				continue
			}
			if string(mustCanonical(step["fixpoint_result"])) != string(mustCanonical(full)) {
				t.Fatalf("step %d: incremental fixpoint differs from full recompute", i)
			}
			checkResultInvariants(t, full)
			applyToLedger(active, p, batch)
			// The contract's oracle: a clean full recomputation from the
			// whole ledger, with no prior, gives the same materialization.
			clean, crej := Solve(nil, p.bundle, ledgerInputs(p, active, lt), lt)
			if crej != nil {
				t.Fatalf("step %d: clean recomputation rejected: %v", i, crej.Wire())
			}
			if string(mustCanonical(clean["next_materialization"])) != string(mustCanonical(full["next_materialization"])) {
				t.Fatalf("step %d: stepwise materialization differs from the clean recomputation", i)
			}
			fired := map[string]bool{}
			for _, ds := range get(full, "next_materialization", "derived_supports").([]any) {
				fired[get(ds, "rule_id").(string)] = true
			}
			if got, want := get(full, "stats", "max_derivation_depth"), naiveMaxDepth(p, active, func(r ruleT) bool { return fired[r.id] }); got != want {
				t.Fatalf("step %d: max_derivation_depth %v, least depth %d", i, got, want)
			}
			want := naiveStates(p, active)
			for name, a := range p.corpus.atoms {
				st, pn, nn := stateOfT(full, a)
				w := want[name]
				if st != "" && (pn != w[0] || nn != w[1]) {
					t.Fatalf("step %d atom %s: %d/%d supports, naive %v", i, name, pn, nn, w)
				}
				if st == "" && (w[0] != 0 || w[1] != 0) {
					t.Fatalf("step %d atom %s missing, naive %v", i, name, w)
				}
			}
			cp, prior = step["next_checkpoint"], full["next_materialization"]
		}
	})
}

func stateOfT(res map[string]any, a map[string]any) (string, int, int) {
	key := string(mustCanonical(a))
	for _, s := range get(res, "next_materialization", "fact_states").([]any) {
		st := s.(map[string]any)
		if string(mustCanonical(st["atom"])) == key {
			return st["state"].(string), len(st["positive_support_ids"].([]any)), len(st["negative_support_ids"].([]any))
		}
	}
	return "", 0, 0
}

// Reordering rules, rule bodies, query atoms and inputs changes nothing:
// the result (or the rejection) is byte-identical.
func TestPermutationInvariance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		batch := drawBatch(t, p, map[string]litT{}, 1)
		want, wrej := Solve(nil, p.bundle, batch, 1)
		shuffled := cloneValue(p.bundle).(map[string]any)
		rules := shuffled["rules"].([]any)
		for _, r := range rules {
			rm := r.(map[string]any)
			rm["required_body"] = rapid.Permutation(rm["required_body"].([]any)).Draw(t, "req")
			rm["default_not_positive_body"] = rapid.Permutation(rm["default_not_positive_body"].([]any)).Draw(t, "defs")
		}
		shuffled["rules"] = rapid.Permutation(rules).Draw(t, "rules")
		shuffled["query_atoms"] = rapid.Permutation(shuffled["query_atoms"].([]any)).Draw(t, "queries")
		got, grej := Solve(nil, shuffled, rapid.Permutation(batch).Draw(t, "batch"), 1)
		if wrej != nil || grej != nil {
			if wrej == nil || grej == nil || string(mustCanonical(wrej.Wire())) != string(mustCanonical(grej.Wire())) {
				t.Fatalf("rejections differ: %v / %v", wrej, grej)
			}
			return
		}
		if string(mustCanonical(got)) != string(mustCanonical(want)) {
			t.Fatal("a permutation changed the result")
		}
	})
}

type solveIn struct {
	Prior  any
	Bundle any
	Inputs any
	Time   int64
}

type solveOut struct {
	Result    map[string]any
	Rejection map[string]any
}

func solveStep(in solveIn) solveOut {
	res, rej := Solve(in.Prior, in.Bundle, in.Inputs, in.Time)
	if rej != nil {
		return solveOut{Rejection: rej.Wire()}
	}
	return solveOut{Result: res}
}

func TestDeterminism(t *testing.T) {
	res, _ := runSequence(t, m2, "two_supports", [][]string{{"a_positive", "b_positive"}})
	b := buildBundle(m2, "two_supports", false)
	out := determinism.Check(t, solveIn{res[0]["next_materialization"], b, buildDeltas(m2, []string{"a_positive_retract"}, 2, b), 2}, solveStep)
	if out.Result == nil {
		t.Fatalf("rejected: %v", out.Rejection)
	}
	lb := buildBundle(m2, "lower_stratum_default", false)
	determinism.Check(t, solveIn{nil, lb, buildDeltas(m2, []string{"candidate_positive", "blocked_positive", "blocked_negative"}, 1, lb), 1}, solveStep)
	// A rejection is deterministic and leaves inputs alone as well.
	eb := buildBundle(m2, "empty", false)
	out = determinism.Check(t, solveIn{nil, eb, buildDeltas(m2, []string{"a_positive", "a_positive_retract"}, 1, eb), 1}, solveStep)
	if out.Rejection == nil {
		t.Fatal("accepted an ambiguous batch")
	}
	dc := buildBundle(m2il, "disjoint_chain", false)
	determinism.Check(t, solveIn{nil, dc, buildDeltas(m2il, []string{"a+", "x+"}, 1, dc), 1}, func(in solveIn) solveOut {
		step, rej := StepIncremental(in.Prior, in.Bundle, in.Inputs, in.Time)
		if rej != nil {
			return solveOut{Rejection: rej.Wire()}
		}
		return solveOut{Result: step}
	})
}

// ledgerInputs re-creates the whole active ledger as +1 inputs at time lt.
func ledgerInputs(p randomProgram, active map[string]litT, lt int64) []any {
	ids := make([]string, 0, len(active))
	for id := range active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := []any{}
	for _, id := range ids {
		l := active[id]
		out = append(out, obj("kind", "LFactDeltaInput", "schema_version", InputSchemaVersion, "polarity", l.polarity,
			"delta", obj("kind", "FactDelta", "tuple", cloneValue(p.corpus.atoms[l.ref]), "logical_time", lt, "diff", int64(1),
				"derivation_id", id, "causation_id", "event:clean", "provenance_delta", obj("source", id),
				"rule_set_version", "rules/m2-test/1", "dataflow_version", "dataflow/m2-test/1")))
	}
	return out
}
