package bundle

import (
	"bytes"
	"crypto"
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

// SignerError is a signer that failed to sign a capability: a key
// service that refused or did not answer. Nothing was written.
type SignerError struct {
	Capability string // the capability's id
	Err        error
}

func (e *SignerError) Error() string {
	return fmt.Sprintf("bundle: signing capability %s: %v", e.Capability, e.Err)
}

func (e *SignerError) Unwrap() error { return e.Err }

// Sign signs the capability chains of the bundle in dir with signer, which
// holds its operator key, and writes them into the capabilities file the
// manifest names (workflow.PlanSigning says what may be written there).
// The chains are read from that file, or from the file from when it is
// not "". signer is a key in memory (ed25519.PrivateKey) or one held
// elsewhere (a key service, a hardware module) that signs each
// capability's digest as Ed25519 does (crypto.Hash(0)); when its Public
// key is known it must be the manifest's operator_key before anything is
// signed, and every signature must verify under that key after.
//
// Nothing is written when anything is refused; the file is replaced whole
// (atomicfile), so a crash leaves the old capabilities or the new ones,
// never a mix. The rest of the bundle need not compile: Sign signs, and
// Load says what else is wrong.
func Sign(dir, from string, signer crypto.Signer) (*Signed, error) {
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
	s, err := signFiles(files, from, src, signer)
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

// signFiles signs the capability chains of the bundle in files with
// signer: workflow.PlanSigning, a signature a capability, Finish.
func signFiles(files map[string][]byte, from string, src []byte, signer crypto.Signer) (*workflow.Signed, error) {
	p, err := workflow.PlanSigning(files, from, src)
	if err != nil {
		return nil, err
	}
	if pub, ok := signer.Public().(ed25519.PublicKey); ok && pub != nil {
		if err := p.CheckKey(pub); err != nil {
			return nil, err
		}
	}
	sigs := make([][][]byte, len(p.Chains))
	for i, caps := range p.Chains {
		sigs[i] = make([][]byte, len(caps))
		for j, c := range caps {
			if sigs[i][j], err = signer.Sign(nil, p.Message(i, j), crypto.Hash(0)); err != nil {
				return nil, &SignerError{Capability: c.ID, Err: err}
			}
		}
	}
	return p.Finish(sigs)
}
