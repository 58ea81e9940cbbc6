package aif_test

import (
	"fmt"
	"os"

	"flrh.dev/flrh/aif"
)

// One T-maze tick: the agent at the centre, with no cue yet, prefers to
// visit the cue before committing to an arm.
func Example() {
	text, err := os.ReadFile("testdata/tmaze.json")
	if err != nil {
		panic(err)
	}
	doc, err := aif.Decode(text)
	if err != nil {
		panic(err)
	}
	m := doc.Model
	r, err := m.Step(m.Prior(), []int{0, 0, 0}, aif.SelectArgmax, "")
	if err != nil {
		panic(err)
	}
	for i, s := range r.Scores {
		fmt.Printf("%-14s risk %.4f  ambiguity %.4f  q %.7f\n", m.PolicyID(s.Policy), s.Risk, s.Ambiguity, r.QPi[i])
	}
	fmt.Println("choice:", m.Factors[0].Actions[r.Action[0]])
	// Output:
	// to-center+stay risk 5.5359  ambiguity 0.0000  q 0.0000108
	// to-left+stay   risk 4.8427  ambiguity 0.0980  q 0.1470562
	// to-right+stay  risk 4.8427  ambiguity 0.0980  q 0.1470562
	// to-cue+stay    risk 4.8427  ambiguity 0.0000  q 0.7058768
	// choice: to-cue
}
