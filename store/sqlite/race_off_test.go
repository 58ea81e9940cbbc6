//go:build !race

package sqlite

// raceBuild: this test binary runs without the race detector.
const raceBuild = false
