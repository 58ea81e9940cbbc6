package ground

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDecodeDepth bounds container nesting in Decode, so hostile input
// cannot exhaust the stack.
const MaxDecodeDepth = 128

// DecodeError reports JSON text that is not a JSON value at all. Values
// that are JSON but outside the canonical domain (floats, huge integers,
// non-NFC strings) decode successfully and are then rejected by Solve with
// CANONICALIZATION_VIOLATION and the exact pointer, as the contract wants.
type DecodeError struct {
	Offset int64
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("ground: invalid JSON at byte %d: %s", e.Offset, e.Reason)
}

// Decode parses JSON text into the value model Solve takes: objects as
// map[string]any, arrays as []any, strings, int64 integers, booleans and
// nil. A number with a fraction or exponent decodes as float64 and an
// integer outside int64 as *big.Int, so the kernel can name them. Text that
// is not UTF-8, has trailing data, nests deeper than MaxDecodeDepth or holds
// an escaped lone surrogate is a DecodeError.
func Decode(text []byte) (any, error) {
	if !utf8.Valid(text) {
		return nil, &DecodeError{0, "input is not valid UTF-8"}
	}
	if off, ok := loneSurrogate(text); ok {
		return nil, &DecodeError{int64(off), "escaped lone surrogate"}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &DecodeError{dec.InputOffset(), "trailing data after the value"}
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, &DecodeError{dec.InputOffset(), syntaxReason(err)}
	}
	switch x := tok.(type) {
	case json.Delim:
		if depth >= MaxDecodeDepth {
			return nil, &DecodeError{dec.InputOffset(), "nesting too deep"}
		}
		switch x {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, &DecodeError{dec.InputOffset(), syntaxReason(err)}
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &DecodeError{dec.InputOffset(), "object key is not a string"}
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, &DecodeError{dec.InputOffset(), syntaxReason(err)}
			}
			return m, nil
		case '[':
			s := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				s = append(s, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, &DecodeError{dec.InputOffset(), syntaxReason(err)}
			}
			return s, nil
		}
		return nil, &DecodeError{dec.InputOffset(), "unexpected delimiter"}
	case json.Number:
		return number(string(x)), nil
	case string, bool, nil:
		return x, nil
	}
	return nil, &DecodeError{dec.InputOffset(), "unexpected token"}
}

func number(s string) any {
	if isIntegerLiteral(s) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		n, _ := new(big.Int).SetString(s, 10)
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.Inf(1) // out of range: still a float, still rejected
	}
	return f
}

func syntaxReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of input"
	}
	return err.Error()
}

// loneSurrogate finds a \uD800–\uDFFF escape not part of a valid pair; the
// standard decoder would silently replace it with U+FFFD.
func loneSurrogate(text []byte) (int, bool) {
	s := string(text)
	for i := 0; i+6 <= len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // skip the escaped character
			continue
		}
		r, ok := hex4(s[i+2 : i+6])
		if !ok {
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo, ok := hex4(s[i+8 : i+12]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return i, true
		case r >= 0xDC00 && r <= 0xDFFF:
			return i, true
		}
		i += 5
	}
	return 0, false
}

func hex4(s string) (rune, bool) {
	n, err := strconv.ParseUint(strings.ToLower(s), 16, 32)
	return rune(n), err == nil
}

// Canonical returns the flrh-cjson/1 bytes of a wire value this package
// returned (a fixpoint, a step or a rejection wire).
func Canonical(v any) ([]byte, error) {
	b, err := canonical(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}
