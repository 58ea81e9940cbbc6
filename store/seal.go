package store

import (
	"bytes"
	"errors"
	"strconv"
)

// CodeSealed is a record this store cannot read as it is configured: it is
// encrypted and no key, or not the key that sealed it, was given; or it is
// in clear while the store encrypts every record (written before
// encryption was turned on, or slipped in). It is refused, never used, but
// it is not proof of tampering, so a runner leaves the run alone rather
// than quarantining it. An encrypted record that fails authentication
// (tampered, swapped, truncated) is CodeCorrupt instead.
const CodeSealed Code = "SEALED"

// Record kinds a Sealer is asked about.
const (
	SealCheckpoint = "checkpoint"
	SealTrace      = "trace"
	// SealArchive is a pruned run's archive file (flrh store prune), sealed
	// whole when the store it came from is encrypted. Its reference names
	// no run: the document names its run, and the store's pruning records
	// the digest of the document in clear.
	SealArchive = "archive"
)

// SealRef names the record a body belongs to. A Sealer binds the body to
// it (as AEAD associated data), so that a body moved to another run,
// another kind of record or another position fails to open.
type SealRef struct {
	RunID string
	// Kind is SealCheckpoint, or SealTrace followed by "/" and the trace
	// record's kind.
	Kind string
	// Seq is the record's position in its run: a checkpoint's number (1,
	// 2, …; the store keeps every checkpoint) or a trace record's
	// sequence number.
	Seq int64
}

// String renders the reference for messages.
func (r SealRef) String() string {
	if r.Kind == SealArchive && r.RunID == "" {
		return "archive"
	}
	return r.RunID + " " + r.Kind + " #" + strconv.FormatInt(r.Seq, 10)
}

// Sealer encrypts the bodies of checkpoints and trace records at rest.
// Backends call Seal inside the commit that writes a record, when its
// position is known, and Open on every read. Open must refuse a body it
// did not seal for exactly that reference; its errors are *SealError.
type Sealer interface {
	Seal(ref SealRef, plain []byte) ([]byte, error)
	Open(ref SealRef, stored []byte) ([]byte, error)
}

// SealedPrefix starts every sealed body. Canonical JSON never starts with
// a NUL byte, so a stored body is sealed exactly when it has this prefix.
const SealedPrefix = "\x00flrh-sealed/1\x00"

// IsSealed reports whether a stored body is sealed.
func IsSealed(body []byte) bool { return bytes.HasPrefix(body, []byte(SealedPrefix)) }

// SealError says why a stored body could not be opened.
type SealError struct {
	Ref    SealRef
	Code   Code   // CodeSealed (no usable key, or in clear) or CodeCorrupt (fails authentication)
	KeyID  string // the key the record names, when it names one
	Detail string
}

func (e *SealError) Error() string {
	s := "sealed record " + e.Ref.String() + ": " + e.Detail
	if e.KeyID != "" {
		s += " (key " + e.KeyID + ")"
	}
	return s
}

// SealBody seals a body for ref when s is non-nil; a nil Sealer stores
// bodies as they are.
func SealBody(s Sealer, op string, ref SealRef, body []byte) ([]byte, error) {
	if s == nil {
		return body, nil
	}
	out, err := s.Seal(ref, body)
	if err != nil {
		return nil, Errorf(CodeInvalidInput, op, ref.RunID, err, "sealing %s", ref.Kind)
	}
	return out, nil
}

// OpenBody returns the plain body of a stored record. With no Sealer a
// sealed body is CodeSealed; with one, whatever Open refuses (a body in
// clear included) is a typed *Error with the code of the Sealer's
// *SealError (CodeCorrupt for anything else).
func OpenBody(s Sealer, op string, ref SealRef, stored []byte) ([]byte, error) {
	if s == nil {
		if IsSealed(stored) {
			return nil, Errorf(CodeSealed, op, ref.RunID, &SealError{Ref: ref, Code: CodeSealed, Detail: "encrypted, and no encryption key was given"},
				"%s is encrypted at rest", ref.Kind)
		}
		return stored, nil
	}
	plain, err := s.Open(ref, stored)
	if err != nil {
		code := CodeCorrupt
		var se *SealError
		if errors.As(err, &se) {
			code = se.Code
		}
		return nil, Errorf(code, op, ref.RunID, err, "opening %s #%d", ref.Kind, ref.Seq)
	}
	return plain, nil
}
