package server

import (
	"errors"
	"fmt"
	"io/fs"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/runner"
)

// Bundles are the workflow bundles found in a directory, with the effect
// adapters they name.
type Bundles struct {
	Workflows []runner.Workflow
	Adapters  *effect.Registry
	// Unwired lists "workflow: reason" for bundles whose adapters could not
	// be built (an endpoint variable unset): their runs can be started and
	// read, and any effect they attempt fails for want of an adapter.
	Unwired []string
	// Secrets are the values of the credentials the adapters send (see
	// package redact), for the shell to scrub from its logs.
	Secrets []string
}

// LoadBundles loads every bundle in dir: dir itself when it holds a
// manifest (bundle.IsDir), otherwise each subdirectory that does, in name order.
// env answers the adapters' variables (bundle.OSEnv in production, which
// also reads NAME_FILE). A bundle that does not compile is an error naming
// it; one that cannot be wired is listed in Unwired.
func LoadBundles(dir string, env bundle.Env) (*Bundles, error) {
	dirs, err := bundle.Dirs(dir)
	if err != nil {
		return nil, err
	}
	out := &Bundles{Adapters: &effect.Registry{}}
	for _, d := range dirs {
		wf, ads, err := bundle.Load(d)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", d, err)
		}
		out.Workflows = append(out.Workflows, wf)
		reg, secrets, err := ads.Wire(env)
		out.Secrets = append(out.Secrets, secrets...)
		if err != nil {
			out.Unwired = append(out.Unwired, fmt.Sprintf("%s@%s: %v", wf.ID(), wf.Version(), err))
			continue
		}
		if err := MergeAdapters(out.Adapters, reg); err != nil {
			return nil, fmt.Errorf("bundle %s: %w", d, err)
		}
	}
	return out, nil
}

// MergeAdapters registers every adapter of src in dst; two sources naming
// the same (effect type, version) is an error rather than a silent choice.
func MergeAdapters(dst, src *effect.Registry) error {
	for _, e := range src.Entries() {
		a, _ := src.Adapter(e[0], e[1])
		if err := dst.Register(e[0], e[1], a); err != nil {
			return err
		}
	}
	return nil
}

// IsNotExist reports whether a LoadBundles error means the directory is
// missing (which a default directory may be).
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
