// Package racebuild says whether the binary was built with the race
// detector. Tests that count allocations consult it: the detector drops a
// quarter of what is put into a sync.Pool at random, so counts that pooled
// buffers keep down do not hold under it, and a test binary started with
// -race builds the processes it starts with -race too.
package racebuild
