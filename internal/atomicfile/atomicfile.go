// Package atomicfile replaces a small file whole: a reader, or a process
// that crashes half way, sees the old bytes or the new ones, never a mix.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Replace puts b in place of the file at path, or creates it: a temporary
// file beside it, written, given mode (or, when mode is 0, the mode of the
// file it replaces, 0644 for a new one) and synced, is renamed over it,
// and the directory is synced so that the rename is durable. Nothing is
// left beside it when it fails.
func Replace(path string, b []byte, mode os.FileMode) error {
	if mode == 0 {
		mode = 0o644
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
