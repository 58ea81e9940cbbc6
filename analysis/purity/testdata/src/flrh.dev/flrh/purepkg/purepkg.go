package purepkg

import (
	"flrh.dev/flrh/internal/clockish" // want `pure package imports flrh.dev/flrh/internal/clockish, which is not a pure package`
	"flrh.dev/flrh/internal/unchanged"
)

// An internal package is held to purity like any other of the module's,
// unless it is vouched for.
func Internal(b []byte) (string, int64) { return unchanged.String(b), clockish.Now() }
