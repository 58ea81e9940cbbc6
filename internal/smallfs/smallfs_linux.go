//go:build linux

package smallfs

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory under the
// system's temporary directory, its root owned by uid:gid with mode 0700, and
// returns the directory. It is unmounted when the test ends. The test is
// skipped when the process may not mount.
func Mount(t testing.TB, size int64, uid, gid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("smallfs: mounting a small filesystem needs root; run as root to test a full disk")
	}
	// Not under t.TempDir, whose directories only this account may enter:
	// a server running under its own account (PostgreSQL's) must reach it.
	dir, err := os.MkdirTemp("", "flrh-smallfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, options(size, uid, gid)); err != nil {
		t.Skipf("smallfs: cannot mount a tmpfs (%v); a container without CAP_SYS_ADMIN cannot test a full disk", err)
	}
	t.Cleanup(func() {
		// Detach: a server may still hold a descriptor for a moment after
		// the test has dropped what it wrote here.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("smallfs: unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Resize sets the size of the tmpfs mounted on dir.
func Resize(t testing.TB, dir string, size int64, uid, gid int) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, options(size, uid, gid)); err != nil {
		t.Fatalf("smallfs: resize %s to %d bytes: %v", dir, size, err)
	}
}

func options(size int64, uid, gid int) string {
	return fmt.Sprintf("size=%d,uid=%d,gid=%d,mode=0700", size, uid, gid)
}
