package startpages

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Release plans the release for the running executable (Current) and
// drops those pages once; see Pages.Release.
func Release() (int, error) {
	p, err := Find()
	if err != nil {
		return 0, err
	}
	return p.Release()
}

// Release drops the planned pages and returns how many bytes it advised.
// It may be called any number of times: the plan names only pages of
// mappings without write permission that no loader wrote, and nothing
// writes them afterwards, so each call only drops the process's references
// to file pages the run has touched since the last one.
func (p *Pages) Release() (int, error) {
	n := 0
	for _, r := range p.ranges {
		// MADV_DONTNEED on a private file mapping no one wrote only drops
		// the process's reference; the next access maps the file's page
		// again. An error leaves the pages where they were.
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(r.Start), uintptr(r.End-r.Start), syscall.MADV_DONTNEED); e != 0 {
			return n, e
		}
		n += int(r.End - r.Start)
	}
	return n, nil
}

// Find plans the release for the running executable (Current) and keeps
// the plan, so the same pages can be dropped again later in the run
// without reading the executable and the mappings a second time. A nil
// Pages and an error wrapping ErrUnexpected mean nothing may be released.
func Find() (*Pages, error) {
	ranges, err := Current()
	if err != nil {
		return nil, err
	}
	return &Pages{ranges: ranges}, nil
}

// WithLibraries returns the plan extended with the pages of the shared
// objects the process maps (Libraries). It is separate from Find because
// reading those files costs heap (about 170 KB for the C library and the
// loader) that a caller may not want to spend.
func (p *Pages) WithLibraries() *Pages {
	return &Pages{ranges: append(slices.Clip(p.ranges), Libraries()...)}
}

// Libraries plans the release for every shared object the process maps
// from a file (the C library and the dynamic loader of a cgo build): each
// file that has an executable mapping, is still the file the mappings
// name (same path and inode) and that its own headers prove the pages
// of, as Plan does for the executable. An object whose plan refuses keeps
// its pages; it does not stop the others.
func Libraries() []Range {
	exe, _ := os.Readlink("/proc/self/exe")
	text, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	type object struct {
		path  string
		inode uint64
	}
	var objects []object
	seen := map[object]bool{}
	for _, line := range strings.Split(string(text), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 6 || !strings.Contains(fs[1], "x") || !strings.HasPrefix(fs[5], "/") {
			continue
		}
		ino, err := strconv.ParseUint(fs[4], 10, 64)
		o := object{strings.Join(fs[5:], " "), ino}
		if err != nil || ino == 0 || o.path == exe || seen[o] {
			continue
		}
		seen[o] = true
		objects = append(objects, o)
	}
	var out []Range
	for _, o := range objects {
		rs, err := planFile(o.path, o.inode, text)
		if err != nil {
			continue
		}
		out = append(out, rs...)
	}
	return out
}

// planFile plans the release for one mapped file, which must still have
// the inode the mappings name.
func planFile(path string, inode uint64, maps []byte) ([]Range, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unexpected("%v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, unexpected("%v", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Ino != inode {
		return nil, unexpected("%s is no longer the mapped file", path)
	}
	l, err := ReadLayout(f)
	if err != nil {
		return nil, err
	}
	ms, err := ParseMaps(bytes.NewReader(maps), path, inode)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, unexpected("%s is not mapped", path)
	}
	return Plan(l, ms, uint64(os.Getpagesize()))
}

// Current plans the release for the running executable: its ELF file as
// the kernel mapped it (/proc/self/exe, even if the path was replaced
// since) and the process's mappings of that same file.
func Current() ([]Range, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, unexpected("%v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, unexpected("%v", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, unexpected("no inode for the executable")
	}
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, unexpected("%v", err)
	}
	l, err := ReadLayout(f)
	if err != nil {
		return nil, err
	}
	mf, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, unexpected("%v", err)
	}
	defer mf.Close()
	maps, err := ParseMaps(mf, path, sys.Ino)
	if err != nil {
		return nil, err
	}
	if len(maps) == 0 {
		return nil, unexpected("the executable %s is not mapped under its name", path)
	}
	return Plan(l, maps, uint64(os.Getpagesize()))
}
