package storetest

import (
	"bytes"
	"os"
	"testing"
)

// FilesHold reports whether any of the files at paths holds marker (a
// file that does not exist holds nothing): how tests see what a store's
// files keep of a record it removed.
func FilesHold(t testing.TB, marker string, paths ...string) bool {
	t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			return true
		}
	}
	return false
}
