//go:build unix

package kernel

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far,
// all threads together, GC included: on a shared machine it moves less
// with other load than the wall clock does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
