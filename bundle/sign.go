package bundle

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"

	"flrh.dev/flrh/internal/atomicfile"
	"flrh.dev/flrh/workflow"
)

// Signed is what Sign did to a bundle's capabilities file.
type Signed struct {
	workflow.Signed
	// Path is the file written, Unchanged true when it held these bytes
	// already (signing is deterministic) and was left as it was.
	Path      string
	Unchanged bool
}

// Sign signs the capability chains of the bundle in dir with key, its
// operator key, and writes them into the capabilities file the manifest
// names (workflow.SignCapabilities says what may be written there). The
// chains are read from that file, or from the file from when it is not
// "". Nothing is written when anything is refused; the file is replaced
// whole (a new file synced, then renamed over it), so a crash leaves the
// old capabilities or the new ones, never a mix. The rest of the bundle
// need not compile: Sign signs, and Load says what else is wrong.
func Sign(dir, from string, key ed25519.PrivateKey) (*Signed, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	files, err := readFiles(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	var src []byte
	if from != "" {
		if src, err = os.ReadFile(from); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
	}
	s, err := workflow.SignCapabilities(files, from, src, key)
	if err != nil {
		return nil, err
	}
	out := &Signed{Signed: *s, Path: filepath.Join(dir, s.File)}
	if bytes.Equal(files[s.File], s.Bytes) {
		out.Unchanged = true
		return out, nil
	}
	if err := atomicfile.Replace(out.Path, s.Bytes, 0); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return out, nil
}
