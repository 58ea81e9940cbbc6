package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/store"
)

// GrantKind is the kind of an approval grant's body.
const GrantKind = "flrh.approval.grant"

// Grant is the body of an approval grant as the runner writes it into the
// approvals ledger when a person approves (grantFor): the canonical JSON
// of these members. The ledger row repeats some of them in columns of its
// own (the run, the request's digest, the nonce, the expiry), which is
// what the runner reads when the grant is consumed.
type Grant struct {
	Kind          string `json:"kind"`
	RunID         string `json:"run_id"`
	RequestID     string `json:"request_id"`
	RequestDigest string `json:"request_digest"`
	Actor         string `json:"actor"`
	Role          string `json:"role"`
	Nonce         string `json:"nonce"`
	ExpiresAt     string `json:"expires_at"` // RFC 3339 with nanoseconds
}

// Expiry is the time the grant expires.
func (g Grant) Expiry() (time.Time, error) { return time.Parse(time.RFC3339Nano, g.ExpiresAt) }

// grantID is the ledger id of the grant with nonce.
func grantID(nonce string) string { return "grant:" + nonce }

// GrantMismatchError reports a grant whose ledger row says something its
// own body does not: the columns were changed after it was granted, or
// the body was never the runner's.
type GrantMismatchError struct {
	ID     string // the grant's ledger id
	Member string // the body's member that disagrees, or "body"
	Detail string
}

func (e *GrantMismatchError) Error() string {
	return fmt.Sprintf("grant %s: %s: %s", e.ID, e.Member, e.Detail)
}

// CheckGrant reports whether a grant's ledger row agrees with its body:
// the body is a grant (the canonical encoding of its members, every one
// present and no other), for the row's run, request digest and nonce, the row's id is the one its nonce names, and
// its expiry is the body's. It does not check the body's digest (the
// ledger's own check) or who granted it (the workflow's).
func CheckGrant(a store.Approval) error {
	var g Grant
	mismatch := func(member, format string, args ...any) error {
		return &GrantMismatchError{ID: a.ID, Member: member, Detail: fmt.Sprintf(format, args...)}
	}
	if err := json.Unmarshal(a.Body, &g); err != nil {
		return mismatch("body", "not a grant: %v", err)
	}
	// encoding/json skips members it does not know, matches names without
	// regard to case and lets a later member replace an earlier one; the
	// runner writes a grant as the canonical encoding of its members, and
	// nothing else is one.
	if again, err := cjson.Marshal(g); err != nil || !bytes.Equal(again, a.Body) {
		return mismatch("body", "not a grant's canonical encoding")
	}
	switch {
	case g.Kind != GrantKind:
		return mismatch("kind", "%q, not %q", g.Kind, GrantKind)
	case g.RunID != a.RunID:
		return mismatch("run_id", "%q in the body, %q in the ledger", g.RunID, a.RunID)
	case g.RequestDigest != a.RequestDigest:
		return mismatch("request_digest", "%q in the body, %q in the ledger", g.RequestDigest, a.RequestDigest)
	case g.Nonce != a.Nonce:
		return mismatch("nonce", "%q in the body, %q in the ledger", g.Nonce, a.Nonce)
	case a.ID != grantID(g.Nonce):
		return mismatch("nonce", "the ledger id %q is not the nonce's", a.ID)
	}
	exp, err := g.Expiry()
	if err != nil {
		return mismatch("expires_at", "%v", err)
	}
	if !exp.Equal(a.ExpiresAt) {
		return mismatch("expires_at", "%s in the body, %s in the ledger", exp.Format(time.RFC3339Nano), a.ExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

// live reports whether grant g may still be taken at now: granted (not
// consumed or revoked) and unexpired. Approve and the run's taking of a
// grant ask the same.
// GrantActor is the person who gave grant g, as its body says ("" for a
// body that is no grant; CheckGrant reports those).
func GrantActor(g store.Approval) string {
	var b Grant
	if json.Unmarshal(g.Body, &b) != nil {
		return ""
	}
	return b.Actor
}

func live(g store.Approval, now time.Time) bool {
	return g.Status == store.ApprovalGranted && now.Before(g.ExpiresAt)
}
