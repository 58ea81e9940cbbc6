package datalogstart

import (
	"syscall"
	"time"
)

// sleep waits d in the kernel (nanosleep), to the resolution of its
// high-resolution timers, rather than on the runtime's timers.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
