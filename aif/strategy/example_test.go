package strategy_test

import (
	"fmt"
	"strings"

	"flrh.dev/flrh/aif/channel"
	"flrh.dev/flrh/aif/evidence"
	"flrh.dev/flrh/aif/strategy"
)

// Two timescales: the strategic level fixes the tactical target (here, which
// channel the fast loop prefers to raise); the fast loop scores cascades
// against that target; only a witnessed outcome moves the slow posterior.
// Each level keeps its own quantities: Beta counts above, beliefs and
// expected free energies below.
func Example_twoTimescales() {
	slow, _ := strategy.New("raise-coverage", "cut-latency")
	target := slow.Select()
	fmt.Println("slow:", target.Option, target.Mode)

	// The fast level's preferences are parameterized by the slow target.
	prefer := map[string][2]float64{"raise-coverage": {1, 0.3}, "cut-latency": {0.3, 1}}[target.Option]
	cfg := &channel.Config{
		Channels: []channel.Spec{
			{Name: "coverage", Min: 0, Max: 1, PreferMean: prefer[0], PreferVar: 0.02},
			{Name: "speed", Min: 0, Max: 1, PreferMean: prefer[1], PreferVar: 0.02},
		},
		Alpha: 0.05, Beta: 0.2, VFloor: 1e-4, VMin: 1e-3, PiMin: 0.1, PiMax: 20,
	}
	kernel := channel.Effects{
		"write-tests": {Shift: []float64{0.2, -0.05}, AddVar: []float64{0.01, 0.01}},
		"profile":     {Shift: []float64{0, 0.2}, AddVar: []float64{0.01, 0.01}},
	}
	b, _ := cfg.Initial([]float64{0.4, 0.4}, 0.05)
	best, bestG := "", 0.0
	for _, cascade := range [][]string{{"write-tests", "write-tests"}, {"profile", "profile"}} {
		core, _, _ := cfg.ScoreCascade(kernel, b, cascade, 0.9)
		if best == "" || core.G() < bestG {
			best, bestG = strings.Join(cascade, " > "), core.G()
		}
	}
	fmt.Println("fast:", best)

	// An unwitnessed claim of success is refused; a verified receipt counts.
	if _, err := slow.Update(strategy.Outcome{Option: target.Option, Success: true, Actor: "fast-loop"}); err != nil {
		fmt.Println("refused:", strings.TrimPrefix(err.Error(), "strategy: "))
	}
	receipt := evidence.Witness{Kind: evidence.WitnessKindReceipt,
		ReceiptDigest: "sha256:" + strings.Repeat("ab", 32), Producer: "ci", VerifiedBy: "verifier", Verified: true,
		Tags: &evidence.Tags{Independent: true, Measured: true, Settled: true}}
	slow, _ = slow.Update(strategy.Outcome{Option: target.Option, Success: true, Actor: "fast-loop", Witness: receipt})
	next := slow.Select()
	fmt.Printf("slow: %s %s (Beta(%v,%v))\n", next.Option, next.Mode, slow.Options[0].Alpha, slow.Options[0].Beta)
	// Output:
	// slow: raise-coverage exploration
	// fast: write-tests > write-tests
	// refused: outcome not externally witnessed: NOT_AN_ACTION_RECEIPT
	// slow: raise-coverage consolidation (Beta(2,1))
}
