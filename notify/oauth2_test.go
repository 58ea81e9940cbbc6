package notify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/internal/smtptest"
)

// tokenIssuer is an OAuth 2.0 token endpoint for the client credentials
// grant: it checks the client and the scope, issues tok-1, tok-2, … for
// life, and counts what it issued.
type tokenIssuer struct {
	mu       sync.Mutex
	issued   []string
	life     any // expires_in as written (a number, a string, or nil for none)
	refuse   bool
	lastForm url.Values
}

func (ti *tokenIssuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	id, secret, _ := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.lastForm = r.PostForm
	w.Header().Set("Content-Type", "application/json")
	if ti.refuse || id != "flrh-mailer" || secret != "s3cret:&/x" || r.PostForm.Get("grant_type") != "client_credentials" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`)
		return
	}
	tok := fmt.Sprintf("tok-%d", len(ti.issued)+1)
	ti.issued = append(ti.issued, tok)
	a := map[string]any{"access_token": tok, "token_type": "Bearer"}
	if ti.life != nil {
		a["expires_in"] = ti.life
	}
	json.NewEncoder(w).Encode(a)
}

func (ti *tokenIssuer) count() int {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	return len(ti.issued)
}

// oauthMail serves ti as a token endpoint and a mail server with o, and
// returns the mail server and a notifier with one e-mail route through
// it that logs in as alerts@example.com with scope.
func oauthMail(t *testing.T, f *fixture, ti *tokenIssuer, o smtptest.Options, scope string) (*smtptest.Server, *Notifier) {
	t.Helper()
	ts := httptest.NewServer(ti)
	t.Cleanup(ts.Close)
	srv, pki := mailServer(t, o)
	route := Route{Name: "mail", URL: "smtp://alerts%40example.com@localhost:" + srv.Port(), Format: FormatEmail,
		From: "alerts@example.com", To: []string{"ops@example.com"},
		OAuth2: &OAuth2{TokenURL: ts.URL + "/oauth2/v2.0/token", ClientID: "flrh-mailer", ClientSecret: "s3cret:&/x", Scope: scope}}
	return srv, f.routed("a", []Route{route}, func(cfg *Config) { cfg.RootCAs = pki.Pool() })
}

// An e-mail route with oauth2 logs in to the mailbox with an access token
// (XOAUTH2, or OAUTHBEARER where only that is offered) obtained by the
// client credentials grant, kept until a minute before it expires and
// asked for again after; a token the mail server refuses is dropped and
// the next delivery asks for a new one; a client the token endpoint
// refuses, or a server offering neither mechanism, fails the delivery
// saying so, never with the secret or a token.
func TestEmailOAuth2(t *testing.T) {
	for _, mech := range []string{"XOAUTH2", "OAUTHBEARER"} {
		t.Run(mech, func(t *testing.T) {
			f := newFixture(t)
			ti := &tokenIssuer{life: 3600}
			var refusedMu sync.Mutex
			refused := map[string]bool{}
			srv, n := oauthMail(t, f, ti, smtptest.Options{Auth: "PLAIN LOGIN " + mech, Tokens: func(tok string) bool {
				refusedMu.Lock()
				defer refusedMu.Unlock()
				return !refused[tok]
			}}, "https://outlook.office365.com/.default")

			f.ended("r1")
			f.pass(n, 1)
			f.ended("r2")
			f.pass(n, 1)
			msgs := srv.Messages()
			if len(msgs) != 2 || ti.count() != 1 {
				t.Fatalf("%d messages, %d tokens issued", len(msgs), ti.count())
			}
			for _, m := range msgs {
				if m.Mechanism != mech || m.User != "alerts@example.com" || m.Pass != "tok-1" || !m.TLS {
					t.Fatalf("message %+v", m)
				}
			}
			if ti.lastForm.Get("scope") != "https://outlook.office365.com/.default" {
				t.Fatalf("the scope asked: %v", ti.lastForm)
			}
			// Within a minute of its expiry the token is asked for again.
			f.clock.Advance(time.Hour - 30*time.Second)
			f.ended("r3")
			f.pass(n, 1)
			if msgs := srv.Messages(); len(msgs) != 3 || msgs[2].Pass != "tok-2" {
				t.Fatalf("after an hour: %+v", msgs[2:])
			}
			// The mail server refuses the token in use: the delivery fails
			// and the next one asks for a new token.
			refusedMu.Lock()
			refused["tok-2"] = true
			refusedMu.Unlock()
			f.ended("r4")
			f.pass(n, 1)
			b, err := f.store.NoticeBacklog(ctx)
			if err != nil || b.Count != 1 || !strings.Contains(b.Oldest.LastError, "the mail server answered AUTH with 535") {
				t.Fatalf("a refused token: %+v %v", b, err)
			}
			f.clock.Advance(time.Hour)
			f.pass(n, 1)
			if msgs := srv.Messages(); len(msgs) != 4 || msgs[3].Pass != "tok-3" || f.backlog() != 0 {
				t.Fatalf("after a refused token: %d messages, %+v", len(msgs), msgs[len(msgs)-1])
			}
		})
	}
}

// The ways an OAuth2 e-mail delivery fails, each kept as the notice's
// last error without the client's secret or a token.
func TestEmailOAuth2Failures(t *testing.T) {
	for _, c := range []struct {
		name, offers string
		refuse       bool
		life         any
		why          string
	}{
		{"the client refused", "XOAUTH2", true, 3600, "route mail: the token endpoint refused the client: invalid_client: AADSTS7000215: Invalid client secret provided."},
		{"neither mechanism offered", "PLAIN LOGIN", false, 3600, "route mail: the mail server offers AUTH PLAIN LOGIN, neither XOAUTH2 nor OAUTHBEARER"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			srv, n := oauthMail(t, f, &tokenIssuer{life: c.life, refuse: c.refuse}, smtptest.Options{Auth: c.offers}, "mail")
			f.ended("r1")
			f.pass(n, 1)
			b, err := f.store.NoticeBacklog(ctx)
			if err != nil || len(srv.Messages()) != 0 || b.Oldest.LastError != c.why {
				t.Fatalf("backlog %+v (%v)", b, err)
			}
			if strings.Contains(b.Oldest.LastError, "s3cret") || strings.Contains(b.Oldest.LastError, "tok-") {
				t.Fatal("the error holds a secret")
			}
		})
	}
	// expires_in written as a string, or left out: the token is kept as
	// long as it says, or five minutes.
	for _, life := range []any{"7200", nil} {
		f := newFixture(t)
		ti := &tokenIssuer{life: life}
		srv, n := oauthMail(t, f, ti, smtptest.Options{Auth: "XOAUTH2"}, "mail")
		f.ended("r1")
		f.pass(n, 1)
		f.clock.Advance(3 * time.Minute)
		f.ended("r2")
		f.pass(n, 1)
		f.clock.Advance(3 * time.Minute)
		f.ended("r3")
		f.pass(n, 1)
		want := map[any]int{"7200": 1, nil: 2}[life]
		if ti.count() != want || len(srv.Messages()) != 3 {
			t.Fatalf("expires_in %v: %d tokens for %d messages, want %d", life, ti.count(), len(srv.Messages()), want)
		}
	}
}
