package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseStartPages drops this process's mappings of the executable's
// read-only segments (code, constants, function tables). Initialising
// every package of the product touches pages all over the binary, and the
// kernel maps neighbouring pages with each fault, so a command that then
// uses a small part of the program would carry about 13 MB of pages it
// never touches again. The pages stay in the page cache; those still in use
// are mapped again on their next access. Writable segments are left alone:
// advising them would lose their contents.
func releaseStartPages() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset device inode path
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 || fs[5] != exe || strings.ContainsRune(fs[1], 'w') {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a {
			continue
		}
		// MADV_DONTNEED on a private, unwritten file mapping only unmaps;
		// an error leaves the pages mapped, which is harmless.
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(a), uintptr(b-a), syscall.MADV_DONTNEED)
	}
}
