//go:build unix

package protocol

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far,
// all threads together: the benchmarks report events per CPU-second beside
// events per wall-second, because the machine they run on is shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
