package postgres

import (
	"encoding/hex"

	"flrh.dev/flrh/cjson"
)

// An event's hashes are stored as their 32-byte sums when they are
// canonical ("sha256:" and 64 lowercase hex digits), else as the text they
// are (see the schema's "event hashes as sums"): each hash is a pair of
// columns of which exactly one is set.

const hashPrefix = "sha256:"

// hashSum returns the 32 bytes a canonical hash stands for, or nil when h
// is not canonical (it is then stored as its text).
func hashSum(h string) []byte {
	if sum := appendSum(nil, h); len(sum) > 0 {
		return sum
	}
	return nil
}

// hashColumns are one hash column pair's values for a multi-row insert:
// per row, the sum or NULL, and NULL or the text. Its sums share one
// array.
type hashColumns struct {
	sums    [][]byte
	all     []string // every hash added, for texts
	buf     []byte   // the sums' bytes
	anyText bool     // some hash is not canonical: texts holds it
}

// newHashColumns returns columns for n hashes.
func newHashColumns(n int) hashColumns {
	return hashColumns{sums: make([][]byte, 0, n), all: make([]string, 0, n), buf: make([]byte, 0, 32*n)}
}

// newHashColumns2 returns two hash columns for n hashes each (a tick's
// events' digests and chain hashes) and room for one sum more (the first
// event's previous hash), on strs and sums (each of length 2n, parts of
// the tick's other columns' allocations) and one allocation of bytes.
// Each column's slices, and the room, are capped at their own part, so
// that none can grow into another or past strs and sums.
func newHashColumns2(n int, strs []string, sums [][]byte) (a, b hashColumns, room []byte) {
	all, sums, buf := strs[:0:2*n], sums[:0:2*n], make([]byte, 0, 2*32*n+32)
	col := func(i int) hashColumns {
		return hashColumns{sums: sums[i*n : i*n : (i+1)*n], all: all[i*n : i*n : (i+1)*n], buf: buf[i*32*n : i*32*n : (i+1)*32*n]}
	}
	return col(0), col(1), buf[2*32*n : 2*32*n : 2*32*n+32]
}

func (c *hashColumns) add(h string) {
	c.all = append(c.all, h)
	at := len(c.buf)
	c.buf = appendSum(c.buf, h)
	if len(c.buf) == at {
		c.sums = append(c.sums, nil)
		c.anyText = true
		return
	}
	c.sums = append(c.sums, c.buf[at:len(c.buf):len(c.buf)])
}

// addSum adds a canonical hash by its sum, copied.
func (c *hashColumns) addSum(sum []byte) {
	c.all = append(c.all, "")
	at := len(c.buf)
	c.buf = append(c.buf, sum...)
	c.sums = append(c.sums, c.buf[at:len(c.buf):len(c.buf)])
}

// texts returns the text column: NULL for a hash stored as its sum.
func (c *hashColumns) texts() []*string {
	texts := make([]*string, len(c.all))
	for i := range c.all {
		if c.sums[i] == nil {
			texts[i] = &c.all[i]
		}
	}
	return texts
}

// appendSum appends the 32 bytes canonical hash h stands for to b, or
// nothing when h is not canonical (cjson.UnhexSum reads the digits).
func appendSum(b []byte, h string) []byte {
	if len(h) != len(hashPrefix)+64 || h[:len(hashPrefix)] != hashPrefix {
		return b
	}
	var d [64]byte
	var sum [32]byte
	copy(d[:], h[len(hashPrefix):])
	if !cjson.UnhexSum(&sum, &d) {
		return b
	}
	return append(b, sum[:]...)
}

// sumText is a hash read back as the text it was written as: text when
// it was kept as its text, else its sum's.
func sumText(sum []byte, text *string) string {
	if text != nil {
		return *text
	}
	b := make([]byte, len(hashPrefix)+hex.EncodedLen(len(sum)))
	copy(b, hashPrefix)
	hex.Encode(b[len(hashPrefix):], sum)
	return string(b)
}
