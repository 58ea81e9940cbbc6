package store

import "context"

// Resealer is a store that can seal its records again: every checkpoint
// and trace record of a run not under its sealer's primary key is opened
// and sealed under it, in one write transaction per run, at the position
// it was written for. What the records say does not change; a reader with
// the primary key alone can then read them all, and older keys can be
// dropped. With clear, records stored in clear (written before the store
// was encrypted) are sealed too.
//
// Every record is opened on the way, those already under the primary key
// included: one that does not open (a key the sealer lacks, a record that
// fails authentication) fails the run's pass with its *SealError's code
// and writes nothing of the run.
type Resealer interface {
	Reseal(ctx context.Context, runID string, opts ResealOptions) (Resealed, error)
}

// ResealOptions says what a pass does.
type ResealOptions struct {
	// Clear seals records stored in clear as well; without it they are
	// counted and left.
	Clear bool
	// DryRun opens and counts every record as a pass would, and writes
	// nothing: what a pass would do, and whether every record opens.
	DryRun bool
}

// Resealed counts a pass over one run's checkpoints and trace records.
type Resealed struct {
	Resealed int64 `json:"resealed"` // sealed again under the primary key, from an older key or from clear
	Current  int64 `json:"current"`  // already under the primary key, left as stored
	Clear    int64 `json:"clear"`    // in clear and left so (clear was not asked)
}

// Add adds o's counts to r's.
func (r *Resealed) Add(o Resealed) {
	r.Resealed += o.Resealed
	r.Current += o.Current
	r.Clear += o.Clear
}

// PrimaryKeyed is a Sealer that names the key it seals with, in the form
// a sealed body names its key (sealed.Keyring).
type PrimaryKeyed interface {
	Primary() string
}

// SealedKeyID returns the id of the key a sealed body names: the bytes
// after SealedPrefix, a length byte and the id. False when the body is
// not sealed or its header is cut short.
func SealedKeyID(stored []byte) (string, bool) {
	if !IsSealed(stored) {
		return "", false
	}
	rest := stored[len(SealedPrefix):]
	if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return "", false
	}
	return string(rest[1 : 1+int(rest[0])]), true
}

// ResealPass is one run's pass, as a backend's Reseal makes it: it
// decides each stored record (Checkpoint, Trace) and counts them (Counts).
type ResealPass struct {
	s       Sealer
	primary string
	op      string
	runID   string
	Opts    ResealOptions
	Counts  Resealed
}

// NewResealPass starts a pass over run runID with sealer s, or returns the
// error a store's Reseal gives when it has no key to seal under.
func NewResealPass(runID string, s Sealer, opts ResealOptions) (*ResealPass, error) {
	const op = "reseal"
	p, ok := s.(PrimaryKeyed)
	if s == nil || !ok || p.Primary() == "" {
		return nil, Errorf(CodeInvalidInput, op, runID, nil, "this store has no encryption key to seal under")
	}
	return &ResealPass{s: s, primary: p.Primary(), op: op, runID: runID, Opts: opts}, nil
}

// Checkpoint decides the run's checkpoint number n as stored: what to
// store for it, and whether that must be written (never in a dry run).
func (p *ResealPass) Checkpoint(n int64, stored []byte) ([]byte, bool, error) {
	return p.body(SealRef{RunID: p.runID, Kind: SealCheckpoint, Seq: n}, stored)
}

// Trace decides the run's trace record seq, of kind kind, as stored.
func (p *ResealPass) Trace(kind string, seq int64, stored []byte) ([]byte, bool, error) {
	return p.body(SealRef{RunID: p.runID, Kind: SealTrace + "/" + kind, Seq: seq}, stored)
}

func (p *ResealPass) body(ref SealRef, stored []byte) ([]byte, bool, error) {
	out, changed, err := ResealBody(p.s, p.primary, p.op, ref, stored, p.Opts.Clear, &p.Counts)
	return out, changed && !p.Opts.DryRun, err
}

// ResealBody decides one stored record of a pass: it opens it (every
// record, so that the pass also checks them) and returns what to store
// for it and whether that differs from what is stored, counting it in n.
// primary is the id of the key s seals with.
func ResealBody(s Sealer, primary, op string, ref SealRef, stored []byte, clear bool, n *Resealed) ([]byte, bool, error) {
	if !IsSealed(stored) {
		if !clear {
			n.Clear++
			return stored, false, nil
		}
		out, err := SealBody(s, op, ref, stored)
		if err != nil {
			return nil, false, err
		}
		n.Resealed++
		return out, true, nil
	}
	plain, err := OpenBody(s, op, ref, stored)
	if err != nil {
		return nil, false, err
	}
	if id, _ := SealedKeyID(stored); id == primary {
		n.Current++
		return stored, false, nil
	}
	out, err := SealBody(s, op, ref, plain)
	if err != nil {
		return nil, false, err
	}
	n.Resealed++
	return out, true, nil
}

// Compactor is implemented by stores that can rewrite their files so
// that they keep no byte of what was rewritten or removed: records
// resealed under a new key (or sealed from clear), pruned runs. Run it
// after a reseal when the old key may have leaked, or after pruning when
// what was pruned must not be read from the store's files again.
type Compactor interface {
	// Compact rewrites the store's files and reports their size before
	// and after (bytes; -1 where a store cannot tell). It may hold
	// writers back while it runs.
	Compact(ctx context.Context) (Compacted, error)
}

// LogEmptier is implemented by stores that zero what pruning and
// resealing remove as they remove it but keep earlier copies of it in a
// write-ahead log until the log is emptied (SQLite): EmptyLog copies the
// log into the database and truncates it, so that neither file holds a
// byte of what was removed, without rewriting the database as Compact
// does. It holds writers back only while the log is copied; a reader
// holding the log keeps it from being emptied: CodeUnavailable, to be
// run again.
type LogEmptier interface {
	EmptyLog(ctx context.Context) error
}

// Compacted is what Compact did: the store's size on disk before and
// after, in bytes (-1: unknown), and for a store of tables, which it
// rewrote.
type Compacted struct {
	Before int64    `json:"bytes_before"`
	After  int64    `json:"bytes_after"`
	Tables []string `json:"tables,omitempty"`
}
