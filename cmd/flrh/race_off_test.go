//go:build !race

package main

// raceBuild: this test binary runs without the race detector.
const raceBuild = false
