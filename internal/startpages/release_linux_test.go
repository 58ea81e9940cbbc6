package startpages

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// The running test binary is a real executable: the plan for it is
// accepted, names only pages of its non-writable mappings, and after the
// release the program keeps running on pages it maps again.
func TestReleaseOnTheRunningExecutable(t *testing.T) {
	ranges, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) == 0 {
		t.Fatal("nothing to release in the test binary")
	}
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	ro := readOnlyMappings(t, func(p string) bool { return p == path }, false)
	requireInside(t, ranges, ro, "the executable")
	n, err := Release()
	if err != nil || n == 0 {
		t.Fatalf("released %d bytes: %v", n, err)
	}
	// Code and tables run again from the file: formatting and sorting
	// touch plenty of both.
	words := strings.Fields("the pages come back from the file as they are used")
	sort.Strings(words)
	if got := strings.Join(words, ","); got != "are,as,back,come,file,from,pages,the,the,they,used" {
		t.Fatalf("after release: %s", got)
	}
}

// readOnlyMappings returns, by start address, the non-writable mappings
// (private ones only, if private) of the files in /proc/self/maps whose
// path keep accepts: what a release plan may name.
func readOnlyMappings(t *testing.T, keep func(path string) bool, private bool) []Mapping {
	t.Helper()
	text, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	var ro []Mapping
	for _, line := range strings.Split(string(text), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 {
			continue
		}
		path := strings.Join(fs[5:], " ")
		if !keep(path) {
			continue
		}
		ms, err := ParseMaps(strings.NewReader(line), path, inodeOf(line))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if !strings.Contains(m.Perms, "w") && (!private || strings.HasSuffix(m.Perms, "p")) {
				ro = append(ro, m)
			}
		}
	}
	sort.Slice(ro, func(i, j int) bool { return ro[i].Start < ro[j].Start })
	return ro
}

// requireInside fails unless every range lies inside one mapping of ro
// (sorted by start), naming what the mappings are of.
func requireInside(t *testing.T, ranges []Range, ro []Mapping, what string) {
	t.Helper()
	for _, r := range ranges {
		i := sort.Search(len(ro), func(i int) bool { return ro[i].End > r.Start })
		if i == len(ro) || ro[i].Start > r.Start || ro[i].End < r.End {
			t.Fatalf("range %x is not inside one read-only mapping of %s %x", r, what, ro)
		}
	}
}

func inodeOf(line string) uint64 {
	fs := strings.Fields(line)
	var n uint64
	for _, c := range fs[4] {
		n = n*10 + uint64(c-'0')
	}
	return n
}

// A plan found once releases again: each call advises the same ranges and
// the program keeps running on the pages it maps back in between.
func TestPagesReleaseRepeatedly(t *testing.T) {
	p, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.Release()
	if err != nil || first == 0 {
		t.Fatalf("first release: %d bytes, %v", first, err)
	}
	for i := range 3 {
		words := strings.Fields("each release drops what ran since the last one")
		sort.Strings(words)
		if got := strings.Join(words, " "); got != "drops each last one ran release since the what" {
			t.Fatalf("after release %d: %s", i, got)
		}
		n, err := p.Release()
		if err != nil || n != first {
			t.Fatalf("release %d: %d bytes, %v; want %d", i+2, n, err, first)
		}
	}
}
