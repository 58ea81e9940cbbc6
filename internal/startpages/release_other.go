//go:build !linux

package startpages

// Release does nothing where the mappings cannot be read and checked.
func Release() (int, error) { return 0, unexpected("not supported on this system") }

// Find plans nothing where the mappings cannot be read and checked.
func Find() (*Pages, error) { return nil, unexpected("not supported on this system") }

// Release drops nothing: Find never returns a plan here.
func (p *Pages) Release() (int, error) { return 0, unexpected("not supported on this system") }

// WithLibraries plans nothing more where the mappings cannot be read.
func (p *Pages) WithLibraries() *Pages { return p }
