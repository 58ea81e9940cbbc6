package httpwire

import (
	"bytes"
	"math"
	"strings"

	"golang.org/x/text/unicode/norm"

	"flrh.dev/flrh/cjson"
)

// HTTP status codes the classification names. They are spelled out here
// rather than imported so that this package stays free of the network stack.
const (
	statusRequestTimeout  = 408
	statusConflict        = 409
	statusTooEarly        = 425
	statusTooManyRequests = 429
)

// Result is a destination's answer to an applied mutation: the key and
// content it applied, and the sequence number the destination gave it.
type Result struct {
	IdempotencyKey string
	ContentDigest  string
	Sequence       int64
}

// resultSize is the length of a result's encoding less its key's and
// content digest's texts: its constant parts, their quotes and the longest
// sequence number. A key or digest that needs escapes grows it once.
const resultSize = len(`{"content_digest":""`) + len(`,"idempotency_key":""`) +
	len(`,"kind":"`+KindResult+`","protocol":"`+Protocol+`","sequence":`) + len("-9223372036854775808") +
	len(`,"status":"`+StatusApplied+`"}`)

// Encode returns the canonical bytes of the result. It is written by hand
// (members in sorted order) because every applied mutation encodes one; a
// test checks it against the general encoder.
func (r Result) Encode() []byte {
	b := make([]byte, 0, resultSize+len(r.IdempotencyKey)+len(r.ContentDigest))
	b = append(b, `{"content_digest":`...)
	b = cjson.AppendString(b, r.ContentDigest)
	b = append(b, `,"idempotency_key":`...)
	b = cjson.AppendString(b, r.IdempotencyKey)
	b = append(b, `,"kind":"`+KindResult+`","protocol":"`+Protocol+`","sequence":`...)
	b = cjson.AppendInt(b, r.Sequence)
	b = append(b, `,"status":"`+StatusApplied+`"}`...)
	return b
}

// encodeResultSlow is the general-encoder form of Result.Encode, kept as
// the oracle of its test.
func encodeResultSlow(r Result) []byte {
	return mustEncode(map[string]any{
		"kind": KindResult, "protocol": Protocol, "status": StatusApplied,
		"idempotency_key": r.IdempotencyKey, "content_digest": r.ContentDigest, "sequence": r.Sequence,
	})
}

// DecodeResult reads a success answer and checks that it witnesses the
// mutation that was sent: the same key and the same content digest. An
// answer that names another key or content witnesses some other effect and
// is reported as CodeBinding; it must never be taken as success.
func DecodeResult(body []byte, key, contentDigest string) (Result, error) {
	if r, ok := ownResult(body, key, contentDigest); ok {
		return r, nil
	}
	return decodeResult(body, key, contentDigest)
}

// decodeResult is DecodeResult the general way: the body decoded, its
// members checked and read.
func decodeResult(body []byte, key, contentDigest string) (Result, error) {
	o, err := decodeClosed(body, KindResult, []string{"content_digest", "idempotency_key", "kind", "protocol", "sequence", "status"})
	if err != nil {
		return Result{}, err
	}
	var r Result
	if r.IdempotencyKey, err = o.str("idempotency_key"); err != nil {
		return Result{}, err
	}
	if r.ContentDigest, err = o.str("content_digest"); err != nil {
		return Result{}, err
	}
	if r.Sequence, err = o.int("sequence"); err != nil {
		return Result{}, err
	}
	if s, err := o.str("status"); err != nil {
		return Result{}, err
	} else if s != StatusApplied {
		return Result{}, errorf(CodeMalformed, "/status", "a result's status is %q, want %q", s, StatusApplied)
	}
	if r.Sequence < 1 {
		return Result{}, errorf(CodeMalformed, "/sequence", "sequence numbers start at 1")
	}
	if r.IdempotencyKey != key {
		return Result{}, errorf(CodeBinding, "/idempotency_key", "the answer names key %q, the request sent %q", r.IdempotencyKey, key)
	}
	if r.ContentDigest != contentDigest {
		return Result{}, errorf(CodeBinding, "/content_digest", "the answer names content %s, the request sent %s", r.ContentDigest, contentDigest)
	}
	return r, nil
}

// ownResult reads a body that is exactly the canonical result for key and
// contentDigest (Result.Encode's bytes) with a sequence number of at least
// 1: what DecodeResult reads from it, without decoding it into a map. ok
// is false for any other body, which DecodeResult reads the general way.
func ownResult(body []byte, key, contentDigest string) (Result, bool) {
	if !cjson.Plain(key) || !cjson.Plain(contentDigest) || len(body) > MaxAnswerBytes {
		return Result{}, false
	}
	var buf [512]byte
	head := append(buf[:0], `{"content_digest":`...)
	head = cjson.AppendString(head, contentDigest)
	head = append(head, `,"idempotency_key":`...)
	head = cjson.AppendString(head, key)
	head = append(head, `,"kind":"`+KindResult+`","protocol":"`+Protocol+`","sequence":`...)
	const tail = `,"status":"` + StatusApplied + `"}`
	if !bytes.HasPrefix(body, head) || !bytes.HasSuffix(body, []byte(tail)) || len(body) < len(head)+len(tail) {
		return Result{}, false
	}
	digits := body[len(head) : len(body)-len(tail)]
	if len(digits) == 0 || len(digits) > 19 || digits[0] < '1' || digits[0] > '9' {
		return Result{}, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' || n > (math.MaxInt64-int64(c-'0'))/10 {
			return Result{}, false
		}
		n = n*10 + int64(c-'0')
	}
	return Result{IdempotencyKey: key, ContentDigest: contentDigest, Sequence: n}, true
}

// LookupAnswer is a destination's answer to "what happened to this key?".
// ContentDigest and Sequence are set for applied and conflict (the content
// the destination applied under the key); ContentDigest may be set for
// in_progress; both are nil for not_applied.
type LookupAnswer struct {
	IdempotencyKey string
	Status         string
	ContentDigest  *string
	Sequence       *int64
}

// Encode returns the canonical bytes of the answer.
func (a LookupAnswer) Encode() []byte {
	m := map[string]any{
		"kind": KindLookup, "protocol": Protocol, "idempotency_key": a.IdempotencyKey,
		"status": a.Status, "content_digest": nil, "sequence": nil,
	}
	if a.ContentDigest != nil {
		m["content_digest"] = *a.ContentDigest
	}
	if a.Sequence != nil {
		m["sequence"] = *a.Sequence
	}
	return mustEncode(m)
}

// DecodeLookup reads a lookup answer and checks its shape and that it
// answers for the key asked about.
func DecodeLookup(body []byte, key string) (LookupAnswer, error) {
	o, err := decodeClosed(body, KindLookup, []string{"content_digest", "idempotency_key", "kind", "protocol", "sequence", "status"})
	if err != nil {
		return LookupAnswer{}, err
	}
	var a LookupAnswer
	if a.IdempotencyKey, err = o.str("idempotency_key"); err != nil {
		return LookupAnswer{}, err
	}
	if a.IdempotencyKey != key {
		return LookupAnswer{}, errorf(CodeBinding, "/idempotency_key", "the answer is for key %q, the lookup asked for %q", a.IdempotencyKey, key)
	}
	if a.Status, err = o.str("status"); err != nil {
		return LookupAnswer{}, err
	}
	if a.ContentDigest, err = o.optStr("content_digest"); err != nil {
		return LookupAnswer{}, err
	}
	if a.ContentDigest != nil && !cjson.ValidDigest(*a.ContentDigest) {
		return LookupAnswer{}, errorf(CodeMalformed, "/content_digest", "not a sha256 digest")
	}
	if o.m["sequence"] != nil {
		n, err := o.int("sequence")
		if err != nil {
			return LookupAnswer{}, err
		}
		if n < 1 {
			return LookupAnswer{}, errorf(CodeMalformed, "/sequence", "sequence numbers start at 1")
		}
		a.Sequence = &n
	}
	switch a.Status {
	case StatusApplied, StatusConflict:
		if a.ContentDigest == nil || a.Sequence == nil {
			return LookupAnswer{}, errorf(CodeMalformed, "/content_digest", "an %s answer names the applied content and its sequence", a.Status)
		}
	case StatusNotApplied:
		if a.ContentDigest != nil || a.Sequence != nil {
			return LookupAnswer{}, errorf(CodeMalformed, "/content_digest", "a not_applied answer names no content")
		}
	case StatusInProgress:
		if a.Sequence != nil {
			return LookupAnswer{}, errorf(CodeMalformed, "/sequence", "an in_progress answer has no sequence yet")
		}
	default:
		return LookupAnswer{}, errorf(CodeMalformed, "/status", "unknown lookup status %q", a.Status)
	}
	return a, nil
}

// Problem is a destination's typed refusal.
type Problem struct {
	Code   string
	Detail string
}

// Encode returns the canonical bytes of the problem. A detail often quotes
// what a request sent (a header's value, an error's text), which need not
// be canonical text: it is made valid UTF-8 (each bad byte U+FFFD) in
// Unicode NFC first, so that a problem always encodes.
func (p Problem) Encode() []byte {
	return mustEncode(map[string]any{"kind": KindProblem, "protocol": Protocol, "code": p.Code, "detail": canonicalText(p.Detail)})
}

// canonicalText is s as a canonical string can hold it: valid UTF-8, NFC.
func canonicalText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if norm.NFC.IsNormalString(s) {
		return s
	}
	return norm.NFC.String(s)
}

// DecodeProblem reads a problem answer.
func DecodeProblem(body []byte) (Problem, error) {
	o, err := decodeClosed(body, KindProblem, []string{"code", "detail", "kind", "protocol"})
	if err != nil {
		return Problem{}, err
	}
	var p Problem
	if p.Code, err = o.str("code"); err != nil {
		return Problem{}, err
	}
	if p.Detail, err = o.str("detail"); err != nil {
		return Problem{}, err
	}
	return p, nil
}

func decodeClosed(body []byte, kind string, members []string) (obj, error) {
	if len(body) > MaxAnswerBytes {
		return obj{}, errorf(CodeTooLarge, "", "the answer is over %d bytes", MaxAnswerBytes)
	}
	v, err := cjson.Decode(body)
	if err != nil {
		return obj{}, wrapCJSON(err)
	}
	return closed(v, kind, members)
}

// mustEncode encodes an object built here from strings and integers, which
// always has a canonical form; a failure is a defect in this package.
func mustEncode(m map[string]any) []byte {
	b, err := cjson.Encode(m)
	if err != nil {
		panic("httpwire: encoding a protocol object: " + err.Error())
	}
	return b
}

// Class is how an answer to a mutation is to be treated.
type Class uint8

// The classes. The zero Class is invalid, so a forgotten classification
// cannot pass for any of them.
const (
	ClassSuccess   Class = iota + 1 // the destination applied the mutation
	ClassPermanent                  // refused; retrying the same content cannot help
	ClassTransient                  // not applied; the same request may be retried later
	ClassUnknown                    // it may or may not have been applied: reconcile
)

func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "success"
	case ClassPermanent:
		return "permanent_failure"
	case ClassTransient:
		return "transient_failure"
	case ClassUnknown:
		return "unknown"
	}
	return "invalid"
}

// ClassifyStatus classifies a complete answer by its HTTP status and, for a
// 409, the problem code of its body ("" when the body was not a problem).
//
//   - 2xx: success (the caller must still check the body with DecodeResult).
//   - 408, 425, 429 and 5xx: transient; the destination says it did not
//     finish the request, and a retry with the same key and content is safe
//     because the destination deduplicates by key.
//   - 409 IDEMPOTENCY_KEY_CONFLICT: permanent; the key was used for other
//     content, and this content was not applied.
//   - any other 409 (a request with this key is in flight, or an untyped
//     conflict): unknown; only a lookup can tell what was applied.
//   - every other status (other 4xx, and 1xx or 3xx as final answers, since
//     redirects are not followed): permanent.
func ClassifyStatus(status int, problemCode string) Class {
	switch {
	case status >= 200 && status <= 299:
		return ClassSuccess
	case status == statusRequestTimeout, status == statusTooEarly, status == statusTooManyRequests:
		return ClassTransient
	case status >= 500 && status <= 599:
		return ClassTransient
	case status == statusConflict:
		if problemCode == CodeKeyConflict {
			return ClassPermanent
		}
		return ClassUnknown
	}
	return ClassPermanent
}

// Verdict is what a lookup answer proves about the content asked about.
type Verdict uint8

// The verdicts. The zero Verdict is invalid.
const (
	VerdictApplied    Verdict = iota + 1 // this exact content was applied under the key
	VerdictNotApplied                    // nothing was applied under the key, and nothing is in flight
	VerdictPending                       // a request with the key is in flight: ask again later
	VerdictHuman                         // the key holds other content: a person must decide
)

func (v Verdict) String() string {
	switch v {
	case VerdictApplied:
		return "applied"
	case VerdictNotApplied:
		return "not_applied"
	case VerdictPending:
		return "pending"
	case VerdictHuman:
		return "human_required"
	}
	return "invalid"
}

// Judge reads a decoded lookup answer against the content digest of the
// request whose outcome is in question. Applied counts only when the
// destination names exactly that content; the same key holding other
// content is never taken as success or as not-applied.
func Judge(a LookupAnswer, contentDigest string) Verdict {
	switch a.Status {
	case StatusApplied:
		if a.ContentDigest != nil && *a.ContentDigest == contentDigest {
			return VerdictApplied
		}
		return VerdictHuman
	case StatusNotApplied:
		return VerdictNotApplied
	case StatusInProgress:
		if a.ContentDigest != nil && *a.ContentDigest != contentDigest {
			return VerdictHuman
		}
		return VerdictPending
	}
	return VerdictHuman
}
