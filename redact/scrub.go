package redact

import (
	"fmt"
	"strings"
)

// MinSecretLen is the shortest value a Scrubber replaces: shorter strings
// would match ordinary text everywhere, and a secret that short is no
// secret.
const MinSecretLen = 8

// Scrubber replaces known secret values in text with Marker. The zero
// value and nil scrub nothing. It is immutable once built and safe for
// concurrent use.
type Scrubber struct {
	r *strings.Replacer
	n int
}

// NewScrubber returns a scrubber for the given values; values shorter
// than MinSecretLen are refused with an error naming their position, never
// their text.
func NewScrubber(values ...string) (*Scrubber, error) {
	var pairs []string
	seen := map[string]bool{}
	for i, v := range values {
		if len(v) < MinSecretLen {
			return nil, &Error{Pointer: "", Detail: fmt.Sprintf("secret value %d is shorter than %d bytes", i+1, MinSecretLen)}
		}
		if seen[v] {
			continue
		}
		seen[v] = true
		pairs = append(pairs, v, Marker)
	}
	if len(pairs) == 0 {
		return &Scrubber{}, nil
	}
	return &Scrubber{r: strings.NewReplacer(pairs...), n: len(seen)}, nil
}

// Len is how many distinct values the scrubber replaces.
func (s *Scrubber) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// String returns text with every known secret replaced by Marker.
func (s *Scrubber) String(text string) string {
	if s == nil || s.r == nil {
		return text
	}
	return s.r.Replace(text)
}

// Bytes is String over bytes; it returns b itself when nothing matched.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s == nil || s.r == nil {
		return b
	}
	out := s.r.Replace(string(b))
	if len(out) == len(b) && out == string(b) {
		return b
	}
	return []byte(out)
}
