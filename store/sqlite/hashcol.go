package sqlite

import (
	"fmt"
	"strings"

	"flrh.dev/flrh/cjson"
)

// hashPrefix is how every digest and chain hash flrh writes begins; the
// 64 lowercase hex digits after it are the 32 bytes of the SHA-256 sum.
const hashPrefix = "sha256:"

// packHash is the value an event's digest, previous hash or chain hash is
// stored as: the 32 bytes of the sum, where the text is the canonical
// "sha256:" and 64 lowercase hex digits, less than half its size (an event
// carries three). Any other text is stored as it is, in a column typed
// ANY, so that every string reads back exactly as it was written.
func packHash(s string) any {
	var sum [32]byte
	if !unhexSum(&sum, s) {
		return s
	}
	return sum[:]
}

// unhexSum reads s, if it is "sha256:" and 64 lowercase hex digits, into
// sum, and reports whether it was (cjson.UnhexSum reads the digits).
func unhexSum(sum *[32]byte, s string) bool {
	if len(s) != len(hashPrefix)+64 || s[:len(hashPrefix)] != hashPrefix {
		return false
	}
	var d [64]byte
	copy(d[:], s[len(hashPrefix):])
	return cjson.UnhexSum(sum, &d)
}

// errHashColumn marks a hash column holding what packHash never writes.
type errHashColumn struct{ v any }

func (e errHashColumn) Error() string {
	if b, ok := e.v.([]byte); ok {
		return fmt.Sprintf("a stored hash of %d bytes, not 32", len(b))
	}
	return fmt.Sprintf("a stored hash of type %T", e.v)
}

// hashRaw is a Scan destination that keeps a hash column's value for
// unpackHashes.
type hashRaw struct{ v *any }

// Scan implements sql.Scanner.
func (x hashRaw) Scan(src any) error {
	*x.v = src
	return nil
}

// unpackHashes reads an event's three hash columns as packHash wrote
// them: 32 bytes as their canonical text, text as it is. A BLOB of any
// other length, or a value of another type, was not written by this store
// (the read maps the error to store.CodeCorrupt). Every hash held as bytes
// is built into one string: three hashes cost one allocation, not three.
func unpackHashes(dst [3]*string, vals *[3]any) error {
	n := 0
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			if len(v) != 32 {
				return errHashColumn{v}
			}
			n += len(hashPrefix) + 64
		case string:
		default:
			return errHashColumn{v}
		}
	}
	var b strings.Builder
	b.Grow(n)
	var digits [64]byte
	for _, v := range vals {
		if sum, ok := v.([]byte); ok {
			b.WriteString(hashPrefix)
			cjson.HexSum(&digits, (*[32]byte)(sum))
			b.Write(digits[:])
		}
	}
	all, at := b.String(), 0
	for i, v := range vals {
		if s, ok := v.(string); ok {
			*dst[i] = s
			continue
		}
		*dst[i] = all[at : at+len(hashPrefix)+64]
		at += len(hashPrefix) + 64
	}
	return nil
}
