package reduce_test

import (
	"fmt"

	"flrh.dev/flrh/aif/reduce"
)

// The worked example: counts [1, 30] under a flat prior favour a model in
// which the first outcome never happens, by more than 3 nats.
func ExampleEvaluate() {
	out, err := reduce.Evaluate(
		[]reduce.Parameter{{Name: "fit", Prior: []float64{1, 1}, Posterior: []float64{1, 30}}},
		[]reduce.Proposal{{ID: "prune", Reduced: map[string][]float64{"fit": {0.001, 1}}}},
		reduce.DefaultThreshold)
	if err != nil {
		panic(err)
	}
	fmt.Printf("ΔF = %.3f accepted = %v posterior = %v\n", out[0].DeltaF, out[0].Accepted, out[0].ReducedPosterior["fit"])
	// Output:
	// ΔF = -3.397 accepted = true posterior = [0.001 30]
}
