package startpages

import (
	"os"
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

// Find plans the release for the running executable and keeps the plan,
// so the same pages can be dropped again later in the run without reading
// the executable and the mappings a second time. A nil Pages and an error
// wrapping ErrUnexpected mean nothing may be released.
func Find() (*Pages, error) {
	ranges, err := Current()
	if err != nil {
		return nil, err
	}
	return &Pages{ranges: ranges}, nil
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
