package ground

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"flrh.dev/flrh/cjson"
)

// The value model of this package is the decoded JSON model: map[string]any,
// []any, string, int64, bool and nil. For robustness the checker also sees
// values a Go caller may hand in by mistake (int, float64, json.Number,
// *big.Int, other types) and reports them with the reference's codes instead
// of panicking.
//
// The M2 preimages are plain flrh-cjson/1 bytes without kind-driven set-like
// arrays (the kernel sorts every set itself), and M2 atoms may carry any NFC
// object key, not only ASCII ones; so this file encodes with cjson's string
// and integer appenders but keeps its own walk (see docs/decisions/0400).

// canonError is a value outside the canonical domain: a reference
// canonicalization code and the JSON pointer of the offending value relative
// to the value being encoded ("" for the root).
type canonError struct {
	code string
	path string
}

func (e *canonError) Error() string { return "ground: " + e.code + " at " + e.path }

// Canonicalization codes, as the reference kernel names them.
const (
	canonIntRange    = "INTEGER_OUTSIDE_INT64"
	canonFloat       = "FLOAT_FORBIDDEN"
	canonNonScalar   = "NON_UNICODE_SCALAR"
	canonNonNFC      = "NON_NFC_STRING"
	canonNonNFCKey   = "NON_NFC_OBJECT_KEY"
	canonUnsupported = "UNSUPPORTED_JSON_TYPE"
)

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// canonical returns the flrh-cjson/1 bytes of v, or the first violation in
// the reference's walk order (object members by sorted key, array items by
// index).
func canonical(v any) ([]byte, *canonError) {
	return appendCanonical(make([]byte, 0, sizeHint(v, 2)), v)
}

// sizeHint estimates the encoded size of v, looking depth levels deep, so
// that encoding large preimages (which embed megabytes of cached bytes)
// allocates its buffer once instead of doubling it repeatedly.
func sizeHint(v any, depth int) int {
	switch x := v.(type) {
	case rawCanonical:
		return len(x)
	case string:
		return len(x) + 2
	case map[string]any:
		if depth == 0 {
			return 64 * len(x)
		}
		n := 2
		//flrh:orderfree a sum does not depend on the order of its terms
		for k, item := range x {
			n += len(k) + 4 + sizeHint(item, depth-1)
		}
		return n
	case []any:
		if depth == 0 {
			return 64 * len(x)
		}
		n := 2
		for _, item := range x {
			n += 1 + sizeHint(item, depth-1)
		}
		return n
	}
	return 8
}

// mustCanonical encodes a value the kernel built itself from validated
// parts. A failure is an internal invariant breach; Solve turns the panic
// into a closed INVARIANT_VIOLATION rejection.
func mustCanonical(v any) []byte {
	b, err := canonical(v)
	if err != nil {
		panic(invariantPanic{"canonical_json_domain"})
	}
	return b
}

// digestOf returns "sha256:<hex>" over the canonical bytes of v.
func digestOf(v any) string { return cjson.Digest(mustCanonical(v)) }

// hexOf returns the bare hex SHA-256 of the canonical bytes of v.
func hexOf(v any) string {
	sum := sha256.Sum256(mustCanonical(v))
	return hex.EncodeToString(sum[:])
}

func prefixed(err *canonError, token string) *canonError {
	err.path = "/" + token + err.path
	return err
}

// rawCanonical is a value already in canonical form (the cached bytes of a
// support, say). It appears only inside preimages the kernel hashes, never
// in a returned wire, and is copied verbatim.
type rawCanonical []byte

func appendCanonical(dst []byte, v any) ([]byte, *canonError) {
	switch x := v.(type) {
	case rawCanonical:
		return append(dst, x...), nil
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case int64:
		return cjson.AppendInt(dst, x), nil
	case int:
		return cjson.AppendInt(dst, int64(x)), nil
	case string:
		if !utf8.ValidString(x) {
			return nil, &canonError{code: canonNonScalar}
		}
		if !norm.NFC.IsNormalString(x) {
			return nil, &canonError{code: canonNonNFC}
		}
		return cjson.AppendString(dst, x), nil
	case []any:
		dst = append(dst, '[')
		for i, item := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err *canonError
			dst, err = appendCanonical(dst, item)
			if err != nil {
				return nil, prefixed(err, strconv.Itoa(i))
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if !utf8.ValidString(k) {
				return nil, &canonError{code: canonNonScalar}
			}
			if !norm.NFC.IsNormalString(k) {
				// The key cannot name itself in a pointer; point at the
				// containing object, as the reference does.
				return nil, &canonError{code: canonNonNFCKey}
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = cjson.AppendString(dst, k)
			dst = append(dst, ':')
			var err *canonError
			dst, err = appendCanonical(dst, x[k])
			if err != nil {
				return nil, prefixed(err, escapeToken(k))
			}
		}
		return append(dst, '}'), nil
	case float64, float32:
		return nil, &canonError{code: canonFloat}
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err == nil {
			return cjson.AppendInt(dst, n), nil
		}
		if isIntegerLiteral(string(x)) {
			return nil, &canonError{code: canonIntRange}
		}
		return nil, &canonError{code: canonFloat}
	case *big.Int:
		if x != nil && x.IsInt64() {
			return cjson.AppendInt(dst, x.Int64()), nil
		}
		return nil, &canonError{code: canonIntRange}
	}
	return nil, &canonError{code: canonUnsupported}
}

func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cloneValue returns a deep copy of a decoded value so that nothing the
// kernel keeps or returns aliases caller memory.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = cloneValue(item)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = cloneValue(item)
		}
		return out
	case *big.Int:
		if x == nil {
			return x
		}
		return new(big.Int).Set(x)
	}
	return v
}

// sortByKey orders values by a byte key computed once per value: canonical
// bytes (the order of every emitted set-like collection) or the diagnostic
// key. The sort is stable.
func sortByKey[T any](items []T, bytesOf func(T) []byte) {
	type keyed struct {
		key  []byte
		item T
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		ks[i] = keyed{bytesOf(it), it}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return compareBytes(a.key, b.key) })
	for i := range ks {
		items[i] = ks[i].item
	}
}

func compareBytes(a, b []byte) int { return bytes.Compare(a, b) }

// canonicalString is the canonical encoding of a string known to be valid.
func canonicalString(s string) []byte { return cjson.AppendString(nil, s) }

// sortStrings orders strings by their canonical encodings (which differs
// from plain byte order when a string continues with a byte below '"').
func sortStrings(ss []string) {
	sortByKey(ss, canonicalString)
}
