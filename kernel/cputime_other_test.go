//go:build !unix

package kernel

import "time"

// cpuTime is unknown here; the benchmarks then report a CPU time of zero.
func cpuTime() time.Duration { return 0 }
