//go:build !race

package tripwire

const raceOn = false
