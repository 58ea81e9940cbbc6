package startpages

import (
	"os"
	"syscall"
)

// Release drops the pages Plan names for the running executable and
// returns how many bytes it advised. It does nothing, and says why, when
// anything about the executable or its mappings is unexpected.
func Release() (int, error) {
	ranges, err := Current()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range ranges {
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
