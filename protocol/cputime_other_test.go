//go:build !unix

package protocol

import "time"

// cpuTime is unknown here; the benchmarks then report no CPU rate.
func cpuTime() time.Duration { return 0 }
