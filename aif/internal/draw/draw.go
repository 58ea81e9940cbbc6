// Package draw is the only source of randomness in the active-inference
// controller: a SplitMix64 stream seeded from an event digest, so that a
// sampled choice replays exactly from the accepted event that caused it.
package draw

import (
	"crypto/sha256"
	"encoding/binary"
)

// Source is a SplitMix64 generator. The zero value is a valid stream seeded
// with 0; use [New] to seed from a digest.
type Source struct{ state uint64 }

// New seeds a stream from a domain label and an event digest: the first
// eight bytes (big-endian) of SHA-256(domain || 0x00 || digest). The domain
// keeps streams drawn for different purposes from the same event apart.
func New(domain, digest string) *Source {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(digest))
	sum := h.Sum(nil)
	return &Source{state: binary.BigEndian.Uint64(sum[:8])}
}

// Uint64 returns the next 64 pseudo-random bits (SplitMix64, Steele, Lea and
// Flood 2014: add the golden-ratio increment, then a xor-shift-multiply mix).
func (s *Source) Uint64() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 returns a uniform value in [0, 1) with 53 random bits.
func (s *Source) Float64() float64 {
	return float64(s.Uint64()>>11) * (1.0 / (1 << 53))
}

// Categorical draws an index with probability proportional to p (which need
// not be normalized; negative entries count as zero). It returns the last
// index with positive weight if rounding leaves the draw past the total, and
// -1 when no entry is positive.
func (s *Source) Categorical(p []float64) int {
	total := 0.0
	last := -1
	for i, x := range p {
		if x > 0 {
			total += x
			last = i
		}
	}
	if last < 0 {
		return -1
	}
	u := s.Float64() * total
	acc := 0.0
	for i, x := range p {
		if x > 0 {
			acc += x
			if u < acc {
				return i
			}
		}
	}
	return last
}
