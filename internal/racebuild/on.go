//go:build race

package racebuild

// Enabled: this binary runs under the race detector.
const Enabled = true
