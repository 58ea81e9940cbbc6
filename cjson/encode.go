package cjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// setLikePaths names, per root object kind, the exact JSON Pointers whose
// arrays are sets: sorted by element canonical bytes, duplicates rejected.
// A same-named array elsewhere (say inside an application payload) keeps its
// order, because order there may mean something.
var setLikePaths = map[string][]string{
	"EffectProposal":      {"/preconditions"},
	"EligibilityVerdict":  {"/support_derivation_ids"},
	"StableProposalBatch": {"/proposal_ids", "/eligibility_verdict_ids"},
	"EffectIntent":        {"/preconditions"},
	"GraphEnvelope":       {"/provenance_refs"},
	"GraphDelta":          {"/causal_parent_delta_ids"},
	"ActionReceipt":       {"/output_digests"},
}

// SetLikePaths returns the set-like JSON Pointers for a root kind (nil when
// the kind has none). The result is a copy.
func SetLikePaths(kind string) []string { return slices.Clone(setLikePaths[kind]) }

// Canonicalize parses JSON text strictly and returns its canonical bytes.
func Canonicalize(text []byte) ([]byte, error) {
	v, err := Decode(text)
	if err != nil {
		return nil, err
	}
	return Encode(v)
}

// Encode returns the canonical bytes of a value of this package's model
// (map[string]any, []any, string, int64, bool, nil; other Go values are
// first converted as [Marshal] does). Set-like arrays are chosen by the
// root object's string "kind" member.
func Encode(v any) ([]byte, error) {
	if b, ok := onePass(v); ok {
		return b, nil
	}
	return encodeTwoPass(v)
}

// encodeTwoPass normalizes v into the value model, then writes it. It is
// the reference the one-pass encoder is held to, and the path that reports
// errors: which rule failed, and where.
func encodeTwoPass(v any) ([]byte, error) {
	v, err := normalize(v, "", 0)
	if err != nil {
		return nil, err
	}
	var paths []string
	if obj, ok := v.(map[string]any); ok {
		if k, ok := obj["kind"].(string); ok {
			paths = setLikePaths[k]
		}
	}
	e := encoder{setLike: paths}
	return e.encode(nil, v, "")
}

// Marshal returns the canonical bytes of any Go value that has a canonical
// form: structs (through their json tags), maps with string keys, slices,
// arrays, pointers, strings, booleans and integers. Floating-point values,
// channels, functions and complex numbers are rejected, whatever their value.
func Marshal(v any) ([]byte, error) { return Encode(v) }

// AppendMarshal appends the canonical bytes of v, exactly those Marshal
// returns, to dst and returns the extended slice; on error it returns dst
// unextended (its spare capacity may have been written). Inside Written's
// write function it encodes into the recycled buffer, so that bytes built
// around an encoding (spliced, say) are copied out once.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	if out, ok := onePassInto(dst, v); ok {
		return out, nil
	}
	b, err := encodeTwoPass(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Digest returns "sha256:" and the lowercase hex SHA-256 of canonical bytes.
func Digest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	// Written into one array and converted once: one allocation, where
	// the hex string and its concatenation with the prefix took three.
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	HexSum((*[64]byte)(out[len("sha256:"):]), &sum)
	return string(out[:])
}

// HexDigest returns the bare 64-character lowercase hex SHA-256, for ids of
// the form "prefix:<hex>".
func HexDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	var out [2 * sha256.Size]byte
	HexSum(&out, &sum)
	return string(out[:])
}

// DigestWritten returns Digest of the bytes write appends to an empty
// buffer. The buffer is recycled for later calls: write must keep no
// reference to it (nor to what it appended), and the digest is built from
// the hash sum, never from the buffer. It is for preimages that are only
// digested, so that writing one allocates nothing.
func DigestWritten(write func(b []byte) []byte) string {
	sum := SumWritten(write)
	var out [len("sha256:") + 2*sha256.Size]byte
	copy(out[:], "sha256:")
	HexSum((*[64]byte)(out[len("sha256:"):]), &sum)
	return string(out[:])
}

// HexDigestWritten is DigestWritten for HexDigest.
func HexDigestWritten(write func(b []byte) []byte) string {
	sum := SumWritten(write)
	var out [2 * sha256.Size]byte
	HexSum(&out, &sum)
	return string(out[:])
}

// SumWritten is DigestWritten's SHA-256 sum itself, for digests spelled
// another way.
func SumWritten(write func(b []byte) []byte) [sha256.Size]byte {
	s := scratchBufs.Get().(*[]byte)
	b := write((*s)[:0])
	sum := sha256.Sum256(b)
	releaseScratch(s, b)
	return sum
}

// Written returns a copy, at its exact length, of the bytes write appends
// to an empty buffer. The buffer is recycled as for DigestWritten: write
// must keep no reference to it. It is for bytes that are kept but whose
// size is not known before they are written.
func Written(write func(b []byte) []byte) []byte {
	s := scratchBufs.Get().(*[]byte)
	b := write((*s)[:0])
	out := make([]byte, len(b))
	copy(out, b)
	releaseScratch(s, b)
	return out
}

// MarshalString returns Marshal's bytes as a string: written into the
// recycled buffer and copied out once, as the string, where converting
// Marshal's bytes copies them a second time.
func MarshalString(v any) (string, error) {
	s := scratchBufs.Get().(*[]byte)
	b, err := AppendMarshal((*s)[:0], v)
	out := ""
	if err == nil {
		out = string(b)
	}
	releaseScratch(s, b)
	return out, err
}

// DigestOf marshals v canonically and returns its digest.
func DigestOf(v any) (string, error) {
	// The bytes are digested where they were written, never copied out.
	s := scratchBufs.Get().(*[]byte)
	b, ok := onePassInto((*s)[:0], v)
	var d string
	if ok {
		d = Digest(b)
	}
	releaseScratch(s, b)
	if ok {
		return d, nil
	}
	b, err := encodeTwoPass(v)
	if err != nil {
		return "", err
	}
	return Digest(b), nil
}

// ValidDigest reports whether s has the form sha256:<64 lowercase hex>.
func ValidDigest(s string) bool {
	if len(s) != 7+64 || s[:7] != "sha256:" {
		return false
	}
	// Eight digits at a time: digests are checked wherever a record is
	// built, read back or verified.
	for i := 7; i < len(s); i += 8 {
		if !hexWord(word(s, i)) {
			return false
		}
	}
	return true
}

// ValidDigestBytes is ValidDigest of b's bytes, for a reader that holds
// them without making them a string.
func ValidDigestBytes(b []byte) bool {
	if len(b) != 7+64 || string(b[:7]) != "sha256:" {
		return false
	}
	for i := 7; i < len(b); i += 8 {
		if !hexWord(binary.LittleEndian.Uint64(b[i:])) {
			return false
		}
	}
	return true
}

// hexWord reports whether each of the eight bytes of x is a lowercase
// hex digit, '0'-'9' or 'a'-'f' (held to the byte-by-byte test by
// TestValidDigestIsBytewise). For a byte below 0x80, adding 0x80-lo sets
// its high bit exactly when it is at least lo, and adding 0x7f-hi exactly
// when it is above hi, with no carry into the next byte; a byte at or
// above 0x80 is refused first.
func hexWord(x uint64) bool {
	const l, h = 0x0101010101010101, 0x8080808080808080
	if x&h != 0 {
		return false
	}
	digit := (x + l*(0x80-'0')) &^ (x + l*(0x7f-'9'))
	letter := (x + l*(0x80-'a')) &^ (x + l*(0x7f-'f'))
	return (digit|letter)&h == h
}

// MaxIDLength is the longest identifier the protocol admits.
const MaxIDLength = 128

// ValidID reports whether s is a protocol identifier: it matches
// ^[A-Za-z0-9][A-Za-z0-9._:/-]*$ and has at most MaxIDLength characters.
func ValidID(s string) bool {
	n := len(s)
	if n == 0 || n > MaxIDLength || idByte[s[0]] != idAlnum {
		return false
	}
	if n < 8 {
		for i := 1; i < n; i++ {
			if idByte[s[i]]&(idAlnum|idPunct) == 0 {
				return false
			}
		}
		return true
	}
	// Eight bytes at a time (the first byte, already an alphanumeric, is
	// in the class too), the last by the word that ends s, which overlaps
	// the one before it: the digests and ids that are most identifiers
	// (70 bytes and more) take a word's few operations for eight table
	// reads and branches.
	var bad uint64
	for i := 0; i+8 <= n; i += 8 {
		bad |= idWordMask(word(s, i))
	}
	return bad|idWordMask(word(s, n-8)) == 0
}

// idWordMask is zero exactly when each of the eight bytes of x is in
// ValidID's class after the first byte, [A-Za-z0-9._:/-]. With every
// byte's high bit set first, subtracting c from each byte borrows from
// none of its neighbours and leaves the byte's high bit set exactly when
// its low seven bits are at least c: a byte is in [c, d] when the
// subtraction of c leaves the bit and that of d+1 clears it. The class
// is the ranges "-./0123456789:", A–Z, "_" and a–z of the low seven bits
// (with 0x20 set, those of a letter are a–z exactly when they were A–Z
// or a–z), and a byte whose own high bit is set is outside it.
// TestIDWordMaskIsTheTable holds it to the table for every byte.
func idWordMask(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	y := x | hi
	f := y | lo*0x20 // a letter of either case as its small one
	in := (y - lo*'-') &^ (y - lo*(':'+1))
	in |= (f - lo*'a') &^ (f - lo*('z'+1))
	in |= (y - lo*'_') &^ (y - lo*('_'+1))
	return (^in | x) & hi
}

// ValidVersion reports whether s is a protocol version label: an
// identifier that may also contain '+' after its first character,
// ^[A-Za-z0-9][A-Za-z0-9._:+/-]*$, at most MaxIDLength characters.
func ValidVersion(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength || idByte[s[0]] != idAlnum {
		return false
	}
	for i := 1; i < len(s); i++ {
		if idByte[s[i]] == 0 {
			return false
		}
	}
	return true
}

// idByte classes an identifier's bytes: letters and digits (which may
// also start it), the punctuation "._:/-", and '+', which only a version
// label admits; 0 for any other byte. One table read per byte (validIDSlow
// in the tests is the definition of both patterns).
var idByte = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			t[c] = idAlnum
		case c == '.' || c == '_' || c == ':' || c == '/' || c == '-':
			t[c] = idPunct
		case c == '+':
			t[c] = idPlus
		}
	}
	return t
}()

const (
	idAlnum = 1
	idPunct = 2
	idPlus  = 4
)

type encoder struct {
	setLike []string
}

func (e *encoder) encode(dst []byte, v any, ptr string) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case string:
		return AppendString(dst, x), nil
	case []any:
		if slices.Contains(e.setLike, ptr) {
			return e.encodeSet(dst, x, ptr)
		}
		dst = append(dst, '[')
		for i, item := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.encode(dst, item, ptr+"/"+strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = e.encode(dst, x[k], ptr+"/"+EscapePointer(k)); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, errAt(CodeUnsupportedType, ptr, -1, "value of type %T has no canonical form", v)
}

func (e *encoder) encodeSet(dst []byte, items []any, ptr string) ([]byte, error) {
	encoded := make([][]byte, len(items))
	for i, item := range items {
		b, err := e.encode(nil, item, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		encoded[i] = b
	}
	slices.SortFunc(encoded, bytes.Compare)
	dst = append(dst, '[')
	for i, b := range encoded {
		if i > 0 {
			if bytes.Equal(encoded[i-1], b) {
				return nil, errAt(CodeDuplicateSet, ptr, -1, "duplicate set-like element %s", b)
			}
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	return append(dst, ']'), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends the canonical encoding of s. It does not check NFC:
// callers on hot paths use it for strings they already validated (or built
// from ASCII); [Encode] checks every string before it gets here.
func AppendString(dst []byte, s string) []byte {
	dst, _ = AppendQuoted(dst, s)
	return dst
}

// AppendQuoted is [AppendString] that also reports whether s was all
// ASCII (an ASCII string needs no NFC check). Runs of plain bytes are
// copied eight at a time rather than tested one by one: digests, ids and
// previews, the strings records are made of, are mostly such runs.
func AppendQuoted(dst []byte, s string) ([]byte, bool) {
	// Most strings are plain: checked a word at a time, the last bytes by
	// the word that ends the string (overlapping the one before), and
	// copied whole. The loop below starts at the first word that is not
	// plain; everything before it is plain ASCII.
	i, n := 0, len(s)
	plain := false
	switch {
	case n >= 8:
		// As Plain: two words at a time, then the last bytes by the word
		// that ends s and, past eight of them, the word before it.
		for ; i+16 <= n; i += 16 {
			if plainMask(word(s, i))|plainMask(word(s, i+8)) != 0 {
				break
			}
		}
		if r := n - i; r < 16 {
			m := plainMask(word(s, n-8))
			if r > 8 {
				m |= plainMask(word(s, i))
			}
			plain = m == 0
		}
	case n >= 4:
		plain = plainWord(shortWord(s))
	default:
		plain = plainBytes(s)
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"'), true
	}
	dst = append(dst, '"')
	ascii := true
	start := 0
	for i < len(s) {
		if i+8 <= len(s) {
			// The plain bytes of a word are passed over together: the
			// lowest byte plainMask flags is the first that is not plain
			// (a string with quotes or escapes in most of its words, an
			// atom's text say, is not read byte by byte between them).
			m := plainMask(word(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := s[i]
		i++
		if c >= 0x80 {
			ascii = false
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i-1]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), ascii
}

// Plain reports whether s is printable ASCII with nothing to escape: its
// canonical encoding is s between quotes, and it is NFC. It tests sixteen
// bytes at a time; plainBytes is the byte-at-a-time definition it is
// tested against.
func Plain(s string) bool {
	n := len(s)
	if n < 8 {
		if n >= 4 {
			return plainWord(shortWord(s))
		}
		return plainBytes(s)
	}
	// Two words at a time: their masks joined, sixteen bytes take one
	// branch, and the two words' tests are independent of each other.
	i := 0
	for ; i+16 <= n; i += 16 {
		if plainMask(word(s, i))|plainMask(word(s, i+8)) != 0 {
			return false
		}
	}
	// The last bytes, by the word that ends s (it overlaps the one before)
	// and, past eight of them, the word before it.
	if r := n - i; r > 0 {
		m := plainMask(word(s, n-8))
		if r > 8 {
			m |= plainMask(word(s, i))
		}
		return m == 0
	}
	return true
}

func plainBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// word reads the eight bytes of s at i as a little-endian word. Slicing
// first leaves one bounds check instead of eight, and the eight byte loads
// of a slice of known length compile to a single word load.
func word(s string, i int) uint64 {
	t := s[i : i+8]
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// plainWord reports whether the eight bytes of x are plain: no byte below
// 0x20, none above 0x7e, none equal to '"' or '\\'.
func plainWord(x uint64) bool { return plainMask(x) == 0 }

// plainMask is zero when the eight bytes of x are plain (see plainWord),
// and has the high bit of some byte set otherwise. Each term is the
// "some byte" word trick without its "&^ x" (or "&^ q"): that part only
// clears false positives, and these come either from a byte at or above
// 0x80, which the second term flags anyway, or from a borrow or carry out
// of a lower byte, which only a byte that is itself not plain makes. So
// the lowest byte that is not plain is flagged exactly, and a word of
// plain bytes flags nothing (plainMaskExact, the exact form, is what
// the tests hold it to).
func plainMask(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := x - lo*0x20            // a byte < 0x20 wraps
	above := (x + lo) | x           // 0x7f carries into, 0x80 and up have, the high bit
	quote := (x ^ (lo * '"')) - lo  // a byte that was '"' wraps
	slash := (x ^ (lo * '\\')) - lo // a byte that was '\\' wraps
	return (below | above | quote | slash) & hi
}

// PlainEnd returns the index of the first byte of b at or after i that
// is not plain (below 0x20, above 0x7e, a quote or a backslash), or
// len(b): where a string Plain would write between quotes as its bytes
// ends. It reads eight bytes at a time while eight remain (in each word
// the lowest byte plainMask flags is the first that is not plain), then
// byte by byte.
func PlainEnd(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := plainMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// word4 reads the four bytes of s at i as a little-endian number.
func word4(s string, i int) uint64 {
	t := s[i : i+4]
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24
}

// shortWord packs a string of four to seven bytes into one word: its first
// four bytes and its last four (overlapping them), so that plainMask of it
// is zero exactly when every byte of s is plain.
func shortWord(s string) uint64 {
	return word4(s, 0) | word4(s, len(s)-4)<<32
}

// AppendInt appends the canonical encoding of n.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// CheckString reports whether s may appear in a canonical value: valid
// UTF-8 (no surrogates) and in NFC. ptr names where s sits, for the error.
func CheckString(s, ptr string) error {
	if stringOK(s) {
		return nil
	}
	if !utf8.ValidString(s) {
		return errAt(CodeInvalidUTF8, ptr, -1, "string is not valid UTF-8")
	}
	if !norm.NFC.IsNormalString(s) {
		return errAt(CodeNonNFC, ptr, -1, "string is not in Unicode NFC")
	}
	return nil
}
