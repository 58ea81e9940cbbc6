package policytest

import (
	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/workflow"
)

// exercised records the rule ids a decision came from.
func (r *run) exercised(y workflow.Why) {
	for _, g := range y.Gates {
		for _, why := range g.Reasons {
			r.rules[why.Rule] = true
		}
	}
	for _, why := range y.RiskReasons {
		r.rules[why.Rule] = true
	}
	for _, why := range []*authority.Reason{y.QuorumReason, y.ApproverReason} {
		if why != nil {
			r.rules[why.Rule] = true
		}
	}
}

// Coverage is how much of a bundle's gate policy its cases exercised.
type Coverage struct {
	// Rules counts the policy's rules that write an output under a rule
	// id; Exercised those whose id some case's decision came from.
	Rules, Exercised int
	// Never are the rules whose id no decision came from, in source
	// order; Untracked those that write their rule id from a variable,
	// which a reason names by its value.
	Never, Untracked []authority.RuleRef
}

// Cover says which of w's gate rules the results' decisions came from. A
// rule is exercised when some decision's reason names its rule id: a
// gate's decision, an assessment, a quorum or an approver (an option or
// a SHAPE bound is read under its decision's id, and is exercised with
// it).
func Cover(w *workflow.Workflow, results []Result) Coverage {
	seen := map[string]bool{}
	for _, r := range results {
		for _, id := range r.Rules {
			seen[id] = true
		}
	}
	var c Coverage
	for _, rule := range w.GateRules() {
		switch {
		case rule.ID == "":
			c.Untracked = append(c.Untracked, rule)
		case seen[rule.ID]:
			c.Rules++
			c.Exercised++
		default:
			c.Rules++
			c.Never = append(c.Never, rule)
		}
	}
	return c
}
