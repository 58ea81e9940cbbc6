package httpwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
)

// Protocol is the version every object of this protocol names.
const Protocol = "flrh-effect-http/1"

// Object kinds.
const (
	KindRequest = "EffectRequest"
	KindResult  = "EffectResult"
	KindLookup  = "EffectLookup"
	KindProblem = "EffectProblem"
)

// Header names.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderContentDigest  = "Content-Digest"
	// HeaderReplayed is set to "true" on an answer a destination gave from
	// its idempotency record rather than by applying the request again.
	HeaderReplayed = "Idempotent-Replayed"
)

// Size limits. A request body or an answer beyond them is refused whole.
const (
	MaxRequestBytes = 1 << 20  // an effect request body
	MaxAnswerBytes  = 64 << 10 // a result, lookup answer or problem
)

// Lookup statuses a destination answers for an idempotency key.
const (
	StatusApplied    = "applied"     // a mutation with this key was applied
	StatusNotApplied = "not_applied" // no mutation with this key was applied or is in flight
	StatusInProgress = "in_progress" // a request with this key is being handled now
	StatusConflict   = "conflict"    // this key was applied with other content than asked about
)

// Problem codes: stable strings a destination answers with, and that this
// package reports in its own errors.
const (
	CodeMissingKey     = "MISSING_IDEMPOTENCY_KEY"
	CodeInvalidKey     = "INVALID_IDEMPOTENCY_KEY"
	CodeMissingDigest  = "MISSING_CONTENT_DIGEST"
	CodeInvalidDigest  = "INVALID_CONTENT_DIGEST"
	CodeDigestMismatch = "CONTENT_DIGEST_MISMATCH"
	CodeTooLarge       = "BODY_TOO_LARGE"
	CodeMalformed      = "MALFORMED_BODY"
	CodeNotCanonical   = "BODY_NOT_CANONICAL"
	CodeKeyConflict    = "IDEMPOTENCY_KEY_CONFLICT"
	CodeInProgress     = "IDEMPOTENCY_KEY_IN_PROGRESS"
	CodeBinding        = "ANSWER_BINDING_MISMATCH"
	CodeInjected       = "INJECTED_FAILURE"
	CodeLedgerFull     = "LEDGER_FULL"
	CodeNotFound       = "NOT_FOUND"
	CodeMethod         = "METHOD_NOT_ALLOWED"
)

// Error is a request or answer outside the protocol: what (Code), where
// (Pointer, an RFC 6901 pointer into the body, or a header name) and why.
type Error struct {
	Code    string
	Pointer string
	Detail  string
}

func (e *Error) Error() string {
	s := "httpwire: " + e.Code
	if e.Pointer != "" {
		s += " at " + e.Pointer
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func errorf(code, ptr, format string, args ...any) *Error {
	return &Error{Code: code, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}

// Request is the body of one effect mutation. Payload is the action's
// parameters in the cjson value model (map[string]any, []any, string,
// int64, bool, nil).
type Request struct {
	IntentID          string
	EffectType        string
	ActionDigest      string
	DestinationDigest string
	Payload           any
}

// NewRequest builds a request whose payload is the given JSON text (nil
// means null). The text must be valid flrh-cjson/1 input.
func NewRequest(intentID, effectType, actionDigest, destinationDigest string, payload []byte) (Request, error) {
	r := Request{IntentID: intentID, EffectType: effectType, ActionDigest: actionDigest, DestinationDigest: destinationDigest}
	if payload != nil {
		v, err := cjson.Decode(payload)
		if err != nil {
			return Request{}, &Error{Code: CodeMalformed, Pointer: "/payload", Detail: err.Error()}
		}
		r.Payload = v
	}
	return r, r.check()
}

func (r Request) check() error {
	for _, f := range []struct{ ptr, v string }{{"/intent_id", r.IntentID}, {"/effect_type", r.EffectType}} {
		if !cjson.ValidID(f.v) {
			return errorf(CodeMalformed, f.ptr, "%q is not an identifier", f.v)
		}
	}
	for _, f := range []struct{ ptr, v string }{{"/action_digest", r.ActionDigest}, {"/destination_digest", r.DestinationDigest}} {
		if !cjson.ValidDigest(f.v) {
			return errorf(CodeMalformed, f.ptr, "%q is not a sha256 digest", f.v)
		}
	}
	return nil
}

func (r Request) object() map[string]any {
	return map[string]any{
		"kind": KindRequest, "protocol": Protocol,
		"intent_id": r.IntentID, "effect_type": r.EffectType,
		"action_digest": r.ActionDigest, "destination_digest": r.DestinationDigest,
		"payload": r.Payload,
	}
}

// Encode returns the canonical body of the request and its content digest.
func (r Request) Encode() (body []byte, digest string, err error) {
	if err := r.check(); err != nil {
		return nil, "", err
	}
	body, err = cjson.Encode(r.object())
	if err != nil {
		return nil, "", &Error{Code: CodeMalformed, Pointer: "/payload", Detail: err.Error()}
	}
	if len(body) > MaxRequestBytes {
		return nil, "", errorf(CodeTooLarge, "", "the request is %d bytes, the limit is %d", len(body), MaxRequestBytes)
	}
	return body, ContentDigest(body), nil
}

// requestBody is a request as its body is written, the payload kept as its
// text: the encoder copies text already canonical where the payload sits
// and decodes and encodes anything else, writing exactly what it writes
// for the decoded payload.
type requestBody struct {
	ActionDigest      string          `json:"action_digest"`
	DestinationDigest string          `json:"destination_digest"`
	EffectType        string          `json:"effect_type"`
	IntentID          string          `json:"intent_id"`
	Kind              string          `json:"kind"`
	Payload           json.RawMessage `json:"payload"`
	Protocol          string          `json:"protocol"`
}

// EncodeRequestText returns what NewRequest with the same arguments, then
// Encode, return when neither fails: the canonical body of the request and
// its content digest. A payload that is canonical text is copied into the
// body rather than decoded into a value to be encoded again. ok is false,
// and nothing returned, for a nil payload and wherever NewRequest or
// Encode could fail: their path then gives the body or the error.
func EncodeRequestText(intentID, effectType, actionDigest, destinationDigest string, payload []byte) (body []byte, digest string, ok bool) {
	r := Request{IntentID: intentID, EffectType: effectType, ActionDigest: actionDigest, DestinationDigest: destinationDigest}
	if payload == nil || r.check() != nil {
		return nil, "", false
	}
	if b, ok := ownRequestText(r, payload); ok {
		return b, ContentDigest(b), true
	}
	b, err := cjson.AppendMarshal(nil, requestBody{ActionDigest: actionDigest, DestinationDigest: destinationDigest, EffectType: effectType,
		IntentID: intentID, Kind: KindRequest, Payload: json.RawMessage(payload), Protocol: Protocol})
	if err != nil || len(b) > MaxRequestBytes {
		return nil, "", false
	}
	return b, ContentDigest(b), true
}

// ownRequestText writes, without the encoder's reflection, what
// cjson.AppendMarshal writes for r's requestBody with a payload that is
// canonical on its own and has fewer brackets than the nesting limit less
// two (so that one level down it is still canonical and within the limit,
// and is copied as it is). r is checked: its strings are identifiers and
// digests, plain ASCII, which cjson quotes as they are. ok is false for
// any other payload, or a body over the size limit.
func ownRequestText(r Request, payload []byte) ([]byte, bool) {
	if bytes.Count(payload, []byte{'{'})+bytes.Count(payload, []byte{'['}) >= cjson.MaxDepth-2 || !cjson.IsCanonical(payload) {
		return nil, false
	}
	const (
		kindAndPayload = `,"kind":"` + KindRequest + `","payload":`
		protocolAndEnd = `,"protocol":"` + Protocol + `"}`
	)
	n := len(`{"action_digest":,"destination_digest":,"effect_type":,"intent_id":`) + 8 + len(kindAndPayload) + len(protocolAndEnd) +
		len(r.ActionDigest) + len(r.DestinationDigest) + len(r.EffectType) + len(r.IntentID) + len(payload)
	if n > MaxRequestBytes {
		return nil, false
	}
	b := make([]byte, 0, n)
	b = append(b, `{"action_digest":`...)
	b = cjson.AppendString(b, r.ActionDigest)
	b = append(b, `,"destination_digest":`...)
	b = cjson.AppendString(b, r.DestinationDigest)
	b = append(b, `,"effect_type":`...)
	b = cjson.AppendString(b, r.EffectType)
	b = append(b, `,"intent_id":`...)
	b = cjson.AppendString(b, r.IntentID)
	b = append(b, kindAndPayload...)
	b = append(b, payload...)
	b = append(b, protocolAndEnd...)
	return b, len(b) == n
}

// ContentDigest returns the flrh digest ("sha256:<hex>") of body bytes.
func ContentDigest(body []byte) string { return cjson.Digest(body) }

// FormatContentDigest renders a flrh digest as an RFC 9530 Content-Digest
// field value. It reports false for anything that is not a sha256 digest.
func FormatContentDigest(digest string) (string, bool) {
	if !cjson.ValidDigest(digest) {
		return "", false
	}
	// Decoded and encoded on the stack, the field made in one allocation.
	var text [2 * sha256.Size]byte
	copy(text[:], digest[len("sha256:"):])
	var raw [sha256.Size]byte
	hex.Decode(raw[:], text[:])
	var buf [len("sha-256=::") + 44]byte
	b := append(buf[:0], "sha-256=:"...)
	b = base64.StdEncoding.AppendEncode(b, raw[:])
	return string(append(b, ':')), true
}

// ParseContentDigest reads an RFC 9530 Content-Digest field value and
// returns its sha-256 member as a flrh digest. Members for other algorithms
// are ignored; a value without exactly one well-formed sha-256 member is an
// error, because the body could then not be bound to its content.
func ParseContentDigest(field string) (string, error) {
	if d, ok := ownContentDigest(field); ok {
		return d, nil
	}
	return parseContentDigest(field)
}

// ownContentDigest reads a field that is exactly one well-formed sha-256
// member, as FormatContentDigest writes it, without splitting it: what
// parseContentDigest returns for it, in one allocation. ok is false for
// any other field.
func ownContentDigest(field string) (string, bool) {
	const prefix = "sha-256=:"
	if len(field) != len(prefix)+44+1 || field[:len(prefix)] != prefix || field[len(field)-1] != ':' {
		return "", false
	}
	var text [44]byte
	copy(text[:], field[len(prefix):])
	var raw [sha256.Size + 1]byte
	n, err := strictBase64.Decode(raw[:], text[:])
	if err != nil || n != sha256.Size {
		return "", false
	}
	var buf [len("sha256:") + 2*sha256.Size]byte
	b := append(buf[:0], "sha256:"...)
	return string(hex.AppendEncode(b, raw[:n])), true
}

// strictBase64 is the standard encoding, refusing non-zero padding bits.
var strictBase64 = base64.StdEncoding.Strict()

// parseContentDigest is ParseContentDigest for any field.
func parseContentDigest(field string) (string, error) {
	if strings.TrimSpace(field) == "" {
		return "", errorf(CodeMissingDigest, HeaderContentDigest, "the request has no content digest")
	}
	var found string
	for _, member := range strings.Split(field, ",") {
		member = strings.TrimSpace(member)
		name, value, ok := strings.Cut(member, "=")
		if !ok {
			return "", errorf(CodeInvalidDigest, HeaderContentDigest, "member %q has no value", member)
		}
		if name != "sha-256" {
			continue
		}
		if found != "" {
			return "", errorf(CodeInvalidDigest, HeaderContentDigest, "more than one sha-256 member")
		}
		if len(value) < 2 || value[0] != ':' || value[len(value)-1] != ':' {
			return "", errorf(CodeInvalidDigest, HeaderContentDigest, "the sha-256 member is not a byte sequence")
		}
		raw, err := base64.StdEncoding.Strict().DecodeString(value[1 : len(value)-1])
		if err != nil || len(raw) != sha256.Size {
			return "", errorf(CodeInvalidDigest, HeaderContentDigest, "the sha-256 member is not 32 bytes of base64")
		}
		found = "sha256:" + hex.EncodeToString(raw)
	}
	if found == "" {
		return "", errorf(CodeInvalidDigest, HeaderContentDigest, "no sha-256 member")
	}
	return found, nil
}

// ValidKey reports whether s can be an idempotency key: a protocol
// identifier (at most 128 characters of [A-Za-z0-9._:/-], starting with a
// letter or digit).
func ValidKey(s string) bool { return cjson.ValidID(s) }

// Mutation is a decoded, bound effect request as a destination sees it.
type Mutation struct {
	Key           string  // the Idempotency-Key header
	ContentDigest string  // the digest of the body, equal to the header's
	Body          []byte  // the canonical body bytes
	Request       Request // the decoded body
}

// DecodeRequest checks everything a destination must check before it may
// apply a mutation: the key is well formed, the body is within the size
// limit, the Content-Digest header matches the body bytes, the body is a
// canonical flrh-cjson/1 Request object with exactly the protocol's members.
// Any failure is an *Error and the request must not be applied.
func DecodeRequest(key, contentDigestField string, body []byte) (Mutation, error) {
	return decodeRequest(key, contentDigestField, body, true)
}

// CheckRequest is DecodeRequest for a destination that never reads the
// payload's value (the sandbox keeps the body's bytes): the same checks,
// the same errors, and the same Mutation except that Request.Payload is
// left nil. A canonical body is read member by member, without building
// its value; any other goes DecodeRequest's way.
func CheckRequest(key, contentDigestField string, body []byte) (Mutation, error) {
	m, err := decodeRequest(key, contentDigestField, body, false)
	m.Request.Payload = nil
	return m, err
}

// requestMembers are a request's members, sorted.
var requestMembers = []string{"action_digest", "destination_digest", "effect_type", "intent_id", "kind", "payload", "protocol"}

// ownRequest reads a canonical body (cjson.IsCanonical vouches for it)
// that has exactly the request's members, the request's kind and
// protocol, and its four strings without escapes: the Request DecodeRequest
// would read from it, less the payload's value. ok is false for anything
// else, which the general reading decodes (and refuses, where it does).
func ownRequest(body []byte) (Request, bool) {
	vals, ok := jsonread.OnlyMembers(body, requestMembers...)
	if !ok {
		return Request{}, false
	}
	for _, v := range vals {
		if v == nil {
			return Request{}, false
		}
	}
	if string(vals[4]) != `"`+KindRequest+`"` || string(vals[6]) != `"`+Protocol+`"` {
		return Request{}, false
	}
	var r Request
	for i, dst := range [...]*string{&r.ActionDigest, &r.DestinationDigest, &r.EffectType, &r.IntentID} {
		if *dst, ok = jsonread.PlainString(vals[i]); !ok {
			return Request{}, false
		}
	}
	return r, true
}

func decodeRequest(key, contentDigestField string, body []byte, payload bool) (Mutation, error) {
	if key == "" {
		return Mutation{}, errorf(CodeMissingKey, HeaderIdempotencyKey, "the request has no idempotency key")
	}
	if !ValidKey(key) {
		return Mutation{}, errorf(CodeInvalidKey, HeaderIdempotencyKey, "the key is not an identifier of at most 128 characters")
	}
	if len(body) > MaxRequestBytes {
		return Mutation{}, errorf(CodeTooLarge, "", "the body is over %d bytes", MaxRequestBytes)
	}
	claimed, err := ParseContentDigest(contentDigestField)
	if err != nil {
		return Mutation{}, err
	}
	actual := ContentDigest(body)
	if claimed != actual {
		return Mutation{}, errorf(CodeDigestMismatch, HeaderContentDigest, "the header names %s, the body is %s", claimed, actual)
	}
	if !payload && cjson.IsCanonical(body) {
		if r, ok := ownRequest(body); ok {
			if err := r.check(); err != nil {
				return Mutation{}, err
			}
			return Mutation{Key: key, ContentDigest: actual, Body: bytes.Clone(body), Request: r}, nil
		}
	}
	v, canon, err := decodeCanonical(body)
	if err != nil {
		return Mutation{}, err
	}
	o, err := closed(v, KindRequest, requestMembers)
	if err != nil {
		return Mutation{}, err
	}
	var r Request
	for _, f := range []struct {
		key string
		dst *string
	}{{"intent_id", &r.IntentID}, {"effect_type", &r.EffectType}, {"action_digest", &r.ActionDigest}, {"destination_digest", &r.DestinationDigest}} {
		if *f.dst, err = o.str(f.key); err != nil {
			return Mutation{}, err
		}
	}
	r.Payload = o.m["payload"]
	if err := r.check(); err != nil {
		return Mutation{}, err
	}
	return Mutation{Key: key, ContentDigest: actual, Body: canon, Request: r}, nil
}

// decodeCanonical decodes a body that must be canonical: its value and its
// canonical bytes (a copy of body), or the error. A body cjson.IsCanonical
// vouches for is decoded without being encoded again to be compared.
func decodeCanonical(body []byte) (any, []byte, error) {
	v, err := cjson.Decode(body)
	if err != nil {
		return nil, nil, wrapCJSON(err)
	}
	if cjson.IsCanonical(body) {
		return v, bytes.Clone(body), nil
	}
	canon, err := cjson.Encode(v)
	if err != nil {
		return nil, nil, wrapCJSON(err)
	}
	if !bytes.Equal(canon, body) {
		return nil, nil, errorf(CodeNotCanonical, "", "the body is not in flrh-cjson/1 canonical form")
	}
	return v, canon, nil
}

func wrapCJSON(err error) error {
	if ce, ok := err.(*cjson.Error); ok {
		return &Error{Code: CodeMalformed, Pointer: ce.Pointer, Detail: string(ce.Code) + ": " + ce.Detail}
	}
	return &Error{Code: CodeMalformed, Detail: err.Error()}
}

// obj is a decoded object whose member set was checked.
type obj struct{ m map[string]any }

// closed checks that v is an object of the given kind and protocol with
// exactly the given members (sorted), and returns it.
func closed(v any, kind string, members []string) (obj, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, errorf(CodeMalformed, "", "not a JSON object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, found := slices.BinarySearch(members, k); !found {
			return obj{}, errorf(CodeMalformed, "/"+cjson.EscapePointer(k), "unknown member")
		}
	}
	for _, k := range members {
		if _, ok := m[k]; !ok {
			return obj{}, errorf(CodeMalformed, "/"+k, "missing member")
		}
	}
	o := obj{m}
	if k, err := o.str("kind"); err != nil {
		return obj{}, err
	} else if k != kind {
		return obj{}, errorf(CodeMalformed, "/kind", "kind is %q, want %q", k, kind)
	}
	if p, err := o.str("protocol"); err != nil {
		return obj{}, err
	} else if p != Protocol {
		return obj{}, errorf(CodeMalformed, "/protocol", "protocol is %q, this side speaks %q", p, Protocol)
	}
	return o, nil
}

func (o obj) str(key string) (string, error) {
	s, ok := o.m[key].(string)
	if !ok {
		return "", errorf(CodeMalformed, "/"+key, "must be a string")
	}
	return s, nil
}

func (o obj) optStr(key string) (*string, error) {
	if o.m[key] == nil {
		return nil, nil
	}
	s, err := o.str(key)
	return &s, err
}

func (o obj) int(key string) (int64, error) {
	n, ok := o.m[key].(int64)
	if !ok {
		return 0, errorf(CodeMalformed, "/"+key, "must be an integer")
	}
	return n, nil
}
