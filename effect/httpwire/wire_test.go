package httpwire

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/determinism"
)

const (
	dA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	dB = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func sampleRequest(t testing.TB) Request {
	t.Helper()
	r, err := NewRequest("intent:1", "refund", dA, dB, []byte(`{"amount":1250,"currency":"EUR","payee":"acct:7","lines":[3,1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func headerFor(t interface{ Fatal(...any) }, body []byte) string {
	h, ok := FormatContentDigest(ContentDigest(body))
	if !ok {
		t.Fatal("FormatContentDigest refused a digest it made")
	}
	return h
}

func codeOf(err error) string {
	var we *Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}

// The example of RFC 9530 §2: the content {"hello": "world"} has the
// sha-256 Content-Digest below. Parsing it must name the same SHA-256 that
// ContentDigest computes over those bytes.
func TestContentDigestRFC9530Example(t *testing.T) {
	body := []byte(`{"hello": "world"}`)
	for _, field := range []string{
		"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:",
		"sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:, sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:",
	} {
		got, err := ParseContentDigest(field)
		if err != nil {
			t.Fatalf("%q: %v", field, err)
		}
		if got != ContentDigest(body) {
			t.Errorf("%q parses to %s, the body's digest is %s", field, got, ContentDigest(body))
		}
	}
	h, _ := FormatContentDigest(ContentDigest(body))
	if h != "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:" {
		t.Errorf("FormatContentDigest = %q", h)
	}
}

func TestParseContentDigestRejects(t *testing.T) {
	good := "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
	for _, tc := range []struct{ field, code string }{
		{"", CodeMissingDigest},
		{"   ", CodeMissingDigest},
		{"sha-512=:AAAA:", CodeInvalidDigest},
		{"sha-256", CodeInvalidDigest},
		{"sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=", CodeInvalidDigest},
		{"sha-256=:AAAA:", CodeInvalidDigest},
		{"sha-256=:not base64!:", CodeInvalidDigest},
		{good + ", " + good, CodeInvalidDigest},
	} {
		if _, err := ParseContentDigest(tc.field); codeOf(err) != tc.code {
			t.Errorf("ParseContentDigest(%q) = %v, want code %s", tc.field, err, tc.code)
		}
	}
	if _, ok := FormatContentDigest("sha256:XYZ"); ok {
		t.Error("FormatContentDigest accepted a malformed digest")
	}
}

func TestRequestRoundTrip(t *testing.T) {
	r := sampleRequest(t)
	body, digest, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action_digest":"` + dA + `","destination_digest":"` + dB + `","effect_type":"refund","intent_id":"intent:1","kind":"EffectRequest","payload":{"amount":1250,"currency":"EUR","lines":[3,1,2],"payee":"acct:7"},"protocol":"flrh-effect-http/1"}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	if digest != cjson.Digest(body) {
		t.Errorf("digest %s is not the body's %s", digest, cjson.Digest(body))
	}
	m, err := DecodeRequest("effect:abc", headerFor(t, body), body)
	if err != nil {
		t.Fatal(err)
	}
	if m.Key != "effect:abc" || m.ContentDigest != digest || !bytes.Equal(m.Body, body) || m.Request.IntentID != "intent:1" || m.Request.EffectType != "refund" {
		t.Errorf("decoded %+v", m)
	}
	// Encoding is a pure function of the request.
	determinism.Check(t, r, func(r Request) string { b, d, _ := r.Encode(); return string(b) + d })
}

func TestNewRequestRejects(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		intent, typ, action, dest string
		payload                   string
		ptr                       string
	}{
		{"bad intent id", "", "refund", dA, dB, `{}`, "/intent_id"},
		{"bad effect type", "intent:1", "re fund", dA, dB, `{}`, "/effect_type"},
		{"bad action digest", "intent:1", "refund", "sha256:1", dB, `{}`, "/action_digest"},
		{"bad destination digest", "intent:1", "refund", dA, "x", `{}`, "/destination_digest"},
		{"float payload", "intent:1", "refund", dA, dB, `{"amount":1.5}`, "/payload"},
		{"broken payload", "intent:1", "refund", dA, dB, `{"amount":`, "/payload"},
	} {
		_, err := NewRequest(tc.intent, tc.typ, tc.action, tc.dest, []byte(tc.payload))
		var we *Error
		if !errors.As(err, &we) || we.Pointer != tc.ptr {
			t.Errorf("%s: err = %v, want an *Error at %s", tc.name, err, tc.ptr)
		}
	}
	if r, err := NewRequest("intent:1", "refund", dA, dB, nil); err != nil || r.Payload != nil {
		t.Errorf("nil payload: %v %v", r, err)
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	r := sampleRequest(t)
	body, _, _ := r.Encode()
	hdr := headerFor(t, body)
	sub := func(old, new string) []byte { return []byte(strings.Replace(string(body), old, new, 1)) }
	withHeader := func(b []byte) (string, []byte) { return headerFor(t, b), b }

	type tc struct {
		name, key, header string
		body              []byte
		code              string
	}
	cases := []tc{
		{"no key", "", hdr, body, CodeMissingKey},
		{"key with space", "effect 1", hdr, body, CodeInvalidKey},
		{"key too long", strings.Repeat("k", 129), hdr, body, CodeInvalidKey},
		{"no digest", "effect:1", "", body, CodeMissingDigest},
		{"digest of other bytes", "effect:1", headerFor(t, []byte("{}")), body, CodeDigestMismatch},
		{"too large", "effect:1", hdr, bytes.Repeat([]byte(" "), MaxRequestBytes+1), CodeTooLarge},
	}
	h, b := withHeader(append([]byte(" "), body...))
	cases = append(cases, tc{"leading space", "effect:1", h, b, CodeNotCanonical})
	h, b = withHeader([]byte(`{"kind":"EffectRequest","protocol":"flrh-effect-http/1","kind":"x"}`))
	cases = append(cases, tc{"duplicate key", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"amount":1250`, `"amount":12.5`))
	cases = append(cases, tc{"float", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"kind":"EffectRequest"`, `"kind":"EffectResult"`))
	cases = append(cases, tc{"wrong kind", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"protocol":"flrh-effect-http/1"`, `"protocol":"flrh-effect-http/2"`))
	cases = append(cases, tc{"wrong protocol", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"intent_id"`, `"intent_ie"`))
	cases = append(cases, tc{"unknown member", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"effect_type":"refund"`, `"effect_type":7`))
	cases = append(cases, tc{"wrong type", "effect:1", h, b, CodeMalformed})
	h, b = withHeader(sub(`"action_digest":"sha256:1`, `"action_digest":"sha256:X`))
	cases = append(cases, tc{"bad digest member", "effect:1", h, b, CodeMalformed})
	h, b = withHeader([]byte(`[1,2]`))
	cases = append(cases, tc{"array", "effect:1", h, b, CodeMalformed})

	for _, c := range cases {
		if _, err := DecodeRequest(c.key, c.header, c.body); codeOf(err) != c.code {
			t.Errorf("%s: err = %v, want code %s", c.name, err, c.code)
		}
	}
}

func TestClassifyStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		want   Class
	}{
		{200, "", ClassSuccess}, {201, "", ClassSuccess}, {204, "", ClassSuccess}, {299, "", ClassSuccess},
		{408, "", ClassTransient}, {425, "", ClassTransient}, {429, "", ClassTransient},
		{500, "", ClassTransient}, {502, "", ClassTransient}, {503, "", ClassTransient}, {504, "", ClassTransient}, {599, "", ClassTransient},
		{409, CodeKeyConflict, ClassPermanent}, {409, CodeInProgress, ClassUnknown}, {409, "", ClassUnknown},
		{400, "", ClassPermanent}, {401, "", ClassPermanent}, {403, "", ClassPermanent}, {404, "", ClassPermanent},
		{410, "", ClassPermanent}, {413, "", ClassPermanent}, {422, "", ClassPermanent}, {451, "", ClassPermanent},
		{301, "", ClassPermanent}, {307, "", ClassPermanent}, {100, "", ClassPermanent}, {600, "", ClassPermanent},
		// A problem code does not change the class of a non-409 status.
		{503, CodeKeyConflict, ClassTransient}, {400, CodeInProgress, ClassPermanent},
	} {
		if got := ClassifyStatus(tc.status, tc.code); got != tc.want {
			t.Errorf("ClassifyStatus(%d, %q) = %v, want %v", tc.status, tc.code, got, tc.want)
		}
	}
	if Class(0).String() != "invalid" || Verdict(0).String() != "invalid" {
		t.Error("the zero class and verdict must not name a valid one")
	}
}

func TestResultBinding(t *testing.T) {
	res := Result{IdempotencyKey: "effect:1", ContentDigest: dA, Sequence: 3}
	b := res.Encode()
	if got, err := DecodeResult(b, "effect:1", dA); err != nil || got != res {
		t.Fatalf("DecodeResult = %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name, key, digest string
		body              []byte
		code              string
	}{
		{"other key", "effect:2", dA, b, CodeBinding},
		{"other content", "effect:1", dB, b, CodeBinding},
		{"zero sequence", "effect:1", dA, Result{IdempotencyKey: "effect:1", ContentDigest: dA}.Encode(), CodeMalformed},
		{"problem instead", "effect:1", dA, Problem{Code: "X", Detail: "y"}.Encode(), CodeMalformed},
		{"not json", "effect:1", dA, []byte("OK"), CodeMalformed},
		{"too large", "effect:1", dA, bytes.Repeat([]byte(" "), MaxAnswerBytes+1), CodeTooLarge},
		{"extra member", "effect:1", dA, []byte(strings.Replace(string(b), `"kind"`, `"extra":1,"kind"`, 1)), CodeMalformed},
	} {
		if _, err := DecodeResult(tc.body, tc.key, tc.digest); codeOf(err) != tc.code {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.code)
		}
	}
}

func TestLookupAnswersAndJudge(t *testing.T) {
	a, b := dA, dB
	seq := int64(4)
	for _, tc := range []struct {
		name   string
		ans    LookupAnswer
		digest string
		want   Verdict
	}{
		{"applied, same content", LookupAnswer{"effect:1", StatusApplied, &a, &seq}, dA, VerdictApplied},
		{"applied, other content", LookupAnswer{"effect:1", StatusApplied, &b, &seq}, dA, VerdictHuman},
		{"conflict", LookupAnswer{"effect:1", StatusConflict, &b, &seq}, dA, VerdictHuman},
		{"not applied", LookupAnswer{"effect:1", StatusNotApplied, nil, nil}, dA, VerdictNotApplied},
		{"in progress, same content", LookupAnswer{"effect:1", StatusInProgress, &a, nil}, dA, VerdictPending},
		{"in progress, unnamed content", LookupAnswer{"effect:1", StatusInProgress, nil, nil}, dA, VerdictPending},
		{"in progress, other content", LookupAnswer{"effect:1", StatusInProgress, &b, nil}, dA, VerdictHuman},
	} {
		// Every answer survives its own wire form, then is judged.
		got, err := DecodeLookup(tc.ans.Encode(), "effect:1")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if v := Judge(got, tc.digest); v != tc.want {
			t.Errorf("%s: Judge = %v, want %v", tc.name, v, tc.want)
		}
	}
	if v := Judge(LookupAnswer{Status: "maybe"}, dA); v != VerdictHuman {
		t.Errorf("an unknown status judged %v", v)
	}
	for _, tc := range []struct {
		name string
		ans  LookupAnswer
	}{
		{"applied without content", LookupAnswer{"effect:1", StatusApplied, nil, &seq}},
		{"applied without sequence", LookupAnswer{"effect:1", StatusApplied, &a, nil}},
		{"not applied with content", LookupAnswer{"effect:1", StatusNotApplied, &a, nil}},
		{"in progress with sequence", LookupAnswer{"effect:1", StatusInProgress, &a, &seq}},
		{"unknown status", LookupAnswer{"effect:1", "maybe", nil, nil}},
	} {
		if _, err := DecodeLookup(tc.ans.Encode(), "effect:1"); codeOf(err) != CodeMalformed {
			t.Errorf("%s: err = %v, want MALFORMED_BODY", tc.name, err)
		}
	}
	if _, err := DecodeLookup(LookupAnswer{"effect:2", StatusNotApplied, nil, nil}.Encode(), "effect:1"); codeOf(err) != CodeBinding {
		t.Errorf("an answer for another key: %v", err)
	}
}

func TestProblemRoundTrip(t *testing.T) {
	p := Problem{Code: CodeKeyConflict, Detail: "key reused"}
	got, err := DecodeProblem(p.Encode())
	if err != nil || got != p {
		t.Fatalf("DecodeProblem = %+v, %v", got, err)
	}
}

// jsonValue draws a value of the cjson model: nested objects and arrays of
// strings, integers, booleans and null.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		k := rapid.IntRange(0, 5).Draw(t, "k")
		if depth >= 3 && k >= 4 {
			k = 0
		}
		switch k {
		case 0:
			return rapid.Int64().Draw(t, "int")
		case 1:
			return rapid.StringMatching(`[a-zA-Z0-9 é€"\\]{0,12}`).Draw(t, "str")
		case 2:
			if rapid.Bool().Draw(t, "null") {
				return nil
			}
			return rapid.Bool().Draw(t, "bool")
		case 3:
			return rapid.Int64Range(-5, 5).Draw(t, "small")
		case 4:
			return rapid.SliceOfN(jsonValue(depth+1), 0, 4).Draw(t, "arr")
		}
		return rapid.MapOfN(rapid.StringMatching(`[a-z_]{1,6}`), jsonValue(depth+1), 0, 4).Draw(t, "obj")
	})
}

// Property: any payload round-trips through the wire and back to the same
// canonical bytes and digest, and changing any single byte of the body makes
// the destination refuse it (the content is bound to the digest).
func TestPropertyRequestBinding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := jsonValue(0).Draw(t, "payload")
		var payload any
		if m, ok := v.(map[string]any); ok {
			obj := map[string]any{}
			for k, x := range m {
				obj[k] = x
			}
			payload = obj
		} else {
			payload = v
		}
		text, err := cjson.Encode(payload)
		if err != nil {
			t.Skip("value outside the model:", err)
		}
		r, err := NewRequest("intent:p", "write", dA, dB, text)
		if err != nil {
			t.Fatal(err)
		}
		body, digest, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeRequest("effect:p", headerFor(t, body), body)
		if err != nil {
			t.Fatalf("own request refused: %v\n%s", err, body)
		}
		if m.ContentDigest != digest || !bytes.Equal(m.Body, body) {
			t.Fatal("round trip changed the content")
		}
		i := rapid.IntRange(0, len(body)-1).Draw(t, "i")
		tampered := bytes.Clone(body)
		tampered[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "x"))
		if _, err := DecodeRequest("effect:p", headerFor(t, body), tampered); codeOf(err) != CodeDigestMismatch {
			t.Fatalf("a tampered body was not refused as a digest mismatch: %v", err)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	r := sampleRequest(f)
	body, _, _ := r.Encode()
	f.Add("effect:1", headerFor(f, body), body)
	f.Add("effect:1", "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:", []byte(`{"hello": "world"}`))
	f.Add("", "", []byte(`{}`))
	f.Add("k", "sha-256=::", []byte(`{"kind":"EffectRequest","payload":1.5}`))
	f.Fuzz(func(t *testing.T, key, field string, body []byte) {
		m, err := DecodeRequest(key, field, body)
		if err != nil {
			if codeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever is accepted is canonical, bound to its digest, and the
		// decoded request re-encodes to exactly the same bytes.
		if m.ContentDigest != ContentDigest(body) || !bytes.Equal(m.Body, body) {
			t.Fatal("accepted content is not the body")
		}
		again, d, err := m.Request.Encode()
		if err != nil || !bytes.Equal(again, body) || d != m.ContentDigest {
			t.Fatalf("accepted request does not re-encode to itself: %v", err)
		}
	})
}

func BenchmarkEncodeRequest(b *testing.B) {
	r := sampleRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest(b *testing.B) {
	r := sampleRequest(b)
	body, _, _ := r.Encode()
	field := headerFor(b, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest("effect:1", field, body); err != nil {
			b.Fatal(err)
		}
	}
}

// Differential: the hand-written result encoder agrees with the general
// canonical encoder on every key, digest and sequence, including strings
// that need escaping.
func TestPropertyResultEncoderMatchesCanonical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := Result{
			IdempotencyKey: rapid.StringMatching(`[A-Za-z0-9._:/"\\\x01é-]{0,40}`).Draw(t, "key"),
			ContentDigest:  rapid.StringMatching(`[a-z0-9:"\\\n]{0,80}`).Draw(t, "digest"),
			Sequence:       rapid.Int64().Draw(t, "seq"),
		}
		if got, want := r.Encode(), encodeResultSlow(r); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// payloadText draws a payload's text: canonical, or edited into what the
// decoder reads otherwise, refuses, or nests to the depth limit.
func payloadText(t *rapid.T) []byte {
	text, err := cjson.Encode(jsonValue(0).Draw(t, "payload"))
	if err != nil {
		t.Fatal(err)
	}
	switch rapid.IntRange(0, 9).Draw(t, "edit") {
	case 1:
		return append([]byte(" "), text...)
	case 2:
		return []byte(`{"b":1,"a":[3,1,2],"kind":"EffectIntent","preconditions":["z","a"]}`)
	case 3:
		return []byte(`{"a":"\u0041","n":-0}`)
	case 4:
		return []byte(`{"a":1,"a":2}`)
	case 5:
		return []byte("\"\xff\"")
	case 6:
		return text[:rapid.IntRange(0, len(text)).Draw(t, "cut")]
	case 7:
		n := rapid.IntRange(cjson.MaxDepth-3, cjson.MaxDepth+1).Draw(t, "depth")
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	case 8:
		return []byte(`{"x":"` + strings.Repeat("y", MaxRequestBytes) + `"}`)
	case 9:
		return nil
	}
	return text
}

// EncodeRequestText writes exactly what NewRequest and Encode write, and
// declines wherever either fails; it writes the ordinary requests itself.
func TestEncodeRequestTextMatchesNewRequest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		payload := payloadText(t)
		// Mostly a request NewRequest encodes, so that the writer's own
		// path is met as often as the declines.
		id := rapid.SampledFrom([]string{"intent:1", "intent:1", "intent:1", "bad id", ""}).Draw(t, "id")
		typ := rapid.SampledFrom([]string{"refund", "refund", "refund", "ré"}).Draw(t, "type")
		action := rapid.SampledFrom([]string{dA, dA, dA, "sha256:x"}).Draw(t, "action")
		body, digest, ok := EncodeRequestText(id, typ, action, dB, payload)
		r, err := NewRequest(id, typ, action, dB, payload)
		var want []byte
		var wantDigest string
		if err == nil {
			want, wantDigest, err = r.Encode()
		}
		if ok && (err != nil || !bytes.Equal(body, want) || digest != wantDigest) {
			t.Fatalf("payload %.200q: written %.300s %s, NewRequest %.300s %s %v", payload, body, digest, want, wantDigest, err)
		}
		if !ok && err == nil && payload != nil {
			t.Fatalf("payload %.200q: declined a request NewRequest encodes", payload)
		}
	})
}

// decodeCanonical answers as decoding, encoding again and comparing
// does: the same value, the same bytes, the same error.
func TestDecodeCanonicalMatchesReencoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := payloadText(t)
		v, canon, err := decodeCanonical(body)
		var wantV any
		var want []byte
		wantErr := func() error {
			var err error
			if wantV, err = cjson.Decode(body); err != nil {
				return wrapCJSON(err)
			}
			if want, err = cjson.Encode(wantV); err != nil {
				return wrapCJSON(err)
			}
			if !bytes.Equal(want, body) {
				return errorf(CodeNotCanonical, "", "the body is not in flrh-cjson/1 canonical form")
			}
			return nil
		}()
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%.200q: error %v, want %v", body, err, wantErr)
		}
		if err == nil && (!bytes.Equal(canon, want) || !reflect.DeepEqual(v, wantV)) {
			t.Fatalf("%.200q: %.200s, want %.200s", body, canon, want)
		}
		if err == nil && len(body) > 0 && &canon[0] == &body[0] {
			t.Fatal("the canonical bytes share the caller's body")
		}
	})
}

// DecodeResult answers every body as the general reading does, the
// result's own canonical bytes included, which it reads without it.
func TestDecodeResultMatchesTheGeneralReading(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.SampledFrom([]string{"effect:1", "effect:2", "é", `a"b`}).Draw(t, "key")
		digest := rapid.SampledFrom([]string{dA, dB}).Draw(t, "digest")
		// Mostly the answer to what was sent, now and then another's.
		res := Result{IdempotencyKey: key, ContentDigest: digest,
			Sequence: rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{0, 1, -1, 7, math.MaxInt64, math.MinInt64})).Draw(t, "sequence")}
		if rapid.IntRange(0, 3).Draw(t, "other answer") == 0 {
			res.IdempotencyKey = rapid.SampledFrom([]string{"effect:1", "effect:2", "é", `a"b`}).Draw(t, "answer key")
			res.ContentDigest = rapid.SampledFrom([]string{dA, dB}).Draw(t, "answer digest")
		}
		body := res.Encode()
		switch rapid.IntRange(0, 6).Draw(t, "edit") {
		case 1:
			body = append(body, ' ')
		case 2:
			seq := fmt.Sprint(res.Sequence)
			body = bytes.Replace(body, []byte(`"sequence":`+seq), []byte(`"sequence":0`+seq), 1)
		case 3:
			body = bytes.Replace(body, []byte(`"sequence":`), []byte(`"sequence":99999999999999999999`), 1)
		case 4:
			body = body[:rapid.IntRange(0, len(body)).Draw(t, "cut")]
		case 5:
			body = bytes.Replace(body, []byte(`"applied"`), []byte(`"not_applied"`), 1)
		case 6:
			body = bytes.Replace(body, []byte(`"sequence":`), []byte(`"sequence":1.`), 1)
		}
		got, err := DecodeResult(body, key, digest)
		want, wantErr := decodeResult(body, key, digest)
		if got != want || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%s: %+v %v, the general reading %+v %v", body, got, err, want, wantErr)
		}
	})
	res := Result{IdempotencyKey: "effect:1", ContentDigest: dA, Sequence: 7}
	if _, ok := ownResult(res.Encode(), "effect:1", dA); !ok {
		t.Fatal("the result's own bytes are read the general way")
	}
}

// CheckRequest accepts and refuses exactly what DecodeRequest does, with
// the same errors, and returns the same Mutation without the payload's
// value: over requests the encoder writes, their texts edited member by
// member, tampered bytes and wrong headers.
func TestCheckRequestMatchesDecodeRequest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Mostly what the encoder writes, so that each edit below is met
		// alone as often as in company.
		often := func(name string) bool { return rapid.IntRange(0, 9).Draw(t, name) > 0 }
		payload := payloadText(t)
		if len(payload) > 4096 {
			payload = []byte(`{"x":1}`)
		}
		if often("usual payload") {
			payload = []byte(`{"amount":1250,"currency":"EUR"}`)
		}
		if payload == nil {
			payload = []byte("null")
		}
		str := func(name, usual string) string {
			if often(name + "?") {
				return usual
			}
			return rapid.SampledFrom([]string{"intent:2", "refund", dA, dB, "", "bad id", "ré", `q"uote`, "sha256:x", KindRequest, Protocol, "tab\there"}).Draw(t, name)
		}
		members := []string{
			`"action_digest":` + string(cjson.AppendString(nil, str("action", dA))),
			`"destination_digest":` + string(cjson.AppendString(nil, str("dest", dB))),
			`"effect_type":` + string(cjson.AppendString(nil, str("type", "refund"))),
			`"intent_id":` + string(cjson.AppendString(nil, str("id", "intent:1"))),
			`"kind":` + string(cjson.AppendString(nil, str("kind", KindRequest))),
			`"payload":` + string(payload),
			`"protocol":` + string(cjson.AppendString(nil, str("protocol", Protocol))),
		}
		shape := 0
		if !often("usual shape") {
			shape = rapid.IntRange(1, 5).Draw(t, "shape")
		}
		switch shape {
		case 1: // a member left out
			i := rapid.IntRange(0, len(members)-1).Draw(t, "drop")
			members = append(members[:i:i], members[i+1:]...)
		case 2: // a member added
			extra := rapid.SampledFrom([]string{`"zeta":1`, `"aa":"x"`, `"Kind":"EffectRequest"`, `"kïnd":1`}).Draw(t, "extra")
			members = append(members, extra)
		case 3: // a member given twice
			i := rapid.IntRange(0, len(members)-1).Draw(t, "twice")
			members = append(members, members[i])
		case 4: // members out of order
			i := rapid.IntRange(0, len(members)-2).Draw(t, "swap")
			members[i], members[i+1] = members[i+1], members[i]
		case 5: // a string member's value of another type
			i := rapid.SampledFrom([]int{0, 1, 2, 3, 4, 6}).Draw(t, "member")
			k, _, _ := strings.Cut(members[i], ":")
			members[i] = k + ":" + rapid.SampledFrom([]string{"1", "null", `["x"]`, `{}`, `"\u0041"`, `"a\\"`}).Draw(t, "other")
		}
		body := []byte("{" + strings.Join(members, ",") + "}")
		if !often("unwrapped") {
			body = []byte(rapid.SampledFrom([]string{"[]", "null", `"x"`, " " + string(body), string(body) + " "}).Draw(t, "text"))
		}
		key := "effect:1"
		if !often("usual key") {
			key = rapid.SampledFrom([]string{"", "bad key"}).Draw(t, "key")
		}
		field := headerFor(t, body)
		if !often("usual header") {
			field = rapid.SampledFrom([]string{"", headerFor(t, []byte("other"))}).Draw(t, "header")
		}
		if !often("untampered") && len(body) > 0 {
			i := rapid.IntRange(0, len(body)-1).Draw(t, "at")
			body = bytes.Clone(body)
			body[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "x"))
		}
		got, gotErr := CheckRequest(key, field, body)
		want, wantErr := DecodeRequest(key, field, body)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || codeOf(gotErr) != codeOf(wantErr) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("errors differ for %s:\n got %v\nwant %v", body, gotErr, wantErr)
		}
		want.Request.Payload = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("mutations differ for %s:\n got %+v\nwant %+v", body, got, want)
		}
		if gotErr == nil && len(body) > 0 && &got.Body[0] == &body[0] {
			t.Fatal("the mutation's body is not a copy")
		}
	})
}

// The sandbox's own requests are checked without building their values.
func TestCheckRequestReadsOwnRequestsDirectly(t *testing.T) {
	body, _, _ := sampleRequest(t).Encode()
	field := headerFor(t, body)
	if _, ok := ownRequest(body); !ok {
		t.Fatal("an encoded request is not read directly")
	}
	m, err := CheckRequest("effect:1", field, body)
	if err != nil || m.Request.IntentID != "intent:1" || m.Request.ActionDigest != dA || m.Request.Payload != nil {
		t.Fatalf("%+v %v", m, err)
	}
}

// formatContentDigestSlow is FormatContentDigest as first written, the
// oracle of the one that writes on the stack.
func formatContentDigestSlow(digest string) (string, bool) {
	if !cjson.ValidDigest(digest) {
		return "", false
	}
	raw, _ := hex.DecodeString(digest[len("sha256:"):])
	return "sha-256=:" + base64.StdEncoding.EncodeToString(raw) + ":", true
}

// The content digest field is written and read as before: FormatContentDigest
// against its first form, ParseContentDigest (whose direct reading takes
// the fields FormatContentDigest writes) against parseContentDigest, over
// digests, their fields, and fields edited a byte or a member at a time.
func TestContentDigestFieldMatchesTheGeneralForms(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var digest string
		if rapid.IntRange(0, 4).Draw(t, "valid") > 0 {
			digest = "sha256:" + hex.EncodeToString(rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "sum"))
		} else {
			digest = rapid.SampledFrom([]string{"", "sha256:", "sha256:" + strings.Repeat("G", 64), "sha256:" + strings.Repeat("A", 64), "md5:00", dA + "0"}).Draw(t, "digest")
		}
		field, ok := FormatContentDigest(digest)
		want, wantOK := formatContentDigestSlow(digest)
		if field != want || ok != wantOK {
			t.Fatalf("FormatContentDigest(%q) = %q, %v; want %q, %v", digest, field, ok, want, wantOK)
		}
		if !ok {
			field = "sha-256=:" + base64.StdEncoding.EncodeToString(rapid.SliceOfN(rapid.Byte(), 31, 33).Draw(t, "raw")) + ":"
		}
		switch rapid.IntRange(0, 5).Draw(t, "edit") {
		case 1:
			i := rapid.IntRange(0, len(field)-1).Draw(t, "at")
			b := []byte(field)
			b[i] = rapid.SampledFrom([]byte("=:,-_+/ aA0\x00")).Draw(t, "byte")
			field = string(b)
		case 2:
			field = rapid.SampledFrom([]string{"md5=:AAAA:, ", " ", ", "}).Draw(t, "before") + field
		case 3:
			field += rapid.SampledFrom([]string{", sha-256=:AAAA:", ",md5=:x:", " "}).Draw(t, "after")
		case 4:
			field = strings.TrimSuffix(field, ":")
		}
		got, err := ParseContentDigest(field)
		want2, err2 := parseContentDigest(field)
		if got != want2 || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("ParseContentDigest(%q) = %q, %v; want %q, %v", field, got, err, want2, err2)
		}
		if ok && field == want && got != digest {
			t.Fatalf("ParseContentDigest(FormatContentDigest(%q)) = %q", digest, got)
		}
	})
}

// TestResultEncodeAllocatesOnce holds Encode to one allocation, its
// bytes, at every sequence number's length: resultSize is what the
// encoding writes besides the key and the digest, at most.
func TestResultEncodeAllocatesOnce(t *testing.T) {
	for _, seq := range []int64{1, 3, math.MaxInt64, math.MinInt64} {
		r := Result{IdempotencyKey: "effect:refund-7", ContentDigest: dA, Sequence: seq}
		if n := testing.AllocsPerRun(20, func() { r.Encode() }); n != 1 {
			t.Errorf("sequence %d: %.1f allocations, want 1", seq, n)
		}
		if b := r.Encode(); len(b) > resultSize+len(r.IdempotencyKey)+len(r.ContentDigest) {
			t.Errorf("sequence %d: %d bytes, more than resultSize allows", seq, len(b))
		}
	}
}
