//go:build !linux

package datalogstart

import "time"

// sleep waits d. Only Linux releases start-up pages, so only there does
// the clock run at all.
func sleep(d time.Duration) { time.Sleep(d) }
