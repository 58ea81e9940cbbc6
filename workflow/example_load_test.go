package workflow

import (
	"os"
	"path/filepath"
	"testing"
)

// readBundle reads every regular file of a bundle directory.
func readBundle(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[e.Name()] = b
		}
	}
	return files
}

func compileExample(t testing.TB, name string) *Workflow {
	t.Helper()
	w, err := Compile(readBundle(t, filepath.Join("..", "examples", name)))
	if err != nil {
		t.Fatal(err)
	}
	return w
}
