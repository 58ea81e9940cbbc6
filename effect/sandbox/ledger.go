package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect/httpwire"
)

// LedgerKind is the kind member of a ledger document, the body of GET
// /_sandbox/mutations. (A state file is a journal; see DecodeJournal.)
const LedgerKind = "SandboxLedger"

// Mutation is one applied request, as the sandbox recorded it.
type Mutation struct {
	Sequence       int64  // 1, 2, 3, … in the order applied
	IdempotencyKey string // the key it was applied under
	ContentDigest  string // the digest of Body
	Body           []byte // the canonical request body
}

// encodeLedger renders mutations as a canonical ledger document.
func encodeLedger(ms []Mutation) ([]byte, error) {
	list := make([]any, 0, len(ms))
	for _, m := range ms {
		body, err := cjson.Decode(m.Body)
		if err != nil {
			return nil, fmt.Errorf("sandbox: mutation %d: %w", m.Sequence, err)
		}
		list = append(list, map[string]any{
			"sequence": m.Sequence, "idempotency_key": m.IdempotencyKey,
			"content_digest": m.ContentDigest, "body": body,
		})
	}
	return cjson.Encode(map[string]any{"kind": LedgerKind, "protocol": httpwire.Protocol, "mutations": list})
}

// DecodeLedger reads a ledger document and checks it whole: every body is
// canonical and has the recorded digest, sequences run 1..n without a gap,
// and no key appears twice.
func DecodeLedger(text []byte) ([]Mutation, error) {
	v, err := cjson.Decode(text)
	if err != nil {
		return nil, fmt.Errorf("sandbox: ledger: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok || len(root) != 3 || root["kind"] != LedgerKind || root["protocol"] != httpwire.Protocol {
		return nil, fmt.Errorf("sandbox: ledger: not a %s document of %s", LedgerKind, httpwire.Protocol)
	}
	list, ok := root["mutations"].([]any)
	if !ok {
		return nil, fmt.Errorf("sandbox: ledger: /mutations is not an array")
	}
	out := make([]Mutation, 0, len(list))
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		m, err := decodeRecord(e, int64(i)+1, seen)
		if err != nil {
			return nil, fmt.Errorf("sandbox: ledger: /mutations/%d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// decodeRecord checks one mutation record: it must have sequence want, a
// key not in seen, and a canonical body with the recorded digest.
func decodeRecord(e any, want int64, seen map[string]bool) (Mutation, error) {
	m, ok := e.(map[string]any)
	if !ok || len(m) != 4 {
		return Mutation{}, fmt.Errorf("not a mutation record")
	}
	seq, ok1 := m["sequence"].(int64)
	key, ok2 := m["idempotency_key"].(string)
	digest, ok3 := m["content_digest"].(string)
	body, ok4 := m["body"].(map[string]any)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return Mutation{}, fmt.Errorf("a member has the wrong type or is missing")
	}
	if seq != want {
		return Mutation{}, fmt.Errorf("sequence is %d, want %d", seq, want)
	}
	if !httpwire.ValidKey(key) || seen[key] {
		return Mutation{}, fmt.Errorf("idempotency_key %q is invalid or repeated", key)
	}
	canon, err := cjson.Encode(body)
	if err != nil {
		return Mutation{}, fmt.Errorf("body: %w", err)
	}
	if httpwire.ContentDigest(canon) != digest {
		return Mutation{}, fmt.Errorf("content_digest does not match the body")
	}
	seen[key] = true
	return Mutation{Sequence: seq, IdempotencyKey: key, ContentDigest: digest, Body: canon}, nil
}

func encodeRecord(m Mutation) ([]byte, error) {
	body, err := cjson.Decode(m.Body)
	if err != nil {
		return nil, err
	}
	return cjson.Encode(map[string]any{"sequence": m.Sequence, "idempotency_key": m.IdempotencyKey, "content_digest": m.ContentDigest, "body": body})
}

// JournalKind is the kind member of the first line of a state file.
const JournalKind = "SandboxJournal"

// journalHeader is the first line of every state file.
var journalHeader = string(mustHeader()) + "\n"

func mustHeader() []byte {
	b, err := cjson.Encode(map[string]any{"kind": JournalKind, "protocol": httpwire.Protocol})
	if err != nil {
		panic(err)
	}
	return b
}

// DecodeJournal reads a state file: a header line, then one canonical
// mutation record per line, each checked as DecodeLedger checks a ledger.
// A final line without its newline is a write that a crash interrupted; it
// was never acknowledged to anyone, so it is not part of the ledger, and
// valid reports the length of the intact prefix the file must be cut back
// to. Any other damage is an error: the sandbox must not start with a
// memory of mutations it cannot vouch for.
func DecodeJournal(text []byte) (ms []Mutation, valid int, err error) {
	if len(text) < len(journalHeader) || string(text[:len(journalHeader)]) != journalHeader {
		if len(text) < len(journalHeader) && journalHeader[:len(text)] == string(text) {
			return nil, 0, nil // a torn header: the file was being created
		}
		return nil, 0, fmt.Errorf("sandbox: journal: the first line is not %q", strings.TrimSpace(journalHeader))
	}
	seen := map[string]bool{}
	off := len(journalHeader)
	for off < len(text) {
		nl := bytes.IndexByte(text[off:], '\n')
		if nl < 0 {
			break // a torn final record
		}
		line := text[off : off+nl]
		v, err := cjson.Decode(line)
		if err != nil {
			return nil, 0, fmt.Errorf("sandbox: journal: line %d: %w", len(ms)+2, err)
		}
		m, err := decodeRecord(v, int64(len(ms))+1, seen)
		if err != nil {
			return nil, 0, fmt.Errorf("sandbox: journal: line %d: %w", len(ms)+2, err)
		}
		if enc, _ := encodeRecord(m); !bytes.Equal(enc, line) {
			return nil, 0, fmt.Errorf("sandbox: journal: line %d is not canonical", len(ms)+2)
		}
		ms = append(ms, m)
		off += nl + 1
	}
	return ms, off, nil
}

// journal is an append-only state file: one fsync per applied mutation.
type journal struct {
	f    *os.File
	size int64
}

// openJournal loads the state file at path, creating it when absent and
// cutting off a torn final record, and opens it for appending.
func openJournal(path string) (*journal, []Mutation, error) {
	text, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("sandbox: state: %w", err)
	}
	ms, valid, err := DecodeJournal(text)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (in %s)", err, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: state: %w", err)
	}
	j := &journal{f: f}
	if valid == 0 {
		// New (or torn while being created): write the header durably.
		if err := j.reset(); err != nil {
			f.Close()
			return nil, nil, err
		}
		syncDir(filepath.Dir(path))
		return j, nil, nil
	}
	if valid < len(text) {
		if err := f.Truncate(int64(valid)); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("sandbox: state: cutting a torn record: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("sandbox: state: %w", err)
		}
	}
	j.size = int64(valid)
	return j, ms, nil
}

func (j *journal) reset() error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if _, err := j.f.WriteAt([]byte(journalHeader), 0); err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	j.size = int64(len(journalHeader))
	return nil
}

// append writes one record and fsyncs it. On failure it cuts the file back
// to where it was, so that a half-written record never precedes the next.
func (j *journal) append(m Mutation) error {
	rec, err := encodeRecord(m)
	if err != nil {
		return err
	}
	rec = append(rec, '\n')
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		j.f.Truncate(j.size)
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		j.f.Truncate(j.size)
		return fmt.Errorf("sandbox: state: %w", err)
	}
	j.size += int64(len(rec))
	return nil
}

func (j *journal) close() error { return j.f.Close() }

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
}

func cloneMutations(ms []Mutation) []Mutation {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Body = bytes.Clone(out[i].Body)
	}
	return out
}
