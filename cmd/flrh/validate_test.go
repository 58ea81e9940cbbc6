package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kind spelled in lower case is refused as an unknown kind, with the
// protocol's spelling when it matches one, rather than opened as a file.
func TestValidateUnknownKind(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(file, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]string{
		"acceptedevent": "kinds are spelled as in the protocol: AcceptedEvent",
		"event":         `unknown kind "event" (kinds: AcceptedEvent`,
		"Nosuch":        `unknown kind "Nosuch"`,
	} {
		_, err := runStoreCmd(t, "validate", "--json=false", kind, file)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("validate %s FILE: exit %d: %v", kind, exitCode(err), err)
		}
	}
}
