package server

import (
	"strings"
	"testing"

	"flrh.dev/flrh/store"
)

// A run whose records are encrypted under a key the server lacks is a 503
// saying so, not an internal error.
func TestSealedRecordsAreUnavailable(t *testing.T) {
	e := classify(store.Errorf(store.CodeSealed, "checkpoint", "r", nil, "checkpoint is encrypted at rest"))
	if e.Status != 503 || e.Type != TypeUnavailable || !strings.Contains(e.Message, "encrypted") {
		t.Fatalf("classify = %+v", e)
	}
}
