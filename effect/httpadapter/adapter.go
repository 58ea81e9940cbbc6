// Package httpadapter is an effect.Adapter that performs effects as HTTP
// requests in the flrh-effect-http/1 protocol (see package httpwire) and
// reconciles them with lookup requests.
//
// One attempt is one POST of the canonical request body with the intent's
// Idempotency-Key and the body's Content-Digest, bounded by a connect
// timeout and a total timeout. The answer is classified as follows:
//
//	2xx with a result naming this key and content   success
//	2xx whose body is missing, too big or names
//	  another key or content                        unknown
//	408, 425, 429, 5xx                              transient failure
//	409 IDEMPOTENCY_KEY_CONFLICT                    permanent failure
//	other 409                                       unknown
//	other 4xx, 1xx, 3xx (redirects not followed)    permanent failure
//	transport failure before a connection existed   transient failure
//	the destination refusing the TLS handshake      transient failure
//	  (its alert in place of an answer)
//	transport failure once a connection existed     unknown
//	  (timeout, reset, EOF while reading)
//
// The last rule is the one that matters: once the request may have left,
// silence is never success and is never retried blindly.
//
// The adapter keeps the request from being replayed behind its back: Go's
// HTTP transport would otherwise resend a request carrying an
// Idempotency-Key header on a broken keep-alive connection, turning an
// unknown outcome into an invisible second attempt.
package httpadapter

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpwire"
)

// Defaults for a zero Config field.
const (
	DefaultConnectTimeout = 5 * time.Second
	DefaultTimeout        = 30 * time.Second
)

// Config configures an Adapter.
type Config struct {
	// URL is the destination's effect endpoint: mutations are POSTed to it
	// and lookups are GET URL/<escaped key>. http and https only.
	URL string
	// DestinationDigest, when set, is the destination_digest every intent
	// sent through this adapter must carry; an intent for another
	// destination is refused before anything is sent.
	DestinationDigest string
	// ConnectTimeout bounds establishing a connection; Timeout bounds a
	// whole request, from dialling to the last byte of the answer.
	ConnectTimeout time.Duration
	Timeout        time.Duration
	// Transport, when set, replaces the adapter's own transport (which
	// dials with ConnectTimeout and uses no proxy).
	Transport http.RoundTripper
	// MaxInFlight and PerSecond, when positive, hold the adapter's
	// requests (mutations and lookups alike) to at most that many open at
	// once and that many started a second, in this process. A request
	// waits at most QueueWait (0: DefaultQueueWait) for room; one that
	// finds none is not sent: a mutation is a transient failure,
	// DESTINATION_BUSY, retried after the contract's backoff; a lookup is
	// still unknown, LOOKUP_BUSY.
	MaxInFlight int
	PerSecond   int
	QueueWait   time.Duration
	// Shared, when set, holds MaxInFlight and PerSecond for every process
	// Shared reaches (every process sharing a store, for package
	// sharedlimit) under the limit named SharedName, on top of this
	// process's own: room is found here first, then there, within the
	// same QueueWait. It needs SharedName and a limit to share.
	Shared     Sharer
	SharedName string
	// TLS, when set, configures the adapter's own transport's TLS: the
	// roots the destination's certificate must chain to, a client
	// certificate for mutual TLS, the server name. It needs an https URL
	// and the adapter's own transport. TLS 1.2 at least, whatever it says.
	TLS *tls.Config
	// Headers are sent with every request, mutations and lookups alike:
	// credentials such as Authorization. They travel outside the body, so
	// they are not part of the content digest, and the adapter never puts
	// them in a receipt. The protocol's own headers cannot be replaced.
	Headers map[string]string
}

// Adapter is the HTTP effect adapter. It is safe for concurrent use.
type Adapter struct {
	limits  *limits
	base    *url.URL
	dest    string
	timeout time.Duration
	client  *http.Client
	headers http.Header
}

var _ effect.Adapter = (*Adapter)(nil)

// New checks cfg and returns an adapter.
func New(cfg Config) (*Adapter, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("httpadapter: URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("httpadapter: URL %q must be an absolute http or https URL without query or fragment", cfg.URL)
	}
	if cfg.DestinationDigest != "" && !cjson.ValidDigest(cfg.DestinationDigest) {
		return nil, fmt.Errorf("httpadapter: destination digest %q is not a sha256 digest", cfg.DestinationDigest)
	}
	if cfg.TLS != nil && u.Scheme != "https" {
		return nil, fmt.Errorf("httpadapter: URL %q: TLS settings need an https URL", cfg.URL)
	}
	if cfg.TLS != nil && cfg.Transport != nil {
		return nil, errors.New("httpadapter: TLS settings configure the adapter's own transport; give one or the other")
	}
	lim, err := newLimits(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout < 0 || cfg.Timeout < 0 {
		return nil, errors.New("httpadapter: timeouts must not be negative")
	}
	headers := http.Header{}
	for k, v := range cfg.Headers {
		ck := http.CanonicalHeaderKey(k)
		if !validHeader(k, v) {
			return nil, fmt.Errorf("httpadapter: header %q: not a valid header name and value", k)
		}
		if protocolHeader[ck] {
			return nil, fmt.Errorf("httpadapter: header %q is the protocol's own", k)
		}
		headers.Set(ck, v)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	rt := cfg.Transport
	if rt == nil {
		d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
		rt = &http.Transport{
			Proxy:                 nil, // a destination is named exactly; the environment does not reroute it
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.ConnectTimeout,
			ExpectContinueTimeout: time.Second,
		}
		if cfg.TLS != nil {
			c := cfg.TLS.Clone()
			c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
			rt.(*http.Transport).TLSClientConfig = c
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Adapter{
		limits:  lim,
		base:    u,
		headers: headers,
		dest:    cfg.DestinationDigest,
		timeout: cfg.Timeout,
		client: &http.Client{
			Transport: rt,
			// A redirect is an answer, not an instruction: the intent names
			// one destination, and a 3xx is classified as a refusal.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Prepare builds the canonical request body of an intent and its content
// digest, the value the idempotency key is bound to and a later Lookup
// asks about. It is pure: the same intent always gives the same bytes.
func Prepare(in effect.Intent) (body []byte, contentDigest string, err error) {
	if !httpwire.ValidKey(in.Effect.IdempotencyKey) {
		return nil, "", fmt.Errorf("httpadapter: intent %q has no valid idempotency key", in.Effect.IntentID)
	}
	if body, contentDigest, ok := httpwire.EncodeRequestText(in.Effect.IntentID, in.Effect.EffectType, in.Effect.ActionDigest, in.Effect.DestinationDigest, in.Payload); ok {
		return body, contentDigest, nil
	}
	req, err := httpwire.NewRequest(in.Effect.IntentID, in.Effect.EffectType, in.Effect.ActionDigest, in.Effect.DestinationDigest, in.Payload)
	if err != nil {
		return nil, "", fmt.Errorf("httpadapter: intent %q: %w", in.Effect.IntentID, err)
	}
	return req.Encode()
}

// ContentDigest returns the digest of the content Execute would send for
// the intent (see Prepare), without sending anything.
func (a *Adapter) ContentDigest(in effect.Intent) (string, error) {
	_, d, err := Prepare(in)
	return d, err
}

var _ effect.Preparer = (*Adapter)(nil)

// Prepare returns the request Execute would send for the intent (see the
// package function Prepare), for ExecutePrepared.
func (a *Adapter) Prepare(in effect.Intent) (effect.Prepared, error) {
	body, d, err := Prepare(in)
	return effect.Prepared{Body: body, ContentDigest: d}, err
}

// Execute performs one attempt of the intent. See the package comment for
// how the answer is classified.
func (a *Adapter) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	if err := a.forDestination(in); err != nil {
		return effect.Receipt{}, err
	}
	body, digest, err := Prepare(in)
	if err != nil {
		return effect.Receipt{}, err
	}
	return a.send(ctx, in, body, digest)
}

// ExecutePrepared is Execute of the intent p was prepared for, sending
// p's bytes as they are.
func (a *Adapter) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	if err := a.forDestination(in); err != nil {
		return effect.Receipt{}, err
	}
	return a.send(ctx, in, p.Body, p.ContentDigest)
}

// forDestination refuses an intent for another destination than the one
// this adapter reaches.
func (a *Adapter) forDestination(in effect.Intent) error {
	if a.dest != "" && in.Effect.DestinationDigest != a.dest {
		return fmt.Errorf("httpadapter: intent %q is for destination %s, this adapter reaches %s", in.Effect.IntentID, in.Effect.DestinationDigest, a.dest)
	}
	return nil
}

// send makes the attempt with the request's prepared bytes.
func (a *Adapter) send(ctx context.Context, in effect.Intent, body []byte, digest string) (effect.Receipt, error) {
	release, err := a.limits.admit(ctx)
	if err != nil {
		return effect.Receipt{Outcome: effect.FailedTransient, Code: "DESTINATION_BUSY", ContentDigest: digest,
			Detail: "nothing was sent: " + err.Error()}, nil
	}
	defer release()
	cd, _ := httpwire.FormatContentDigest(digest)
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base.String(), bytes.NewReader(body))
	if err != nil {
		return effect.Receipt{}, fmt.Errorf("httpadapter: %w", err)
	}
	// Without GetBody the transport cannot resend the request by itself.
	req.GetBody = nil
	a.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(httpwire.HeaderIdempotencyKey, in.Effect.IdempotencyKey)
	req.Header.Set(httpwire.HeaderContentDigest, cd)
	obs := Observation{Key: in.Effect.IdempotencyKey, ContentDigest: digest}
	resp, err := a.client.Do(req)
	if err != nil {
		obs.TransportErr = err
		obs.Connected = connected.Load()
		obs.HandshakeRefused = handshakeRefused(err)
		return Classify(obs), nil
	}
	defer resp.Body.Close()
	obs.Connected = true
	obs.Status = resp.StatusCode
	obs.Replayed = resp.Header.Get(httpwire.HeaderReplayed) == "true"
	obs.RetryAfter = retryAfter(resp.Header)
	obs.Body, obs.BodyErr = readLimited(resp.Body, httpwire.MaxAnswerBytes)
	return Classify(obs), nil
}

// retryAfter reads an answer's Retry-After header, an HTTP-date read
// against the answer's own Date when it has one (the destination's clock
// on both sides), else against this machine's clock. A missing or
// unreadable header is no wait.
func retryAfter(h http.Header) time.Duration {
	v := h.Get(httpwire.HeaderRetryAfter)
	if v == "" {
		return 0
	}
	now, err := httpwire.ParseHTTPDate(h.Get("Date"))
	if err != nil {
		now = time.Now()
	}
	d, err := httpwire.ParseRetryAfter(v, now)
	if err != nil {
		return 0
	}
	return d
}

// handshakeAlerts are the TLS alerts a server sends only while it
// handshakes, before it reads any application data: a refused client
// certificate above all. With TLS 1.3 a client finishes its side of the
// handshake, and may send its request, before the server has checked the
// client's certificate; the server's refusal then arrives as one of these
// in place of an answer. The request was never handed to the destination.
var handshakeAlerts = map[uint64]bool{
	40:  true, // handshake_failure
	42:  true, // bad_certificate
	43:  true, // unsupported_certificate
	44:  true, // certificate_revoked
	45:  true, // certificate_expired
	46:  true, // certificate_unknown
	48:  true, // unknown_ca
	49:  true, // access_denied
	116: true, // certificate_required
}

// handshakeRefused reports whether err is the destination refusing the
// TLS handshake with one of handshakeAlerts. crypto/tls reports a
// received alert as a net.OpError of Op "remote error" whose Err is its
// unexported alert type, a uint8 holding the alert's code.
func handshakeRefused(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return false
	}
	v := reflect.ValueOf(op.Err)
	return v.Kind() == reflect.Uint8 && handshakeAlerts[v.Uint()]
}

// errTooLarge reports an answer beyond the size limit.
var errTooLarge = errors.New("answer exceeds the size limit")

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// Observation is everything one attempt saw, the input of Classify.
type Observation struct {
	Key           string // the idempotency key sent
	ContentDigest string // the digest of the content sent
	// Connected reports that a connection to the destination existed, so
	// the request may have been sent. TransportErr is the round trip's
	// error, if there was no answer at all.
	Connected    bool
	TransportErr error
	// HandshakeRefused reports that TransportErr is the destination
	// refusing the TLS handshake (a client certificate it does not take):
	// whatever was written, it processed nothing.
	HandshakeRefused bool
	// Status, Replayed, Body and BodyErr describe the answer, when one came.
	Status   int
	Replayed bool
	Body     []byte
	BodyErr  error
	// RetryAfter is the wait the answer's Retry-After header asked for,
	// already read (zero when it had none); it reaches the receipt only on
	// a transient failure, at most httpwire.MaxRetryAfter.
	RetryAfter time.Duration
}

// Classify turns what an attempt saw into a receipt. It is pure.
func Classify(o Observation) effect.Receipt {
	r := effect.Receipt{ContentDigest: o.ContentDigest}
	if o.TransportErr != nil {
		if o.HandshakeRefused {
			r.Outcome, r.Code = effect.FailedTransient, "TLS_HANDSHAKE_REFUSED"
			r.Detail = "the destination refused the TLS handshake, so it processed nothing: " + o.TransportErr.Error()
			return r
		}
		if !o.Connected {
			r.Outcome, r.Code = effect.FailedTransient, "TRANSPORT_BEFORE_SEND"
			r.Detail = "no connection to the destination was made, so nothing was sent: " + o.TransportErr.Error()
			return r
		}
		r.Outcome, r.Code = effect.Unknown, "TRANSPORT_AFTER_SEND"
		r.Detail = "the request may have reached the destination and no answer came back: " + o.TransportErr.Error()
		return r
	}
	r.Replayed = o.Replayed
	var problem httpwire.Problem
	if o.BodyErr == nil && o.Status/100 != 2 {
		if p, err := httpwire.DecodeProblem(o.Body); err == nil {
			problem = p
			r.Evidence, r.EvidenceDigest = evidence(o.Body)
		}
	}
	class := httpwire.ClassifyStatus(o.Status, problem.Code)
	if class == httpwire.ClassSuccess {
		if o.BodyErr != nil {
			r.Outcome, r.Code = effect.Unknown, "ANSWER_UNREADABLE"
			r.Detail = fmt.Sprintf("HTTP %d, but its body could not be read: %v", o.Status, o.BodyErr)
			return r
		}
		res, err := httpwire.DecodeResult(o.Body, o.Key, o.ContentDigest)
		if err != nil {
			r.Outcome, r.Code = effect.Unknown, codeOf(err)
			r.Detail = fmt.Sprintf("HTTP %d, but the answer does not witness this request: %v", o.Status, err)
			return r
		}
		r.Outcome, r.Code = effect.Succeeded, statusCode(o.Status)
		// The evidence is the result in canonical form: the decoded result
		// re-encoded, which is the answer's own bytes when it was canonical.
		r.Evidence = res.Encode()
		r.EvidenceDigest = cjson.Digest(r.Evidence)
		return r
	}
	switch class {
	case httpwire.ClassPermanent:
		r.Outcome = effect.FailedPermanent
	case httpwire.ClassTransient:
		r.Outcome = effect.FailedTransient
		r.RetryAfter = min(max(o.RetryAfter, 0), httpwire.MaxRetryAfter)
	default:
		r.Outcome = effect.Unknown
	}
	r.Code = statusCode(o.Status)
	if problem.Code != "" {
		r.Code = problem.Code
		r.Detail = fmt.Sprintf("HTTP %d: %s", o.Status, problem.Detail)
	} else {
		r.Detail = fmt.Sprintf("HTTP %d", o.Status)
	}
	return r
}

// successCodes are statusCode's texts of the 2xx statuses, spelled once
// rather than at every answer.
var successCodes = func() (codes [100]string) {
	for i := range codes {
		codes[i] = fmt.Sprintf("HTTP_%d", 200+i)
	}
	return codes
}()

// statusCode is a receipt's code for an answer of HTTP status status.
func statusCode(status int) string {
	if status >= 200 && status < 300 {
		return successCodes[status-200]
	}
	return fmt.Sprintf("HTTP_%d", status)
}

// evidence returns the canonical bytes of a destination answer and their
// digest, or nothing when the answer is not canonicalisable.
func evidence(body []byte) ([]byte, string) {
	c, err := cjson.Canonicalize(body)
	if err != nil {
		return nil, ""
	}
	return c, cjson.Digest(c)
}

func codeOf(err error) string {
	var we *httpwire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return "MALFORMED_ANSWER"
}

// LookupURL returns the URL a lookup for key is sent to.
func (a *Adapter) LookupURL(key, contentDigest string) string {
	u := *a.base
	u.Path = a.base.Path + "/" + key
	u.RawPath = a.base.EscapedPath() + "/" + url.PathEscape(key)
	u.RawQuery = url.Values{"content_digest": {contentDigest}}.Encode()
	return u.String()
}

// Lookup asks the destination what became of the effect sent under key
// with contentDigest.
func (a *Adapter) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	if !httpwire.ValidKey(key) {
		return effect.LookupResult{}, fmt.Errorf("httpadapter: lookup: %q is not a valid idempotency key", key)
	}
	if !cjson.ValidDigest(contentDigest) {
		return effect.LookupResult{}, fmt.Errorf("httpadapter: lookup: %q is not a content digest", contentDigest)
	}
	release, err := a.limits.admit(ctx)
	if err != nil {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "LOOKUP_BUSY", Detail: "not asked: " + err.Error()}, nil
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.LookupURL(key, contentDigest), nil)
	if err != nil {
		return effect.LookupResult{}, fmt.Errorf("httpadapter: %w", err)
	}
	a.setHeaders(req)
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "LOOKUP_TRANSPORT", Detail: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, berr := readLimited(resp.Body, httpwire.MaxAnswerBytes)
	return JudgeLookup(key, contentDigest, resp.StatusCode, body, berr), nil
}

// JudgeLookup turns a lookup's answer into a result. It is pure. Only a
// well-formed 200 answer for this key can confirm anything; a server that
// is busy or failing leaves the outcome unknown; any other answer is one
// this adapter does not understand, which a person must look at.
func JudgeLookup(key, contentDigest string, status int, body []byte, bodyErr error) effect.LookupResult {
	code := fmt.Sprintf("LOOKUP_HTTP_%d", status)
	if status != http.StatusOK {
		if httpwire.ClassifyStatus(status, "") == httpwire.ClassTransient {
			return effect.LookupResult{Status: effect.StillUnknown, Code: code, Detail: "the destination could not answer now"}
		}
		return effect.LookupResult{Status: effect.HumanRequired, Code: code, Detail: "the destination's lookup endpoint gave an answer this adapter does not understand"}
	}
	if bodyErr != nil {
		return effect.LookupResult{Status: effect.StillUnknown, Code: "LOOKUP_UNREADABLE", Detail: bodyErr.Error()}
	}
	ans, err := httpwire.DecodeLookup(body, key)
	if err != nil {
		return effect.LookupResult{Status: effect.HumanRequired, Code: codeOf(err), Detail: err.Error()}
	}
	ev, evd := evidence(body)
	res := effect.LookupResult{Code: "LOOKUP_" + strings.ToUpper(ans.Status), Evidence: ev, EvidenceDigest: evd}
	switch httpwire.Judge(ans, contentDigest) {
	case httpwire.VerdictApplied:
		res.Status, res.Detail = effect.ConfirmedSuccess, fmt.Sprintf("the destination applied this content as mutation %d", *ans.Sequence)
	case httpwire.VerdictNotApplied:
		res.Status, res.Detail = effect.ConfirmedFailure, "the destination applied nothing under this key and has nothing in flight"
	case httpwire.VerdictPending:
		res.Status, res.Detail = effect.StillUnknown, "a request with this key is still being handled"
	default:
		res.Status, res.Detail = effect.HumanRequired, "the key holds content other than this effect's"
	}
	return res
}

// protocolHeader are the headers the adapter sets itself.
var protocolHeader = map[string]bool{
	"Content-Type": true, "Accept": true, "Content-Length": true, "Host": true, "Connection": true,
	"Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true, "Expect": true,
	http.CanonicalHeaderKey(httpwire.HeaderIdempotencyKey): true, http.CanonicalHeaderKey(httpwire.HeaderContentDigest): true,
}

func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	for _, c := range []byte(value) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func (a *Adapter) setHeaders(req *http.Request) {
	for k, v := range a.headers {
		req.Header[k] = v
	}
}
