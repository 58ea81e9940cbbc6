package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect/httpwire"
)

// LedgerKind is the kind member of a ledger document, the body of GET
// /_sandbox/mutations and the content of a --state file.
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
// and no key appears twice. A ledger that fails any check is refused: the
// sandbox must not start with a memory of mutations it cannot vouch for.
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
		ptr := fmt.Sprintf("/mutations/%d", i)
		m, ok := e.(map[string]any)
		if !ok || len(m) != 4 {
			return nil, fmt.Errorf("sandbox: ledger: %s is not a mutation record", ptr)
		}
		seq, ok1 := m["sequence"].(int64)
		key, ok2 := m["idempotency_key"].(string)
		digest, ok3 := m["content_digest"].(string)
		body, ok4 := m["body"].(map[string]any)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("sandbox: ledger: %s has a member of the wrong type or is missing one", ptr)
		}
		if seq != int64(i)+1 {
			return nil, fmt.Errorf("sandbox: ledger: %s/sequence is %d, want %d", ptr, seq, i+1)
		}
		if !httpwire.ValidKey(key) || seen[key] {
			return nil, fmt.Errorf("sandbox: ledger: %s/idempotency_key %q is invalid or repeated", ptr, key)
		}
		seen[key] = true
		canon, err := cjson.Encode(body)
		if err != nil {
			return nil, fmt.Errorf("sandbox: ledger: %s/body: %w", ptr, err)
		}
		if httpwire.ContentDigest(canon) != digest {
			return nil, fmt.Errorf("sandbox: ledger: %s/content_digest does not match its body", ptr)
		}
		out = append(out, Mutation{Sequence: seq, IdempotencyKey: key, ContentDigest: digest, Body: canon})
	}
	return out, nil
}

// loadState reads a state file; a missing file is an empty ledger.
func loadState(path string) ([]Mutation, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: state: %w", err)
	}
	ms, err := DecodeLedger(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return ms, nil
}

// saveState replaces the state file atomically and durably: write a
// temporary file beside it, fsync it, rename it over the old one, and fsync
// the directory, so a crash leaves either the old ledger or the new one.
func saveState(path string, ms []Mutation) error {
	b, err := encodeLedger(ms)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sandbox: state: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

func cloneMutations(ms []Mutation) []Mutation {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Body = bytes.Clone(out[i].Body)
	}
	return out
}
