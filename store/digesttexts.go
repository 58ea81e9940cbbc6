package store

import (
	"crypto/sha256"

	"flrh.dev/flrh/internal/unchanged"
)

// DigestTexts spells digests' texts (SumText) one after another into
// blocks of digestTextsBlock texts, each text a string sharing its block's
// bytes: one allocation for a block of digests, where each text was one
// of its own. Nothing is ever written where a text was handed out (a
// block's bytes are written once, in order, and a full block is left to
// the texts cut from it), so the texts are as immutable as any string. A
// text keeps its whole block alive as long as it is held. The zero value
// is ready to use; a DigestTexts is not safe for concurrent use.
type DigestTexts struct {
	free []byte // the current block's unwritten rest
}

const digestTextsBlock = 8

// Sum is SumText(sum).
func (d *DigestTexts) Sum(sum [sha256.Size]byte) string {
	if len(d.free) < sumTextLen {
		d.free = make([]byte, sumTextLen*digestTextsBlock)
	}
	b := AppendSumText(d.free[:0:sumTextLen], sum)
	d.free = d.free[sumTextLen:]
	return unchanged.String(b)
}

// Digest is BodyDigest(body).
func (d *DigestTexts) Digest(body []byte) string {
	return d.Sum(sha256.Sum256(body))
}

// Prove is ProveDigest(body).
func (d *DigestTexts) Prove(body []byte) (string, DigestProof) {
	text := d.Digest(body)
	return text, proven(body, text)
}
