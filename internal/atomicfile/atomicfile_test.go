package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Replace creates a file with the mode asked (0644 by default), replaces
// one keeping its mode unless told another, and leaves nothing beside it,
// also when it fails.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	check := func(want string, mode os.FileMode) {
		t.Helper()
		b, err := os.ReadFile(p)
		fi, serr := os.Stat(p)
		if err != nil || serr != nil || string(b) != want || fi.Mode().Perm() != mode {
			t.Fatalf("%q %v, %v %v; want %q %v", b, fi.Mode(), err, serr, want, mode)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("%d files in the directory", len(entries))
		}
	}
	if err := Replace(p, []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	check("one", 0o644)
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	check("two", 0o600)
	if err := Replace(p, []byte("three"), 0o640); err != nil {
		t.Fatal(err)
	}
	check("three", 0o640)
	// A directory in the way: the rename fails, the temporary file goes.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(sub, []byte("four"), 0); err == nil {
		t.Fatal("replaced a directory that is not empty")
	}
	os.RemoveAll(sub)
	check("three", 0o640)
}
