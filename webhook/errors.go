package webhook

import "fmt"

// Reason is the check a delivery, a secret or a template failed.
type Reason string

const (
	// ReasonMissing: a header the scheme requires is absent.
	ReasonMissing Reason = "missing"
	// ReasonMalformed: a header or the body does not parse as the scheme
	// writes it.
	ReasonMalformed Reason = "malformed"
	// ReasonSignature: no signature matches any secret.
	ReasonSignature Reason = "signature"
	// ReasonStale: the signed timestamp is outside the tolerance.
	ReasonStale Reason = "stale"
	// ReasonSecret: a secret is unusable (empty, too short, not base64
	// where the scheme needs it).
	ReasonSecret Reason = "secret"
)

// Error is a refusal: which check failed and what was found.
type Error struct {
	Reason Reason
	// Where is the header the refusal is about; empty when it is about
	// the delivery as a whole.
	Where string
	// Detail says what was found, in a sentence that repeats no secret
	// and no signature.
	Detail string
}

func (e *Error) Error() string {
	if e.Where != "" {
		return "webhook: " + e.Where + ": " + e.Detail
	}
	return "webhook: " + e.Detail
}

// Is makes errors.Is(err, &Error{Reason: r}) match any error of reason r.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason && t.Where == "" && t.Detail == ""
}

func refuse(r Reason, where, format string, args ...any) *Error {
	return &Error{Reason: r, Where: where, Detail: fmt.Sprintf(format, args...)}
}
