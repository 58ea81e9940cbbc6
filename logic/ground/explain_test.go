package ground

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// renderProof prints a proof as a compact tree, for assertions.
func renderProof(p *Proof) string {
	if p == nil {
		return "-"
	}
	subject := p.Atom["predicate"]
	if subject == nil {
		subject = p.Atom["entity"]
	}
	var b strings.Builder
	sign := "+"
	if p.Polarity == negative {
		sign = "-"
	}
	if p.RuleID == "" {
		b.WriteString(sign + subject.(string) + "[base " + p.SupportID + "]")
		return b.String()
	}
	b.WriteString(sign + subject.(string) + "[" + p.RuleID + "](")
	for i, q := range p.Premises {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(renderProof(q))
	}
	for _, a := range p.Absences {
		b.WriteString(" not " + a.Atom["predicate"].(string))
	}
	b.WriteString(")")
	return b.String()
}

func TestExplain(t *testing.T) {
	cases := []struct {
		bundle   string
		deltas   []string
		atom     string
		state    string
		pos, neg string
		depth    int64
	}{
		// c has two supports of depth 1; the tie goes to the smaller
		// derivation id, here c-from-b's.
		{"two_supports", []string{"a_positive", "b_positive"}, "d", TrueOnly,
			"+d[rule:d-from-c](+c[rule:c-from-b](+b[base derivation:base:b]))", "-", 2},
		{"two_supports", []string{"b_positive"}, "c", TrueOnly, "+c[rule:c-from-b](+b[base derivation:base:b])", "-", 1},
		{"positive_cycle", []string{"a_positive"}, "a", TrueOnly, "+a[base derivation:base:a]", "-", 0},
		{"positive_cycle", []string{"a_positive"}, "c", TrueOnly,
			"+c[rule:c-from-b](+b[rule:b-from-a](+a[base derivation:base:a]))", "-", 2},
		{"lower_stratum_default", []string{"candidate_positive", "blocked_negative"}, "eligible", TrueOnly,
			"+eligible[rule:eligible-if-not-blocked](+candidate[base derivation:base:candidate] not blocked)", "-", 1},
		{"lower_stratum_default", []string{"candidate_positive", "blocked_positive", "blocked_negative"}, "blocked", Both,
			"+blocked[base derivation:truth:blocked-positive]", "-blocked[base derivation:truth:blocked-negative]", 0},
		{"lower_stratum_default", []string{"candidate_positive", "seed_positive"}, "eligible", Neither, "-", "-", 0},
	}
	for _, c := range cases {
		t.Run(c.bundle+"/"+c.atom, func(t *testing.T) {
			b := buildBundle(m2, c.bundle, false)
			res, rej := Solve(nil, b, buildDeltas(m2, c.deltas, 1, b), 1)
			if rej != nil {
				t.Fatal(rej.Wire())
			}
			ex, rej := Explain(res["next_materialization"], b, m2.atoms[c.atom])
			if rej != nil {
				t.Fatal(rej.Wire())
			}
			if ex.State != c.state {
				t.Errorf("state %s, want %s", ex.State, c.state)
			}
			if got, _, _ := stateOf(t, res, m2.atoms[c.atom]); got != ex.State && got != "" {
				t.Errorf("explanation state %s disagrees with the materialization's %s", ex.State, got)
			}
			if got := renderProof(ex.Positive); got != c.pos {
				t.Errorf("positive proof\n got %s\nwant %s", got, c.pos)
			}
			if got := renderProof(ex.Negative); got != c.neg {
				t.Errorf("negative proof\n got %s\nwant %s", got, c.neg)
			}
			if ex.Positive != nil && ex.Positive.Depth != c.depth {
				t.Errorf("depth %d, want %d", ex.Positive.Depth, c.depth)
			}
		})
	}
}

func TestExplainRejects(t *testing.T) {
	b := buildBundle(m2, "two_supports", false)
	res, _ := Solve(nil, b, buildDeltas(m2, []string{"a_positive"}, 1, b), 1)
	mat := cloneValue(res["next_materialization"]).(map[string]any)
	mat["derived_supports"] = []any{}
	if _, rej := Explain(mat, b, m2.atoms["c"]); rej == nil || rej.Code != CodeProvenanceIntegrityViolation {
		t.Errorf("forged materialization explained: %v", rej)
	}
	if _, rej := Explain(res["next_materialization"], buildBundle(m2, "empty", false), m2.atoms["c"]); rej == nil || rej.Code != CodeRuleBundleMismatch {
		t.Errorf("foreign bundle: %v", rej)
	}
	if _, rej := Explain(res["next_materialization"], b, "c"); rej == nil {
		t.Error("explained a non-object atom")
	}
	if _, rej := Explain(nil, b, m2.atoms["c"]); rej == nil {
		t.Error("explained without a materialization")
	}
}

// checkProof verifies a proof is well founded: a base support at depth 0, or
// a rule whose premises are proofs of exactly its required literals, one
// level shallower at most.
func checkProof(t interface{ Fatalf(string, ...any) }, p *Proof, rules map[string]ruleT, c corpus) {
	if p.RuleID == "" {
		if p.Depth != 0 || p.Provenance == nil {
			t.Fatalf("base proof %v", p)
		}
		return
	}
	r, ok := rules[p.RuleID]
	if !ok || len(p.Premises) != len(r.required) || len(p.Absences) != len(r.defaults) {
		t.Fatalf("proof by %s does not match its rule", p.RuleID)
	}
	var deepest int64
	for _, q := range p.Premises {
		checkProof(t, q, rules, c)
		deepest = max(deepest, q.Depth)
	}
	if p.Depth != deepest+1 {
		t.Fatalf("proof by %s at depth %d over premises of depth %d", p.RuleID, p.Depth, deepest)
	}
}

func TestExplainRandom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		batch := drawBatch(t, p, map[string]litT{}, 1)
		res, rej := Solve(nil, p.bundle, batch, 1)
		if rej != nil {
			return
		}
		rules := map[string]ruleT{}
		for _, r := range p.rules {
			rules[r.id] = r
		}
		for _, a := range p.corpus.atoms {
			ex, rej := Explain(res["next_materialization"], p.bundle, a)
			if rej != nil {
				t.Fatalf("explain rejected: %v", rej.Wire())
			}
			state, _, _ := stateOfT(res, a)
			if state == "" {
				state = Neither
			}
			if ex.State != state {
				t.Fatalf("explained %s, materialization says %s", ex.State, state)
			}
			for _, pr := range []*Proof{ex.Positive, ex.Negative} {
				if pr != nil {
					checkProof(t, pr, rules, p.corpus)
				}
			}
		}
	})
}
