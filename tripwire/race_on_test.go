//go:build race

package tripwire

// raceOn: the race detector's sync.Pool drops what is put back at random,
// so allocation counts of pooled values do not hold.
const raceOn = true
