package cjson

import (
	"testing"

	"pgregory.net/rapid"
)

// WrittenString is the string of Written's bytes, for writes short and
// longer than a recycled buffer, one after another.
func TestWrittenStringIsWritten(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOf(rapid.SliceOfN(rapid.Byte(), 0, 3000)).Draw(t, "parts")
		for _, p := range parts {
			write := func(b []byte) []byte { return append(b, p...) }
			if got, want := WrittenString(write), string(Written(write)); got != want {
				t.Fatalf("WrittenString = %q, want %q", got, want)
			}
		}
	})
}
