package cjson

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// For every Plain string AppendChecked writes AppendString's bytes.
func TestCheckedIsAppendString(t *testing.T) {
	for _, s := range []string{"", "reversible", "sha256:" + fmt.Sprintf("%064x", 5), "evt:1", "v1.2+build/x"} {
		if got, want := string(AppendChecked(nil, s)), string(AppendString(nil, s)); got != want {
			t.Fatalf("AppendChecked(%q) = %s, AppendString %s", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		ss := rapid.SliceOf(rapid.String()).Draw(t, "ss")
		plain := ss[:0:0]
		for _, s := range ss {
			if Plain(s) {
				plain = append(plain, s)
			}
		}
		want := []byte{'['}
		for i, s := range plain {
			if i > 0 {
				want = append(want, ',')
			}
			want = AppendString(want, s)
		}
		want = append(want, ']')
		if got := AppendCheckedList(nil, plain); string(got) != string(want) {
			t.Fatalf("AppendCheckedList(%q) = %s, want %s", plain, got, want)
		}
		all := []byte{'['}
		for i, s := range ss {
			if i > 0 {
				all = append(all, ',')
			}
			all = AppendString(all, s)
		}
		all = append(all, ']')
		if got := AppendStringList(nil, ss); string(got) != string(all) {
			t.Fatalf("AppendStringList(%q) = %s, want %s", ss, got, all)
		}
	})
}

// The hook sees every string and MustBePlain refuses one that needs
// escaping.
func TestCheckedHookCatchesEscapes(t *testing.T) {
	defer func(f func(string)) { CheckedHook = f }(CheckedHook)
	var seen []string
	CheckedHook = func(s string) { seen = append(seen, s) }
	AppendCheckedList(nil, []string{"a", "b"})
	if len(seen) != 2 {
		t.Fatalf("hook saw %q, want both strings", seen)
	}
	for _, s := range []string{"é", "a\nb", "needs \"escaping\""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MustBePlain(%q) did not panic", s)
				}
			}()
			MustBePlain(s)
		}()
	}
	MustBePlain("sha256:00")
}
