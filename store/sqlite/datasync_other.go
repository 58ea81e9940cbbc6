//go:build !linux

package sqlite

import "os"

// datasync flushes f to stable storage.
func datasync(f *os.File) error { return f.Sync() }
