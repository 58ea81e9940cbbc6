package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Error types: the stable, machine-readable half of every error body.
const (
	TypeMalformed        = "malformed"              // 400: not JSON, not flrh-cjson/1, bad query
	TypeUnauthenticated  = "unauthenticated"        // 401: no token or an unknown one
	TypeForbidden        = "forbidden"              // 403: the token's roles, or the run's approval policy, do not allow the act
	TypeNotFound         = "not_found"              // 404: no such run or route
	TypeMethodNotAllowed = "method_not_allowed"     // 405
	TypeConflict         = "conflict"               // 409: the run is not waiting for this, has ended, or the id is taken
	TypeTooLarge         = "too_large"              // 413: the body exceeds the limit
	TypeUnsupportedMedia = "unsupported_media_type" // 415: not application/json
	TypeInvalid          = "invalid"                // 422: well-formed but against the schema
	TypeUnavailable      = "unavailable"            // 503: the store is busy or the server is full
	TypeInternal         = "internal"               // 500
	TypeGone             = "gone"                   // 410: the run was pruned; its record is in an archive
	TypeUpstream         = "upstream"               // 502: a service the server relies on (the identity provider) failed
	TypeRateLimited      = "rate_limited"           // 429: the caller used up its rate; Retry-After says when to come back
)

// Error is an API failure: an HTTP status, a type from the list above, a
// message for people and, when one value is to blame, its JSON pointer in
// the request body (or "?name" for a query parameter).
type Error struct {
	Status  int
	Type    string
	Message string
	Field   string
	// RetryAfter, for a 429, is when the caller may come again: the
	// Retry-After header, in whole seconds rounded up.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s at %s: %s", e.Type, e.Field, e.Message)
	}
	return e.Type + ": " + e.Message
}

func apiErr(status int, typ, field, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Field: field, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the one shape of every error answer.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	} `json:"error"`
}

// classify maps an error from the runner or the store to an API error.
// Store codes, not message text, decide the status.
func classify(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var nw *runner.NotWaitingError
	if errors.As(err, &nw) {
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", nw.Error())
	}
	// A run that has ended takes no act; said so before the store's own
	// refusal (INVALID_TRANSITION), which the error may wrap.
	var ended *runner.EndedError
	if errors.As(err, &ended) {
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", ended.Error())
	}
	// The approval policy does not let this person answer the request:
	// their token's role allows approving, the run's policy not them.
	var ar *runner.ApproverRefusedError
	if errors.As(err, &ar) {
		return apiErr(http.StatusForbidden, TypeForbidden, "", "%s", ar.Error())
	}
	// A release by someone the park does not summon, or of a run no
	// tripwire parked (a quarantine for an untrusted checkpoint stays).
	var rr *runner.ReleaseRefusedError
	if errors.As(err, &rr) {
		return apiErr(http.StatusForbidden, TypeForbidden, "", "%s", rr.Error())
	}
	var np *runner.NotParkedError
	if errors.As(err, &np) {
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", np.Error())
	}
	// A new run's first input its workflow refuses: nothing was created.
	var ir *runner.InputRefusedError
	if errors.As(err, &ir) {
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "/input", "%s", ir.Error())
	}
	// The runner refuses a usage report out of range, or an input that
	// poses as one, with a typed control error.
	var ce *control.Error
	if errors.As(err, &ce) && (ce.Code == control.CodeInput || ce.Code == control.CodeLimit) {
		field := "/usage" + ce.Pointer
		if ce.Pointer == "/format" {
			field = "/input/format"
		}
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, field, "%s", ce.Detail)
	}
	switch store.CodeOf(err) {
	case store.CodeNotFound:
		return apiErr(http.StatusNotFound, TypeNotFound, "", "%s", err.Error())
	case store.CodeExists, store.CodeInvalidTransition, store.CodeQuarantined, store.CodeLeaseHeld,
		store.CodeHeadMismatch, store.CodeFenced, store.CodeApprovalUnavailable, store.CodeApprovalRejected:
		return apiErr(http.StatusConflict, TypeConflict, "", "%s", err.Error())
	case store.CodeInvalidInput:
		return apiErr(http.StatusUnprocessableEntity, TypeInvalid, "", "%s", err.Error())
	case store.CodeUnavailable:
		return apiErr(http.StatusServiceUnavailable, TypeUnavailable, "", "the store is busy; retry")
	case store.CodeSealed:
		// A deployment problem, not the caller's: the server was started
		// without the key the records are encrypted under.
		return apiErr(http.StatusServiceUnavailable, TypeUnavailable, "", "this run's records are encrypted at rest under a key this server was not given")
	}
	return apiErr(http.StatusInternalServerError, TypeInternal, "", "internal error")
}

func writeError(w http.ResponseWriter, e *Error) {
	var b errorBody
	b.Error.Type, b.Error.Message, b.Error.Field = e.Type, e.Message, e.Field
	switch e.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="flrh"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeJSON(w, e.Status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"type":"internal","message":"response encoding failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
