//go:build !linux

package smallfs

import "testing"

// Mount skips the test: a small filesystem is mounted only on Linux.
func Mount(t testing.TB, size int64, uid, gid int) string {
	t.Helper()
	t.Skip("smallfs: a small filesystem is mounted only on Linux (tmpfs); a full disk is tested there")
	return ""
}

// Resize is never reached where Mount skips.
func Resize(t testing.TB, dir string, size int64, uid, gid int) {
	t.Helper()
	t.Skip("smallfs: a small filesystem is mounted only on Linux")
}
