package notify

import (
	"crypto/tls"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/smtp"
	"slices"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/internal/smtptest"
	"flrh.dev/flrh/internal/testpki"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// mailServer starts a test mail server with a certificate for localhost
// signed by a CA of its own, and returns it with that CA's pool.
func mailServer(t *testing.T, o smtptest.Options) (*smtptest.Server, *testpki.PKI) {
	t.Helper()
	pki := testpki.New(t, "mail CA")
	cert := pki.Issue(t, "mail", false, "localhost")
	o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	return smtptest.Start(t, o), pki
}

// readMail parses a message the server took: its headers, subject
// decoded, and its body, quoted-printable decoded.
func readMail(t *testing.T, m smtptest.Message) (mail.Header, string, string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
	if err != nil {
		t.Fatalf("%v\n%s", err, m.Data)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
		t.Fatalf("transfer encoding %q", msg.Header.Get("Content-Transfer-Encoding"))
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	return msg.Header, subject, string(body)
}

// An e-mail route sends each notice as a message through its mail server:
// over STARTTLS checked against the CA given, authenticated with the
// URL's user and password, from and to the addresses it names, the
// sentence as subject and body, the notice's id in its headers and one
// Message-ID for every delivery of it. A refused message is tried again
// after its backoff; the reason kept names the server's answer, never the
// password.
func TestEmailRoute(t *testing.T) {
	f := newFixture(t)
	srv, pki := mailServer(t, smtptest.Options{Script: []int{451}})
	route := Route{Name: "mail", URL: "smtp://flrh:pw-9f2c81@localhost:" + srv.Port(), Format: FormatEmail,
		From: "flrh@example.com", To: []string{"finance@example.com", "audit@example.com"}}
	n := f.routed("a", []Route{route}, func(c *Config) {
		c.RootCAs, c.MinDelay, c.Link, c.Hostname = pki.Pool(), time.Second, "https://flrh.example.com", "runner-1.example.com"
	})
	id := f.commit("r1", "refund-agent", store.NoticeApproval)
	f.pass(n, 1)
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil || b.Count != 1 || b.Oldest.LastError != "route mail: the mail server answered the end of the message with 451 try again later" {
		t.Fatalf("backlog %+v (%v)", b, err)
	}
	f.clock.Advance(time.Second)
	f.pass(n, 1)
	msgs := srv.Messages()
	if len(msgs) != 2 || f.seen["mail/delivered"] != 1 || f.seen["mail/failed"] != 1 {
		t.Fatalf("the server took %d messages; outcomes %v", len(msgs), f.seen)
	}
	var ids []string
	for i, m := range msgs {
		if !m.TLS || m.User != "flrh" || m.Pass != "pw-9f2c81" || m.From != "flrh@example.com" ||
			!slices.Equal(m.To, []string{"finance@example.com", "audit@example.com"}) {
			t.Fatalf("message %d: TLS %v, user %q, from %q, to %q", i, m.TLS, m.User, m.From, m.To)
		}
		h, subject, body := readMail(t, m)
		if want := "flrh: Run r1 (refund-agent@1) waits for an approval (0 requests)."; subject != want {
			t.Errorf("subject %q, want %q", subject, want)
		}
		if !strings.Contains(body, "Open the approvals inbox: https://flrh.example.com/ui/#/inbox") || !strings.Contains(body, "Notice "+id) {
			t.Errorf("body %q", body)
		}
		if h.Get("X-Flrh-Notice-Id") != id || h.Get("X-Flrh-Notice-Kind") != store.NoticeApproval || h.Get("X-Flrh-Notice-Attempt") != []string{"1", "2"}[i] ||
			h.Get("Auto-Submitted") != "auto-generated" || h.Get("To") != "finance@example.com, audit@example.com" || h.Get("From") != "flrh@example.com" {
			t.Errorf("headers %v", h)
		}
		if _, err := h.Date(); err != nil {
			t.Errorf("date: %v", err)
		}
		ids = append(ids, h.Get("Message-Id"))
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("Message-IDs %q", ids)
	}
	// The run's end, mailed too, is in the approval's thread: both refer
	// to the run's own message, which another run's notices do not.
	l, err := f.store.AcquireLease(ctx, "r1", "w", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"kind":"run_ended","run_id":"r1","workflow_id":"refund-agent","workflow_version":"1","outcome":"success"}`
	if err := f.store.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("END", `{}`)}, State: "SUCCEEDED", Outcome: "success",
		Notices: []store.Notice{{Kind: store.NoticeEnded, Body: []byte(body)}}}); err != nil {
		t.Fatal(err)
	}
	f.commit("r2", "refund-agent", store.NoticeApproval)
	f.pass(n, 2)
	all := srv.Messages()
	if len(all) != 4 {
		t.Fatalf("%d messages", len(all))
	}
	thread := map[string]string{}
	for _, m := range all {
		h, subject, _ := readMail(t, m)
		if h.Get("In-Reply-To") != h.Get("References") || !strings.HasSuffix(h.Get("References"), "@run.flrh>") {
			t.Fatalf("%q: in reply to %q, references %q", subject, h.Get("In-Reply-To"), h.Get("References"))
		}
		run := strings.Fields(subject)[2] // "flrh: Run r1 …"
		if was, ok := thread[run]; ok && was != h.Get("References") {
			t.Fatalf("run %s's notices in two threads: %q, %q", run, was, h.Get("References"))
		}
		thread[run] = h.Get("References")
	}
	if len(thread) != 2 || thread["r1"] == thread["r2"] {
		t.Fatalf("threads %v", thread)
	}
	if count, _ := f.heldBacklog(); count != 0 {
		t.Fatalf("backlog %d", count)
	}
}

// smtps speaks TLS from the first byte; a mail server on this machine
// without TLS is written to in clear (nothing crosses a network), and a
// mail server that refuses a recipient is named with its answer.
func TestEmailRouteTransports(t *testing.T) {
	f := newFixture(t)
	implicit, pki := mailServer(t, smtptest.Options{Implicit: true})
	plain := smtptest.Start(t, smtptest.Options{RefuseRcpt: map[string]int{"nobody@example.com": 550}})
	routes := []Route{
		{Name: "smtps", URL: "smtps://localhost:" + implicit.Port(), Format: FormatEmail, From: "flrh@example.com", To: []string{"ops@example.com"}},
		{Name: "local", URL: "smtp://127.0.0.1:" + plain.Port(), Format: FormatEmail, From: "flrh@example.com", To: []string{"ops@example.com"}},
		{Name: "refused", URL: "smtp://127.0.0.1:" + plain.Port(), Format: FormatEmail, From: "flrh@example.com", To: []string{"nobody@example.com"}},
	}
	n := f.routed("a", routes, func(c *Config) { c.RootCAs = pki.Pool() })
	f.ended("done")
	f.pass(n, 1)
	if m := implicit.Messages(); len(m) != 1 || !m[0].TLS {
		t.Fatalf("smtps took %+v", m)
	}
	if m := plain.Messages(); len(m) != 1 || m[0].TLS || !slices.Equal(m[0].To, []string{"ops@example.com"}) {
		t.Fatalf("the local server took %+v", m)
	}
	b, err := f.store.NoticeBacklog(ctx)
	if err != nil || b.Oldest.LastError != "route refused: the mail server answered RCPT TO nobody@example.com with 550 no such mailbox" {
		t.Fatalf("backlog %+v (%v)", b, err)
	}
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true, "127.0.0.53": true,
		"mail.example.com": false, "10.0.0.1": false, "": false} {
		if loopback(host) != want {
			t.Errorf("loopback(%q) = %v", host, !want)
		}
	}
}

// An e-mail route is refused without what it needs, and with what only a
// webhook takes; a webhook with an e-mail route's members too.
func TestNewRefusesEmailRoutes(t *testing.T) {
	f := newFixture(t)
	good := func(edit func(*Route)) Route {
		r := Route{Name: "mail", URL: "smtp://u:secret-pw@mail.example.com", Format: FormatEmail, From: "flrh@example.com", To: []string{"a@example.com"}}
		edit(&r)
		return r
	}
	if _, err := New(Config{Board: f.store, Holder: "a", Routes: []Route{good(func(*Route) {})}}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		r    Route
		find string
	}{
		"an http URL":           {good(func(r *Route) { r.URL = "https://mail.example.com/x" }), "smtp://HOST[:PORT] or smtps://"},
		"a path":                {good(func(r *Route) { r.URL = "smtp://mail.example.com/inbox" }), "no path, query or fragment"},
		"no from":               {good(func(r *Route) { r.From = "" }), "needs from"},
		"no to":                 {good(func(r *Route) { r.To = nil }), "needs to"},
		"a named sender":        {good(func(r *Route) { r.From = "Flrh <flrh@example.com>" }), "give the address alone"},
		"not an address":        {good(func(r *Route) { r.To = []string{"finance"} }), `"finance": not an e-mail address`},
		"too many":              {good(func(r *Route) { r.To = slices.Repeat([]string{"a@example.com"}, MaxRecipients+1) }), "more than 50"},
		"a template":            {good(func(r *Route) { r.Template = "{}" }), "takes no template"},
		"an unknown kind":       {good(func(r *Route) { r.Kinds = []string{"paged"} }), `"paged" is not a kind`},
		"a webhook's from":      {Route{Name: "hook", URL: "https://x.example/h", Secret: secret, From: "flrh@example.com"}, "from, to and oauth2 are an e-mail or SMS route's"},
		"a webhook's oauth2":    {Route{Name: "hook", URL: "https://x.example/h", Secret: secret, OAuth2: &OAuth2{}}, "from, to and oauth2 are an e-mail or SMS route's"},
		"oauth2 and a password": {good(func(r *Route) { r.OAuth2 = oauth2Client() }), "the URL holds no password"},
		"oauth2, no mailbox":    {good(func(r *Route) { r.URL, r.OAuth2 = "smtp://mail.example.com", oauth2Client() }), "names the mailbox as its user"},
		"oauth2 over http": {good(func(r *Route) {
			r.URL, r.OAuth2 = "smtp://u@mail.example.com", oauth2Client()
			r.OAuth2.TokenURL = "http://login.example.com/token"
		}), "token URL is https://"},
		"oauth2, no scope": {good(func(r *Route) {
			r.URL, r.OAuth2 = "smtp://u@mail.example.com", oauth2Client()
			r.OAuth2.Scope = ""
		}), "needs a client id, its secret and a scope"},
		"a webhook via smtp": {Route{Name: "hook", URL: "smtp://mail.example.com", Secret: secret}, "the webhook URL is not an http or https URL"},
	} {
		_, err := New(Config{Board: f.store, Holder: "a", Routes: []Route{c.r}})
		if err == nil || !strings.Contains(err.Error(), c.find) || strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A mail server offering LOGIN alone (Microsoft 365's submission port,
// among others) is logged in to with LOGIN, one offering PLAIN too with
// PLAIN; one offering neither is a failure naming what it offers. LOGIN,
// like PLAIN, sends the password only over TLS or to this machine.
func TestEmailAuthMechanisms(t *testing.T) {
	for _, c := range []struct {
		offers, used, why string
	}{
		{offers: "LOGIN", used: "LOGIN"},
		{offers: "PLAIN LOGIN", used: "PLAIN"},
		{offers: "LOGIN PLAIN", used: "PLAIN"},
		{offers: "CRAM-MD5", why: "route mail: the mail server offers AUTH CRAM-MD5, neither PLAIN nor LOGIN"},
	} {
		t.Run(c.offers, func(t *testing.T) {
			f := newFixture(t)
			srv, pki := mailServer(t, smtptest.Options{Auth: c.offers})
			route := Route{Name: "mail", URL: "smtp://flrh%40example.com:pw%3A1@localhost:" + srv.Port(), Format: FormatEmail,
				From: "flrh@example.com", To: []string{"ops@example.com"}}
			n := f.routed("a", []Route{route}, func(cfg *Config) { cfg.RootCAs = pki.Pool() })
			f.ended("r1")
			f.pass(n, 1)
			msgs := srv.Messages()
			if c.why != "" {
				b, err := f.store.NoticeBacklog(ctx)
				if err != nil || len(msgs) != 0 || b.Oldest.LastError != c.why {
					t.Fatalf("backlog %+v (%v), %d messages", b, err, len(msgs))
				}
				return
			}
			if len(msgs) != 1 || !msgs[0].TLS || msgs[0].Mechanism != c.used || msgs[0].User != "flrh@example.com" || msgs[0].Pass != "pw:1" {
				t.Fatalf("messages %+v", msgs)
			}
		})
	}
	a := &loginAuth{user: "u", pass: "p", host: "mail.example.com"}
	if _, _, err := a.Start(&smtp.ServerInfo{Name: "mail.example.com"}); err == nil {
		t.Fatal("LOGIN without TLS to another machine was allowed")
	}
	if _, _, err := a.Start(&smtp.ServerInfo{Name: "other.example.com", TLS: true}); err == nil {
		t.Fatal("LOGIN to another host than the URL's was allowed")
	}
	if mech, _, err := a.Start(&smtp.ServerInfo{Name: "mail.example.com", TLS: true}); err != nil || mech != "LOGIN" {
		t.Fatalf("LOGIN over TLS: %q, %v", mech, err)
	}
	if _, err := a.Next([]byte("Who are you?"), true); err == nil {
		t.Fatal("an unknown prompt was answered")
	}
}

// oauth2Client is a good OAuth2 for an e-mail route.
func oauth2Client() *OAuth2 {
	return &OAuth2{TokenURL: "https://login.example.com/token", ClientID: "c", ClientSecret: "secret-pw", Scope: "mail"}
}
