//go:build !race

package tamper

const raceOn = false
