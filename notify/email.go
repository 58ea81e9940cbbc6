package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/store"
)

// FormatEmail sends a notice as an e-mail through an SMTP server: the
// route's URL is smtp://[USER:PASSWORD@]HOST[:PORT] (STARTTLS, port 587
// by default; required but to a loopback host) or smtps://… (TLS from
// the first byte, port 465), From and To its envelope and headers. No
// signature: the mail server's authentication and the message's
// Message-ID, one per notice, stand for it.
const FormatEmail = "email"

// MaxRecipients bounds an e-mail route's To.
const MaxRecipients = 50

// emailScheme reports whether u is an SMTP URL an e-mail route takes.
func emailScheme(u *url.URL) bool { return u.Scheme == "smtp" || u.Scheme == "smtps" }

// checkEmail checks what an e-mail route needs beyond a webhook's: an
// SMTP URL, a From and at least one To, each one address.
func checkEmail(r *Route, u *url.URL, where string) error {
	switch {
	case !emailScheme(u) || u.Host == "":
		return errors.New(where + "an e-mail route's URL is smtp://HOST[:PORT] or smtps://HOST[:PORT]")
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return errors.New(where + "an e-mail route's URL has no path, query or fragment")
	case r.Template != "":
		return errors.New(where + "an e-mail route takes no template")
	}
	if r.OAuth2 != nil {
		if err := checkOAuth2(r.OAuth2, u, where); err != nil {
			return err
		}
	}
	if _, why := checkRecipients(r.From, r.To); why != "" {
		return errors.New(where + why)
	}
	return nil
}

// checkRecipients checks an e-mail route's sender and recipients, for a
// Route and for a routes file's spec alike: why is "" when they are
// good, and otherwise says what is wrong with member, from or to.
func checkRecipients(from string, to []string) (member, why string) {
	switch {
	case from == "":
		return "from", "an e-mail route needs from, the sender's address"
	case len(to) == 0:
		return "to", "an e-mail route needs to, one recipient at least"
	case len(to) > MaxRecipients:
		return "to", fmt.Sprintf("%d recipients, more than %d", len(to), MaxRecipients)
	}
	if err := oneAddress(from); err != nil {
		return "from", fmt.Sprintf("%q: %v", from, err)
	}
	for _, a := range to {
		if err := oneAddress(a); err != nil {
			return "to", fmt.Sprintf("%q: %v", a, err)
		}
	}
	return "", ""
}

// oneAddress checks that a is one bare address (name@domain), which the
// SMTP envelope takes as it is.
func oneAddress(a string) error {
	p, err := mail.ParseAddress(a)
	if err != nil {
		return errors.New("not an e-mail address")
	}
	if p.Name != "" || p.Address != a {
		return errors.New("give the address alone (name@example.com)")
	}
	return nil
}

// sendEmail delivers no to the e-mail route r; why is "" when the mail
// server took it. The reason names the server's answer, never the URL's
// user or password.
func (n *Notifier) sendEmail(ctx context.Context, r *Route, no store.Notice) (why string) {
	msg, err := n.emailMessage(r, no)
	if err != nil {
		return "the notice's body is not JSON: " + err.Error()
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return "the mail server's URL does not parse"
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = map[string]string{"smtp": "587", "smtps": "465"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	tlsConfig := &tls.Config{ServerName: host, RootCAs: n.cfg.RootCAs, MinVersion: tls.VersionTLS12}
	var d net.Dialer
	var conn net.Conn
	if u.Scheme == "smtps" {
		conn, err = (&tls.Dialer{NetDialer: &d, Config: tlsConfig}).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	} else {
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	}
	if err != nil {
		return "connecting to the mail server: " + sendError(err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return smtpError("greeting", err)
	}
	defer c.Close()
	if err := c.Hello(n.helloName()); err != nil {
		return smtpError("EHLO", err)
	}
	if u.Scheme == "smtp" {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(tlsConfig); err != nil {
				return smtpError("STARTTLS", err)
			}
		} else if !loopback(host) {
			// Credentials and notices in clear over the network: no.
			return "the mail server offers no STARTTLS"
		}
	}
	switch {
	case r.OAuth2 != nil:
		token, why := n.accessToken(ctx, *r.OAuth2)
		if why != "" {
			return why
		}
		auth, why := chooseOAuth(c, u.User.Username(), token, host)
		if why != "" {
			return why
		}
		if err := c.Auth(auth); err != nil {
			n.forgetToken(*r.OAuth2) // refused: the next delivery asks for a new one
			return smtpError("AUTH", err)
		}
	case u.User != nil:
		pass, _ := u.User.Password()
		auth, why := chooseAuth(c, u.User.Username(), pass, host)
		if why != "" {
			return why
		}
		if err := c.Auth(auth); err != nil {
			return smtpError("AUTH", err)
		}
	}
	if err := c.Mail(r.From); err != nil {
		return smtpError("MAIL FROM", err)
	}
	for _, to := range r.To {
		if err := c.Rcpt(to); err != nil {
			return smtpError("RCPT TO "+to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return smtpError("DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return smtpError("sending the message", err)
	}
	if err := w.Close(); err != nil {
		return smtpError("the end of the message", err)
	}
	c.Quit() // taken: what QUIT answers changes nothing
	return ""
}

// chooseAuth picks how to authenticate among what the server offers:
// PLAIN, or LOGIN where PLAIN is not offered (Microsoft 365's submission
// port, among others). Both send the password as it is, so either only
// over TLS or to this machine (net/smtp's PlainAuth refuses otherwise;
// loginAuth does the same).
func chooseAuth(c *smtp.Client, user, pass, host string) (smtp.Auth, string) {
	mechs, offered, ok := authOffered(c)
	if !ok {
		return nil, "the mail server offers no AUTH, and the URL names a user"
	}
	switch {
	case slices.Contains(mechs, "PLAIN"):
		return smtp.PlainAuth("", user, pass, host), ""
	case slices.Contains(mechs, "LOGIN"):
		return &loginAuth{user: user, pass: pass, host: host}, ""
	}
	return nil, "the mail server offers AUTH " + offered + ", neither PLAIN nor LOGIN"
}

// authOffered is what the server's EHLO offered for AUTH: the mechanisms
// upper-cased, and as it wrote them; ok is false when it offers no AUTH.
func authOffered(c *smtp.Client) (mechs []string, offered string, ok bool) {
	ok, offered = c.Extension("AUTH")
	return strings.Fields(strings.ToUpper(offered)), offered, ok
}

// loginAuth is the LOGIN mechanism: the server prompts for the user name
// and then the password.
type loginAuth struct{ user, pass, host string }

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if !server.TLS && !loopback(server.Name) {
		return "", nil, errors.New("refusing to send the password without TLS")
	}
	if server.Name != a.host {
		return "", nil, errors.New("wrong host name")
	}
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	switch prompt := strings.ToLower(strings.TrimSpace(string(fromServer))); {
	case strings.HasPrefix(prompt, "username"):
		return []byte(a.user), nil
	case strings.HasPrefix(prompt, "password"):
		return []byte(a.pass), nil
	default:
		return nil, fmt.Errorf("unexpected LOGIN prompt %q", fromServer)
	}
}

// smtpError says what the mail server answered to a step, or why it
// could not be asked.
func smtpError(step string, err error) string {
	var te *textproto.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("the mail server answered %s with %d %s", step, te.Code, te.Msg)
	}
	return "the mail server at " + step + ": " + sendError(err)
}

// loopback reports whether host is this machine, where a mail server
// without TLS reads nothing the network could.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// helloName is the name EHLO gives: the machine's, or localhost.
func (n *Notifier) helloName() string {
	if n.cfg.Hostname != "" {
		return n.cfg.Hostname
	}
	return "localhost"
}

// emailMessage is the message no makes for route r: headers naming the
// notice (its Message-ID the same at every delivery, so mail clients and
// archives keep one; its run's thread in References), the sentence a
// person reads as subject and body.
func (n *Notifier) emailMessage(r *Route, no store.Notice) ([]byte, error) {
	var b store.NoticeBody
	if err := json.Unmarshal(no.Body, &b); err != nil {
		return nil, err
	}
	after := r.escalatedAfter(no)
	subject := stillWaiting(PlainText(b, ""), after)
	text := stillWaiting(PlainText(b, n.cfg.Link), after)
	sum := sha256.Sum256([]byte(no.ID))
	var m bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&m, "%s: %s\r\n", k, v) }
	header("From", r.From)
	header("To", strings.Join(r.To, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", n.cfg.Clock().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(sum[:16])+"@notice.flrh>")
	if no.RunID != "" {
		// Every notice of one run refers to one message of its own, so
		// that mail clients keep a run's notices in one thread.
		run := sha256.Sum256([]byte(no.RunID))
		thread := "<" + hex.EncodeToString(run[:16]) + "@run.flrh>"
		header("In-Reply-To", thread)
		header("References", thread)
	}
	header("X-Flrh-Notice-Id", mime.QEncoding.Encode("utf-8", no.ID))
	header("X-Flrh-Notice-Kind", no.Kind)
	header("X-Flrh-Notice-Attempt", fmt.Sprint(no.Attempts))
	header("Auto-Submitted", "auto-generated") // RFC 3834: no vacation replies
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	m.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&m)
	fmt.Fprintf(qp, "%s\r\n\r\nNotice %s, delivery %d.\r\n", text, no.ID, no.Attempts)
	qp.Close()
	return m.Bytes(), nil
}
