//go:build race

package tamper

const raceOn = true
