//go:build linux

package cputime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// OfProcesses is the user and system CPU time the processes with these
// ids have used so far, read from /proc in clock ticks (10 ms here): the
// CPU a database server's backends spent for a benchmark, beside the
// benchmark's own Used.
func OfProcesses(pids []int) (time.Duration, error) {
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("cputime: %w", err)
		}
		// The command name may hold spaces; fields count from after it.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return 0, fmt.Errorf("cputime: /proc/%d/stat has %d fields after the command", pid, len(f))
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("cputime: /proc/%d/stat: unreadable times %q %q", pid, f[11], f[12])
		}
		ticks += utime + stime
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
