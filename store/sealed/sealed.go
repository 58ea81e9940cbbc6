// Package sealed encrypts run records at rest: checkpoints and trace
// records, in either store backend, with AES-256-GCM.
//
// A sealed body is
//
//	store.SealedPrefix | len(key id) (1 byte) | key id | nonce (12 bytes) | ciphertext and tag
//
// The nonce is random for every record. The associated data binds the run
// id, the record kind (with a trace record's own kind) and the record's
// position in its run, and the key id, so a body copied to another run,
// another record or another position does not open. The key id names the
// key (a digest of it, never the key), so a store can hold records sealed
// under several keys and a Keyring opens any of them it holds: rotate by
// sealing under a new primary key while keeping the old ones for reading.
//
// A record whose key the keyring lacks, or one stored in clear, is
// store.CodeSealed: refused, and the run left alone. One that fails
// authentication or is truncated is store.CodeCorrupt, and a runner
// quarantines the run.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"flrh.dev/flrh/store"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

const nonceSize = 12

// Keyring seals with its primary key and opens with any key it holds. It
// is immutable and safe for concurrent use.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

var _ store.Sealer = (*Keyring)(nil)

// KeyID names a key without revealing it: "k1-" and the first 16 hex
// digits of a domain-separated SHA-256 of the key.
func KeyID(key []byte) string {
	h := sha256.New()
	h.Write([]byte("flrh-sealed/1 key id\x00"))
	h.Write(key)
	return "k1-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// New returns a keyring that seals with primary and opens records sealed
// with primary or any of older. Every key is KeySize bytes.
func New(primary []byte, older ...[]byte) (*Keyring, error) {
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, key := range append([][]byte{primary}, older...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("sealed: key %d is %d bytes, want %d", i+1, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("sealed: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("sealed: key %d: %w", i+1, err)
		}
		id := KeyID(key)
		if i == 0 {
			k.primary = id
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// ParseKeys reads keys as text: base64 (standard or URL alphabet, padded
// or not) of KeySize bytes each, separated by newlines or commas; blank
// lines and lines starting with # are skipped. The first key is the
// primary. The error never quotes the text.
func ParseKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := decodeKey(line)
		if err != nil {
			return nil, fmt.Errorf("sealed: key %d: %w", i+1, err)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("sealed: no key given")
	}
	return keys, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("decodes to %d bytes, want %d", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// Parse is ParseKeys followed by New.
func Parse(text string) (*Keyring, error) {
	keys, err := ParseKeys(text)
	if err != nil {
		return nil, err
	}
	return New(keys[0], keys[1:]...)
}

// Primary is the id of the key new records are sealed with.
func (k *Keyring) Primary() string { return k.primary }

func aad(ref store.SealRef, keyID string) []byte {
	return []byte("flrh-sealed/1\x00" + ref.RunID + "\x00" + ref.Kind + "\x00" + strconv.FormatInt(ref.Seq, 10) + "\x00" + keyID)
}

// Seal implements store.Sealer.
func (k *Keyring) Seal(ref store.SealRef, plain []byte) ([]byte, error) {
	aead := k.aeads[k.primary]
	out := make([]byte, 0, len(store.SealedPrefix)+1+len(k.primary)+nonceSize+len(plain)+aead.Overhead())
	out = append(out, store.SealedPrefix...)
	out = append(out, byte(len(k.primary)))
	out = append(out, k.primary...)
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("sealed: nonce: %w", err)
	}
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, aad(ref, k.primary)), nil
}

// Open implements store.Sealer.
func (k *Keyring) Open(ref store.SealRef, stored []byte) ([]byte, error) {
	bad := func(keyID, format string, args ...any) error {
		return &store.SealError{Ref: ref, Code: store.CodeCorrupt, KeyID: keyID, Detail: fmt.Sprintf(format, args...)}
	}
	if !store.IsSealed(stored) {
		return nil, &store.SealError{Ref: ref, Code: store.CodeSealed,
			Detail: fmt.Sprintf("stored in clear, but this store encrypts every %s (written before encryption was turned on?)", kindName(ref.Kind))}
	}
	rest := stored[len(store.SealedPrefix):]
	if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return nil, bad("", "truncated header")
	}
	id := string(rest[1 : 1+int(rest[0])])
	rest = rest[1+int(rest[0]):]
	aead, ok := k.aeads[id]
	if !ok {
		return nil, &store.SealError{Ref: ref, Code: store.CodeSealed, KeyID: id, Detail: "sealed under a key this keyring does not hold"}
	}
	if len(rest) < nonceSize+aead.Overhead() {
		return nil, bad(id, "truncated")
	}
	plain, err := aead.Open(nil, rest[:nonceSize], rest[nonceSize:], aad(ref, id))
	if err != nil {
		return nil, bad(id, "fails authentication: tampered, or moved from another record")
	}
	return plain, nil
}

func kindName(kind string) string {
	if i := strings.IndexByte(kind, '/'); i >= 0 {
		return kind[:i]
	}
	return kind
}
