package postgres

import "encoding/hex"

// An event's hashes are stored as their 32-byte sums when they are
// canonical ("sha256:" and 64 lowercase hex digits), else as the text they
// are (see the schema's "event hashes as sums"): each hash is a pair of
// columns of which exactly one is set.

const hashPrefix = "sha256:"

// hashSum returns the 32 bytes a canonical hash stands for, or nil when h
// is not canonical (it is then stored as its text).
func hashSum(h string) []byte {
	if len(h) != len(hashPrefix)+64 || h[:len(hashPrefix)] != hashPrefix {
		return nil
	}
	for i := len(hashPrefix); i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil
		}
	}
	sum, err := hex.DecodeString(h[len(hashPrefix):])
	if err != nil {
		return nil
	}
	return sum
}

// hashColumns are one hash column pair's values for a multi-row insert:
// per row, the sum or NULL, and NULL or the text.
type hashColumns struct {
	sums    [][]byte
	texts   []*string
	anyText bool // some hash is not canonical: texts holds it
}

func (c *hashColumns) add(h string) {
	sum := hashSum(h)
	c.sums = append(c.sums, sum)
	if sum != nil {
		c.texts = append(c.texts, nil)
		return
	}
	c.texts = append(c.texts, &h)
	c.anyText = true
}

// hashText reads a hash column pair back as the text it was written as.
func hashText(sum, text string) string {
	return `COALESCE(` + text + `, '` + hashPrefix + `' || encode(` + sum + `, 'hex'))`
}
