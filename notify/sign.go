package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries a delivery's signature.
const SignatureHeader = "Flrh-Signature"

// Sign is the Flrh-Signature value for body sent at unix second t under
// secret.
func Sign(secret, body []byte, t int64) string {
	return "t=" + strconv.FormatInt(t, 10) + ",v1=" + hex.EncodeToString(mac(secret, body, t))
}

func mac(secret, body []byte, t int64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrSignature is wrapped by every error Verify returns.
var ErrSignature = errors.New("notify: signature refused")

// Verify checks that header (a Flrh-Signature value) signs body under
// secret, at a time within tolerance of now: what a receiver does before
// it trusts a delivery. A header may carry several v1 values (a sender
// between two secrets); one that matches suffices.
func Verify(secret, body []byte, header string, now time.Time, tolerance time.Duration) error {
	var t int64
	haveT := false
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrSignature, part)
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || haveT {
				return fmt.Errorf("%w: bad or repeated time %q", ErrSignature, v)
			}
			t, haveT = n, true
		case "v1":
			s, err := hex.DecodeString(v)
			if err != nil || len(s) != sha256.Size {
				return fmt.Errorf("%w: v1 is not a SHA-256 HMAC in hex", ErrSignature)
			}
			sigs = append(sigs, s)
		}
	}
	if !haveT || len(sigs) == 0 {
		return fmt.Errorf("%w: a time and a v1 signature are required", ErrSignature)
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now, beyond %s", ErrSignature, time.Unix(t, 0).UTC().Format(time.RFC3339), d.Round(time.Second), tolerance)
	}
	want := mac(secret, body, t)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no signature matches the body", ErrSignature)
}
