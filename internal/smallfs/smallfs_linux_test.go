//go:build linux

package smallfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A write past the size fails with the kernel's ENOSPC; after Resize the
// same write goes through.
func TestFillsAndResizes(t *testing.T) {
	dir := Mount(t, 64<<10, os.Getuid(), os.Getgid())
	path := filepath.Join(dir, "f")
	data := make([]byte, 128<<10)
	err := os.WriteFile(path, data, 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 128 KiB to a 64 KiB filesystem: %v, want ENOSPC", err)
	}
	Resize(t, dir, 1<<20, os.Getuid(), os.Getgid())
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("after growing to 1 MiB: %v", err)
	}
}
