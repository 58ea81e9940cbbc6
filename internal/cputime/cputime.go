// Package cputime reads the CPU time the process has used, for benchmarks
// that report CPU per operation beside wall time: on a shared machine CPU
// time moves far less with other load than the wall clock does.
package cputime
