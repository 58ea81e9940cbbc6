package idtoken

import "fmt"

// Reason says which check refused a token or a key set.
type Reason string

const (
	Malformed       Reason = "malformed"      // not a JWS compact token with canonical parts
	Unsupported     Reason = "unsupported"    // an algorithm, "typ" or "crit" the verifier does not accept
	UnknownKey      Reason = "unknown_key"    // no key in the set is the one the token names (the set may be stale)
	KeyMismatch     Reason = "key_mismatch"   // the key named does not fit the token's algorithm
	BadSignature    Reason = "bad_signature"  // the signature does not verify
	WrongIssuer     Reason = "wrong_issuer"   // "iss" is not the provider's
	WrongAudience   Reason = "wrong_audience" // "aud" does not name the audience
	Expired         Reason = "expired"        // "exp" has passed
	NotYetValid     Reason = "not_yet_valid"  // "nbf" or "iat" is in the future
	TooLong         Reason = "too_long"       // the token lives longer than the verifier allows
	BadClaim        Reason = "bad_claim"      // a registered claim of the wrong type, or one missing
	BadKeySet       Reason = "bad_key_set"    // a key set that does not parse or holds an unusable key
	BadVerifierArgs Reason = "bad_verifier"   // the verifier itself is misconfigured
)

// Error is a refused token or key set.
type Error struct {
	Reason Reason
	// Detail says what was found, in a sentence without the token: an
	// error reaches logs, and a token in a log is a token leaked.
	Detail string
}

func (e *Error) Error() string { return "identity token: " + e.Detail }

// Is makes errors.Is(err, &Error{Reason: r}) match any error of reason r.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason && t.Detail == ""
}

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}
