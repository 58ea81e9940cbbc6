//go:build race

package main

// raceBuild: this test binary runs under the race detector, and so do the
// flrh processes the tests start (see buildFlrh and TestMain).
const raceBuild = true
