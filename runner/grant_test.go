package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/store"
)

// aliceGrant is the grant alice, a human approver, gives at now for an
// hour, for a request to pay 500 to bob in run "large".
func aliceGrant(t *testing.T, now time.Time) store.Approval {
	t.Helper()
	need := ApprovalNeed{RequestID: "req-1", RequestDigest: store.BodyDigest([]byte("pay 500 to bob")), IntentID: "intent:b"}
	a, err := grantFor("large", need, Actor{Name: "alice", Role: "human_approver"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestGrantDescribesWhatGrantForWrites(t *testing.T) {
	a := aliceGrant(t, time.Date(2026, 12, 4, 5, 6, 7, 891011121, time.UTC))
	if err := CheckGrant(a); err != nil {
		t.Fatalf("the runner's own grant: %v", err)
	}
	var g Grant
	if err := json.Unmarshal(a.Body, &g); err != nil {
		t.Fatal(err)
	}
	again, err := cjson.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, a.Body) {
		t.Fatalf("Grant encodes as\n%s\ngrantFor wrote\n%s", again, a.Body)
	}
	if g.Actor != "alice" || g.Role != "human_approver" || g.RequestID != "req-1" || g.ExpiresAt != "2026-12-04T06:06:07.891011121Z" {
		t.Fatalf("grant %+v", g)
	}
}

func TestCheckGrantFindsARowThatDisagreesWithItsBody(t *testing.T) {
	good := aliceGrant(t, time.Date(2026, 12, 4, 5, 6, 7, 0, time.UTC))
	cases := []struct {
		name   string
		edit   func(a *store.Approval)
		member string
	}{
		{"another run", func(a *store.Approval) { a.RunID = "small" }, "run_id"},
		{"another request", func(a *store.Approval) { a.RequestDigest = store.BodyDigest([]byte("pay 5 to bob")) }, "request_digest"},
		{"another nonce", func(a *store.Approval) { a.Nonce = strings.Repeat("0", 32) }, "nonce"},
		{"an id not the nonce's", func(a *store.Approval) { a.ID = "grant:other" }, "nonce"},
		{"a later expiry", func(a *store.Approval) { a.ExpiresAt = a.ExpiresAt.Add(time.Nanosecond) }, "expires_at"},
		{"not JSON", func(a *store.Approval) { a.Body = []byte("{") }, "body"},
		{"a member more", func(a *store.Approval) {
			a.Body = bytes.Replace(a.Body, []byte(`{"actor"`), []byte(`{"amount":5,"actor"`), 1)
		}, "body"},
		{"text after", func(a *store.Approval) { a.Body = append(append([]byte(nil), a.Body...), " {}"...) }, "body"},
		{"a member's name in capitals, given again", func(a *store.Approval) {
			a.Body = bytes.Replace(a.Body, []byte(`"run_id":"large"`), []byte(`"run_id":"large","RUN_ID":"large"`), 1)
		}, "body"},
		{"spaces between members", func(a *store.Approval) { a.Body = bytes.Replace(a.Body, []byte(`,"`), []byte(`, "`), 1) }, "body"},
		{"another kind", func(a *store.Approval) {
			a.Body = bytes.Replace(a.Body, []byte(GrantKind), []byte("flrh.approval.deny"), 1)
		}, "kind"},
		{"an expiry that is no time", func(a *store.Approval) {
			a.Body = bytes.Replace(a.Body, []byte(`"expires_at":"2026`), []byte(`"expires_at":"x026`), 1)
		}, "expires_at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := good
			a.Body = append([]byte(nil), good.Body...)
			c.edit(&a)
			err := CheckGrant(a)
			var m *GrantMismatchError
			if !errors.As(err, &m) {
				t.Fatalf("CheckGrant = %v, want a GrantMismatchError", err)
			}
			if m.Member != c.member || m.ID != a.ID {
				t.Fatalf("mismatch %+v, want member %s of %s", m, c.member, a.ID)
			}
		})
	}
}

// A grant whose ledger row was changed behind the store's back (its
// expiry pushed past the time it is consumed) is refused when the run
// comes to consume it: the run keeps waiting and nothing is sent.
func TestAGrantWhoseRowWasChangedIsNotConsumed(t *testing.T) {
	h := newHarness(t)
	h.start("run-g", large)
	st, err := h.r.Inspect(ctx, "run-g")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := h.r.Approve(ctx, "run-g", st.Waiting[0].RequestID, approver, time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err := h.store.DB().Exec(`UPDATE approvals SET expires_at = expires_at + ? WHERE run_id = 'run-g'`, int64(time.Hour))
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("tampering: %v, %d rows", err, n)
	}
	h.clock.Advance(2 * time.Minute) // past the expiry the grant was given
	h.idle()
	if r := h.run("run-g"); r.State != "WAIT_APPROVAL" || h.dest.count() != 0 {
		t.Fatalf("a grant changed after it was given moved the run to %s with %d mutations", r.State, h.dest.count())
	}
	if ins, _ := h.store.Intents(ctx, "run-g"); len(ins) != 0 {
		t.Fatalf("%d intents committed", len(ins))
	}
	var status string
	if err := h.store.DB().QueryRow(`SELECT status FROM approvals WHERE run_id = 'run-g'`).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != string(store.ApprovalGranted) {
		t.Fatalf("the changed grant is %s, want it left granted", status)
	}
}

// CheckGrant reads any bytes as a grant's body without panicking, and
// passes a row only when its body is a grant naming exactly the row's run,
// request digest, nonce, id and expiry.
func FuzzCheckGrant(f *testing.F) {
	good := func() store.Approval {
		need := ApprovalNeed{RequestID: "req-1", RequestDigest: store.BodyDigest([]byte("pay 500 to bob")), IntentID: "intent:b"}
		a, err := grantFor("large", need, Actor{Name: "alice", Role: "human_approver"}, time.Date(2026, 12, 4, 5, 6, 7, 8, time.UTC), time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		return a
	}()
	f.Add(good.Body, good.RunID, good.RequestDigest, good.Nonce, good.ID, good.ExpiresAt.UnixNano())
	f.Add([]byte(`{"kind":"flrh.approval.grant","run_id":"r","request_digest":"d","nonce":"n","expires_at":"2026-01-01T00:00:00Z","RUN_ID":"x"}`), "r", "d", "n", "grant:n", int64(1767225600000000000))
	f.Add([]byte(`{}`), "", "", "", "grant:", int64(0))
	f.Fuzz(func(t *testing.T, body []byte, run, request, nonce, id string, expires int64) {
		a := store.Approval{ID: id, RunID: run, RequestDigest: request, Nonce: nonce, Body: body, ExpiresAt: time.Unix(0, expires).UTC()}
		err := CheckGrant(a)
		if err == nil {
			var g Grant
			uerr := json.Unmarshal(body, &g)
			again, _ := cjson.Marshal(g)
			if uerr != nil || !bytes.Equal(again, body) || g.Kind != GrantKind || g.RunID != run || g.RequestDigest != request || g.Nonce != nonce || id != "grant:"+nonce {
				t.Fatalf("CheckGrant passed %+v for the body %q", a, body)
			}
			if exp, perr := time.Parse(time.RFC3339Nano, g.ExpiresAt); perr != nil || !exp.Equal(a.ExpiresAt) {
				t.Fatalf("CheckGrant passed expiry %s for %q", a.ExpiresAt, g.ExpiresAt)
			}
			return
		}
		var m *GrantMismatchError
		if !errors.As(err, &m) || m.ID != id || m.Member == "" {
			t.Fatalf("CheckGrant = %v, want a GrantMismatchError naming %s and a member", err, id)
		}
	})
}

// A request answers to one grant at a time. A second approval while the
// first is still to be taken — at the same instant, whose grant would
// have the same nonce, or later — is refused as a NotWaitingError naming
// the grant that stands, and writes nothing. Once that grant has expired
// untaken, a new approval is taken and the run is paid once.
func TestASecondApprovalOfAGrantStillToBeTakenIsRefused(t *testing.T) {
	h := newHarness(t)
	if err := h.r.Start(ctx, "large", "refunds", "1", []byte(`{"refunds":[{"id":"b","amount":500,"payee":"bob"}]}`)); err != nil {
		t.Fatal(err)
	}
	h.idle()
	st, err := h.r.Inspect(ctx, "large")
	if err != nil || len(st.Waiting) != 1 {
		t.Fatalf("waiting %+v, %v", st.Waiting, err)
	}
	req := st.Waiting[0].RequestID
	if err := h.r.Approve(ctx, "large", req, approver, time.Minute); err != nil {
		t.Fatal(err)
	}
	inbox := h.inboxLen("large")
	for _, wait := range []time.Duration{0, time.Second, 58 * time.Second} {
		h.clock.Advance(wait)
		err := h.r.Approve(ctx, "large", req, Actor{Name: "dave", Role: "human_approver", Capability: "approval.grant_exact_hash"}, time.Hour)
		var nw *NotWaitingError
		if !errors.As(err, &nw) || !strings.Contains(err.Error(), "grant grant:") || !strings.Contains(err.Error(), "yet to take it") {
			t.Fatalf("a second approval %s after the first: %v", wait, err)
		}
		if n := h.inboxLen("large"); n != inbox {
			t.Fatalf("the refused approval left %d inbox entries, not %d", n, inbox)
		}
	}
	var grants int
	if err := h.store.DB().QueryRow(`SELECT count(*) FROM approvals`).Scan(&grants); err != nil || grants != 1 {
		t.Fatalf("%d grants (%v)", grants, err)
	}
	// The first grant expires before the run takes it: another approval
	// stands in its place.
	h.clock.Advance(time.Second)
	if err := h.r.Approve(ctx, "large", req, approver, time.Hour); err != nil {
		t.Fatalf("an approval after the first grant expired: %v", err)
	}
	h.recovered("large")
}

// Two grants of the same request by the same person at the same instant
// are two grants: the nonce is not made of who, what and when alone.
func TestGrantsAtOneInstantHaveTheirOwnNonces(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 6, 7, 0, time.UTC)
	seen := map[string]bool{}
	for range 100 {
		g := aliceGrant(t, now)
		if seen[g.Nonce] || len(g.Nonce) != 32 {
			t.Fatalf("nonce %q (seen before: %v)", g.Nonce, seen[g.Nonce])
		}
		seen[g.Nonce] = true
		if err := CheckGrant(g); err != nil {
			t.Fatal(err)
		}
	}
}
