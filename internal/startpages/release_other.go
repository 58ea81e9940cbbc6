//go:build !linux

package startpages

// Release does nothing where the mappings cannot be read and checked.
func Release() (int, error) { return 0, unexpected("not supported on this system") }
