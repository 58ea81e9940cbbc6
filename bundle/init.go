package bundle

import (
	"crypto"
	"crypto/ed25519"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/workflow"
)

// Init writes a new bundle in dir, which must not exist, from the example
// the binary embeds under name (examples.Names): its files as they are,
// but for the manifest's operator_key, set to operatorKey
// (workflow.SetOperatorKey, the manifest's layout kept), and its
// capabilities, signed again by signer with that key. A user with the
// binary alone starts a bundle of their own this way, trusting no key but
// theirs. The new bundle must compile; nothing is left of dir when
// anything fails. It returns the names written, in order.
func Init(name, dir string, operatorKey ed25519.PublicKey, signer crypto.Signer) ([]string, error) {
	if !slices.Contains(examples.Names(), name) {
		return nil, fmt.Errorf("%w %q (have %s)", ErrNoExample, name, strings.Join(examples.Names(), ", "))
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("bundle: %s exists: init writes a new directory", dir)
	}
	fsys, err := examples.Bundle(name)
	if err != nil {
		return nil, fmt.Errorf("bundle: example %s: %w", name, err)
	}
	files, err := readFiles(fsys)
	if err != nil {
		return nil, err
	}
	manifest, err := workflow.Manifest(files)
	if err != nil {
		return nil, err
	}
	if files[manifest], err = workflow.SetOperatorKey(manifest, files[manifest], operatorKey); err != nil {
		return nil, err
	}
	s, err := signFiles(files, "", nil, signer)
	if err != nil {
		return nil, err
	}
	files[s.File] = s.Bytes
	if _, err := workflow.Compile(files); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bundle: %w", err)
		}
	}
	return names, nil
}
