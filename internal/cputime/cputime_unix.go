//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Used is the user and system CPU time the whole process (every thread,
// the garbage collector included) has used so far, or 0 if it cannot be
// read.
func Used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
