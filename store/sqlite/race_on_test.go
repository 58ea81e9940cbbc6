//go:build race

package sqlite

// raceBuild: this test binary runs under the race detector, where a
// sync.Pool drops what is put in it at random and allocations are not
// what they are without it.
const raceBuild = true
