package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// isDigestOf reports whether d is "sha256:" and the lowercase hex of sum,
// the form store.BodyDigest and store.ChainHash write, without building
// that string.
func isDigestOf(d string, sum *[sha256.Size]byte) bool {
	if len(d) != len("sha256:")+2*sha256.Size || d[:len("sha256:")] != "sha256:" {
		return false
	}
	var x [2 * sha256.Size]byte
	hex.Encode(x[:], sum[:])
	return string(x[:]) == d[len("sha256:"):]
}

// chainHashIs reports whether d is store.ChainHash(prev, seq, digest): the
// same preimage, hashed in one call from a buffer on the stack instead of
// through fmt.
func chainHashIs(d, prev string, seq int64, digest string) bool {
	var buf [256]byte
	b := append(buf[:0], "flrh-event-chain/1\x00"...)
	b = append(b, prev...)
	b = append(b, 0)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, 0)
	b = append(b, digest...)
	sum := sha256.Sum256(b)
	return isDigestOf(d, &sum)
}
