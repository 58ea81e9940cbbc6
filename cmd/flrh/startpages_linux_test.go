package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeRSS sums the resident kilobytes of the executable's read-only
// mappings, from /proc/self/smaps.
func exeRSS(t *testing.T) int {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, kb := false, 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) == 6 && fs[5] == exe && !strings.ContainsRune(fs[1], 'w')
			continue
		}
		if in && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.Atoi(fs[1])
			kb += n
		}
	}
	return kb
}

// Releasing the start pages unmaps most of what the executable's start
// left resident, and the program goes on running on the pages it maps
// again.
func TestReleaseStartPagesShrinksTheExecutablesResidentPages(t *testing.T) {
	before := exeRSS(t)
	if before == 0 {
		t.Skip("the executable's mappings are not named in smaps")
	}
	releaseStartPages()
	after := exeRSS(t)
	if after*2 > before {
		t.Fatalf("read-only executable pages resident: %d KB before, %d KB after releasing", before, after)
	}
	prog, facts, out := datalogFixture(t, pathsProgram, "a\tb\nb\tc\n")
	if _, _, err := runDatalog(t, "datalog", prog, "-F", facts, "-D", out, "--stats=false", "--explain=false", "--max-tuples=1000", "--max-firings=0"); err != nil {
		t.Fatal(err)
	}
	t.Logf("read-only executable pages resident: %d KB before, %d KB after releasing", before, after)
}
