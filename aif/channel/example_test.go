package channel_test

import (
	"fmt"

	"flrh.dev/flrh/aif/channel"
)

// The live loop and the forward model share one kernel: observe, update,
// predict; then score two cascades with the same kernel.
func Example() {
	cfg := &channel.Config{
		Channels: []channel.Spec{{Name: "tests-passing", Min: 0, Max: 100, PreferMean: 1, PreferVar: 0.01}},
		Alpha:    0.05, Beta: 0.2, VFloor: 1e-4, VMin: 1e-3, PiMin: 0.1, PiMax: 20,
	}
	kernel := channel.Effects{
		"fix":  {Shift: []float64{0.2}, AddVar: []float64{0.01}},
		"wait": {Shift: []float64{0}, AddVar: []float64{0.001}},
	}
	b, _ := cfg.Initial([]float64{0.5}, 0.25) // trust Π = 4, gain α·Π = 0.2
	o, _ := cfg.Normalize(map[string]float64{"tests-passing": 70})
	tick, _ := cfg.Update(b, o)
	fmt.Printf("free energy %.3f, belief %.3f -> %.3f\n", tick.FreeEnergy, b.Mu[0], tick.Posterior.Mu[0])
	fix, _, _ := cfg.ScoreCascade(kernel, tick.Posterior, []string{"fix", "wait"}, 0.9)
	wait, _, _ := cfg.ScoreCascade(kernel, tick.Posterior, []string{"wait", "wait"}, 0.9)
	fmt.Println("fix first scores lower:", fix.G() < wait.G())
	// Output:
	// free energy 0.040, belief 0.500 -> 0.540
	// fix first scores lower: true
}
