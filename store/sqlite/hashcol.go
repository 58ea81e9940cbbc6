package sqlite

import (
	"encoding/hex"
	"fmt"
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
	if len(s) != len(hashPrefix)+64 || s[:len(hashPrefix)] != hashPrefix {
		return s
	}
	var sum [32]byte
	for i := 0; i < 32; i++ {
		hi, ok1 := lowerHexDigit(s[len(hashPrefix)+2*i])
		lo, ok2 := lowerHexDigit(s[len(hashPrefix)+2*i+1])
		if !ok1 || !ok2 {
			return s
		}
		sum[i] = hi<<4 | lo
	}
	return sum[:]
}

func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// hashCol is a Scan destination for a column packHash wrote: 32 bytes
// read back as their canonical text, text as it is. A BLOB of any other
// length, or a value of another type, was not written by this store and
// fails the scan (the read maps it to store.CodeCorrupt).
type hashCol struct{ s *string }

// errHashColumn marks a hash column holding what packHash never writes.
type errHashColumn struct{ v any }

func (e errHashColumn) Error() string {
	if b, ok := e.v.([]byte); ok {
		return fmt.Sprintf("a stored hash of %d bytes, not 32", len(b))
	}
	return fmt.Sprintf("a stored hash of type %T", e.v)
}

// Scan implements sql.Scanner.
func (x hashCol) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		if len(v) != 32 {
			return errHashColumn{v}
		}
		var buf [len(hashPrefix) + 64]byte
		copy(buf[:], hashPrefix)
		hex.Encode(buf[len(hashPrefix):], v)
		*x.s = string(buf[:])
	case string:
		*x.s = v
	default:
		return errHashColumn{v}
	}
	return nil
}
