package choice_test

import (
	"fmt"

	"flrh.dev/flrh/aif/choice"
)

// A bonus for structural uncertainty moves the pick away from the core's
// favourite; the scorecard says so.
func ExampleSelect() {
	req := choice.Request{
		Candidates: []choice.Candidate{
			{ID: "retry", Core: choice.Core{Risk: 1.0, Ambiguity: 0.4}},
			{ID: "probe", Core: choice.Core{Risk: 1.1, Ambiguity: 0.5},
				Augmentations: []choice.Term{{Name: choice.ModelUncertaintyBonus, Value: -0.4}}},
		},
		Nothing: choice.Candidate{ID: "wait", Core: choice.Core{Risk: 2, Ambiguity: 0.5}},
		Margin:  0.5,
	}
	d, err := choice.Select(req)
	if err != nil {
		panic(err)
	}
	fmt.Println("pick:", d.Pick, "| best core:", d.ArgminCore, "| moved by:", d.MovedBy)
	// Output:
	// pick: probe | best core: retry | moved by: [model_uncertainty_bonus]
}
