package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Store descriptions that spell one store differently are the same store;
// any that name another are not.
func TestSameStore(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, filepath.Join(dir, "flrh.db"))
	if err != nil {
		t.Fatal(err)
	}
	file := storeDescription("sqlite:" + filepath.Join(dir, "flrh.db"))
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{file, storeDescription(filepath.Join(dir, "flrh.db")), true},
		{file, storeDescription(rel), true},
		{file, storeDescription("sqlite:" + filepath.Join(link, "flrh.db")), true},
		{file, storeDescription("sqlite:" + filepath.Join(dir, "other.db")), false},
		{file, storeDescription("sqlite:" + filepath.Join(t.TempDir(), "flrh.db")), false},
		{storeDescription("postgres://flrh:secret@DB.Internal/flrh?schema=runs&sslmode=disable"), storeDescription("postgresql://ops@db.internal:5432/flrh?schema=runs"), true},
		{storeDescription("postgres://flrh@db.internal/flrh"), storeDescription("postgres://db.internal:5432/flrh?connect_timeout=5"), true},
		{storeDescription("postgres://flrh@db.internal/flrh?schema=runs"), storeDescription("postgres://flrh@db.internal/flrh?schema=other"), false},
		{storeDescription("postgres://flrh@db.internal/flrh?schema=runs"), storeDescription("postgres://flrh@db.internal/flrh"), false},
		{storeDescription("postgres://flrh@db.internal/flrh"), storeDescription("postgres://flrh@db.internal/other"), false},
		{storeDescription("postgres://flrh@db.internal/flrh"), storeDescription("postgres://flrh@db.internal:5433/flrh"), false},
		{storeDescription("postgres://flrh@db.internal/flrh"), storeDescription("postgres://flrh@db2.internal/flrh"), false},
		{file, storeDescription("postgres://flrh@db.internal/flrh"), false},
	} {
		if got := sameStore(c.a, c.b); got != c.same {
			t.Errorf("sameStore(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := sameStore(c.b, c.a); got != c.same {
			t.Errorf("sameStore(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
		}
	}
}
