package bundle

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"flrh.dev/flrh/workflow"
)

func copyExample(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "examples", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// appendTo adds text at the end of a file of the bundle in dir.
func appendTo(t *testing.T, dir, file, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in a file of the bundle in dir, failing when
// old is not there.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s no longer holds %q; update this test", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Run("no directory", func(t *testing.T) {
		if _, _, err := Load(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("no manifest", func(t *testing.T) {
		dir := copyExample(t, "refund-agent")
		os.Remove(filepath.Join(dir, "workflow.json"))
		_, _, err := Load(dir)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "workflow.json") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("bad bundle is a typed error naming the file", func(t *testing.T) {
		dir := copyExample(t, "refund-agent")
		os.WriteFile(filepath.Join(dir, "gates.dl"), []byte("decision(\n"), 0o644)
		w, a, err := Load(dir)
		var be *workflow.Error
		if w != nil || a != nil || !errors.As(err, &be) || be.File != "gates.dl" || be.Code != workflow.CodeBadGates {
			t.Fatalf("%v %v %v", w, a, err)
		}
	})
	t.Run("oversized file", func(t *testing.T) {
		dir := copyExample(t, "refund-agent")
		f, _ := os.Create(filepath.Join(dir, "big.bin"))
		f.Truncate(MaxFileSize + 1)
		f.Close()
		if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "big.bin") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("adapters need their endpoint", func(t *testing.T) {
		_, a, err := Load(filepath.Join("..", "examples", "ops-agent"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Registry(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "FLRH_OPS_URL") {
			t.Fatalf("%v", err)
		}
		reg, err := a.Registry(func(string) string { return "http://127.0.0.1:1/v1/effects" })
		if err != nil {
			t.Fatal(err)
		}
		if len(reg.Entries()) != 2 || len(a.Specs()) != 2 {
			t.Fatalf("entries %v", reg.Entries())
		}
	})
}
