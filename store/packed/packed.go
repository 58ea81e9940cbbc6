// Package packed stores a record's body in fewer bytes, and reads it
// back byte for byte.
//
// A packed body is Prefix, a byte of flags and an S2 block (the block
// format of github.com/klauspost/compress/s2, which records the length
// it decodes to). With FlagSums set, the block holds the body with every
// ':' followed by 64 lowercase hex digits (the digests, hashes and ids
// flrh writes, a third of a checkpoint's bytes) written as the ':', the
// byte 0x01 and the 32 bytes the digits spell; a body holding a 0x01
// byte of its own is never written so. Canonical JSON never starts with
// a NUL byte (nor holds a raw 0x01), so a stored body is packed exactly
// when it starts with Prefix.
//
// Digests are over the body's own bytes, never over the packed form: the
// reader unpacks first and checks what it unpacked.
package packed

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"flrh.dev/flrh/cjson"
	"github.com/klauspost/compress/s2"
)

// Prefix starts every packed body.
const Prefix = "\x00flrh-packed/1\x00"

// FlagSums says the block's hex digests were written as their bytes.
const FlagSums = 1

// MaxLen bounds the length of a body that is packed; MaxRatio the
// length a packed body may claim to unpack to, as a multiple of its
// block's length. A body claiming more is refused before anything is
// allocated for it; Pack leaves as it is a body that would claim more.
const (
	MaxLen   = 1 << 28
	MaxRatio = 64
)

// sumMark stands for the 64 hex digits of a digest in a FlagSums block.
const sumMark = 0x01

// Is reports whether a stored body is packed.
func Is(b []byte) bool { return bytes.HasPrefix(b, []byte(Prefix)) }

// Packer packs bodies, holding its buffers from one body to the next.
// The zero value is ready to use; a Packer is not safe for concurrent
// use.
type Packer struct {
	sums []byte // a body with its digests as bytes, packed or unpacked
	out  []byte // Pack's result
}

// Pack returns body packed, or body itself when packing would not make it
// smaller, and a body starting with a NUL byte (no canonical JSON does)
// as it is. The result is valid until the next call.
func (p *Packer) Pack(body []byte) []byte {
	if len(body) > 0 && body[0] == 0 {
		return body
	}
	out, ok := p.PackTo(p.out[:0], body)
	p.out = out[:0] // its room kept, packed or not
	if !ok {
		return body
	}
	return out
}

// PackTo appends body packed to dst and reports true, or returns dst and
// false when packing would not make it smaller. Unlike Pack it packs bytes
// of any kind, those starting with NUL included: the caller tells what
// it stored from what it did not by its own means.
func (p *Packer) PackTo(dst, body []byte) ([]byte, bool) {
	if len(body) < 64 || len(body) > MaxLen {
		return dst, false
	}
	src, flags := body, byte(0)
	if bytes.IndexByte(body, sumMark) < 0 {
		if s, n := binarySums(p.sums[:0], body); n > 0 {
			p.sums, src, flags = s, s, FlagSums
		}
	}
	at := len(dst)
	need := len(Prefix) + 1 + s2.MaxEncodedLen(len(src))
	dst = slices.Grow(dst, need)
	dst = append(dst, Prefix...)
	dst = append(dst, flags)
	room := dst[len(dst):cap(dst)]
	enc := s2.Encode(room, src) // in room, which MaxEncodedLen fits
	if len(enc) > 0 && &enc[0] != &room[0] {
		copy(room, enc)
	}
	n := len(Prefix) + 1 + len(enc)
	if n >= len(body) || len(src) > MaxRatio*len(enc) {
		return dst[:at], false
	}
	return dst[:at+n], true
}

// Pack packs one body into a new slice (or returns body itself when
// packing would not make it smaller).
func Pack(body []byte) []byte {
	var p Packer
	out := p.Pack(body)
	if len(out) > 0 && &out[0] != &body[0] {
		return bytes.Clone(out)
	}
	return out
}

// ErrCorrupt is wrapped by every error Unpack returns.
var ErrCorrupt = errors.New("packed body is corrupt")

// Unpack returns the body a packed body holds, appended to dst[:0]. A
// body that is not packed is an error: the caller asks Is first.
func Unpack(dst, stored []byte) ([]byte, error) {
	var p Packer
	return p.Unpack(dst, stored)
}

// Unpack is the package's Unpack, with p's buffers for its work.
func (p *Packer) Unpack(dst, stored []byte) ([]byte, error) {
	if !Is(stored) || len(stored) < len(Prefix)+1 {
		return nil, fmt.Errorf("%w: no prefix", ErrCorrupt)
	}
	flags, block := stored[len(Prefix)], stored[len(Prefix)+1:]
	if flags&^FlagSums != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if n > MaxLen || n > MaxRatio*len(block) {
		return nil, fmt.Errorf("%w: claims %d bytes", ErrCorrupt, n)
	}
	if flags&FlagSums == 0 {
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		out, err := s2.Decode(dst[:n], block)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return out, nil
	}
	if cap(p.sums) < n {
		p.sums = make([]byte, n)
	}
	mid, err := s2.Decode(p.sums[:n], block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return hexSums(dst[:0], mid)
}

// hexValue is a byte's value as a lowercase hex digit; anything else is
// above 15, so that a pair is checked with one test.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
	}
	return t
}()

// binarySums appends body to dst with every ':' and 64 lowercase hex
// digits written as ':', sumMark and the 32 bytes, and returns it with
// the number of digests so written (none: dst is not to be used).
func binarySums(dst, body []byte) ([]byte, int) {
	count, from := 0, 0
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], ':')
		if j < 0 {
			break
		}
		p := i + j + 1 // the first digit
		i = p
		if len(body)-p < 64 {
			break
		}
		d := (*[64]byte)(body[p : p+64])
		// Most ':' separate a key from its value, a few a time's digits
		// from what follows: three digits looked up turn them away.
		if hexValue[d[0]]|hexValue[d[20]]|hexValue[d[63]] > 15 {
			continue
		}
		if count == 0 {
			dst = slices.Grow(dst, len(body))
		}
		undo := len(dst)
		dst = append(dst, body[from:p]...)
		dst = append(dst, sumMark)
		dst = slices.Grow(dst, 32)
		at := len(dst)
		dst = dst[:at+32]
		if !cjson.UnhexSum((*[32]byte)(dst[at:at+32]), d) {
			dst = dst[:undo]
			continue
		}
		count++
		i = p + 64
		from = i
	}
	if count == 0 {
		return dst, 0
	}
	return append(dst, body[from:]...), count
}

// hexSums undoes binarySums, appending to dst.
func hexSums(dst, mid []byte) ([]byte, error) {
	dst = slices.Grow(dst, len(mid)+len(mid)/2)
	for {
		j := bytes.IndexByte(mid, sumMark)
		if j < 0 {
			return append(dst, mid...), nil
		}
		if j == 0 || mid[j-1] != ':' || len(mid)-j-1 < 32 {
			return nil, fmt.Errorf("%w: a digest mark out of place", ErrCorrupt)
		}
		dst = append(dst, mid[:j]...)
		dst = append(dst, make([]byte, 64)...)
		cjson.HexSum((*[64]byte)(dst[len(dst)-64:]), (*[32]byte)(mid[j+1:j+33]))
		mid = mid[j+33:]
	}
}
