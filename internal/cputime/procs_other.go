//go:build !linux

package cputime

import (
	"errors"
	"time"
)

// OfProcesses needs /proc; elsewhere it says so.
func OfProcesses(pids []int) (time.Duration, error) {
	return 0, errors.New("cputime: other processes' CPU time is read from /proc, which this system lacks")
}
