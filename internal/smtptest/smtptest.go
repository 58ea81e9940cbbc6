// Package smtptest runs a mail server for tests of e-mail delivery: it
// speaks enough SMTP (EHLO, STARTTLS, AUTH PLAIN, LOGIN, XOAUTH2 or
// OAUTHBEARER, MAIL, RCPT, DATA, RSET,
// NOOP, QUIT) for net/smtp's client, records what it was sent, and
// answers the end of a message as its script says.
package smtptest

import (
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
)

// Message is one message the server took (or refused, with Code).
type Message struct {
	From       string
	To         []string
	Data       []byte
	TLS        bool   // sent over TLS (STARTTLS or from the first byte)
	User, Pass string // AUTH's, "" without (Pass the access token with XOAUTH2 or OAUTHBEARER)
	Mechanism  string // the AUTH mechanism used, "" without
	Code       int    // what the server answered its end with
}

// Server is a running test mail server.
type Server struct {
	// Addr is where it listens, 127.0.0.1:PORT.
	Addr string

	ln       net.Listener
	tls      *tls.Config
	implicit bool
	mu       sync.Mutex
	script   []int // answers to the ends of messages, then 250
	rcpt     map[string]int
	auth     string // the mechanisms EHLO offers
	tokens   func(string) bool
	msgs     []Message
	wg       sync.WaitGroup
}

// Options say how a server talks: with TLS (offered as STARTTLS, or
// from the first byte with Implicit), offering the AUTH mechanisms Auth
// names ("PLAIN" when empty; "LOGIN", or "PLAIN LOGIN"), answering the
// ends of messages with Script (250 once it runs out) and the
// recipients RefuseRcpt names with their code. With XOAUTH2 or
// OAUTHBEARER, Tokens says which access tokens it takes (every one when
// nil); one it refuses is answered as Gmail and Microsoft 365 do, a 334
// with an error in JSON and, after the client's empty line, 535.
type Options struct {
	TLS        *tls.Config
	Implicit   bool
	Auth       string
	Script     []int
	RefuseRcpt map[string]int
	Tokens     func(token string) bool
}

// Start starts a server, stopped when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln, tls: o.TLS, implicit: o.Implicit, script: o.Script, rcpt: o.RefuseRcpt, auth: o.Auth, tokens: o.Tokens}
	if s.auth == "" {
		s.auth = "PLAIN"
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Port is the port it listens on.
func (s *Server) Port() string {
	_, port, _ := net.SplitHostPort(s.Addr)
	return port
}

// Messages returns what it took so far, refused ones included.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Server) serve(c net.Conn) {
	defer func() { c.Close() }()
	secure := false
	if s.implicit {
		tc := tls.Server(c, s.tls)
		if tc.Handshake() != nil {
			return
		}
		c, secure = tc, true
	}
	tp := textproto.NewConn(c)
	reply := func(format string, args ...any) { tp.PrintfLine(format, args...) }
	reply("220 smtptest ESMTP")
	var m Message
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			if s.tls != nil && !secure {
				reply("250-smtptest")
				reply("250-AUTH %s", s.auth)
				reply("250 STARTTLS")
			} else {
				reply("250-smtptest")
				reply("250 AUTH %s", s.auth)
			}
		case "STARTTLS":
			if s.tls == nil || secure {
				reply("502 no")
				continue
			}
			reply("220 go ahead")
			tc := tls.Server(c, s.tls)
			if tc.Handshake() != nil {
				return
			}
			c, secure = tc, true
			tp = textproto.NewConn(c)
			m = Message{}
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			mech = strings.ToUpper(mech)
			if !strings.Contains(" "+s.auth+" ", " "+mech+" ") {
				reply("504 mechanism not offered")
				continue
			}
			switch mech {
			case "PLAIN":
				b, err := base64.StdEncoding.DecodeString(resp)
				parts := strings.Split(string(b), "\x00")
				if err != nil || len(parts) != 3 {
					reply("535 bad credentials")
					continue
				}
				m.User, m.Pass = parts[1], parts[2]
			case "LOGIN":
				// RFC-less but common: a prompt for each, base64 both ways.
				var answers []string
				for _, prompt := range []string{"Username:", "Password:"} {
					reply("334 %s", base64.StdEncoding.EncodeToString([]byte(prompt)))
					line, err := tp.ReadLine()
					if err != nil {
						return
					}
					b, err := base64.StdEncoding.DecodeString(line)
					if err != nil {
						break
					}
					answers = append(answers, string(b))
				}
				if len(answers) != 2 {
					reply("535 bad credentials")
					continue
				}
				m.User, m.Pass = answers[0], answers[1]
			case "XOAUTH2", "OAUTHBEARER":
				user, token, ok := bearer(mech, resp)
				if ok && s.tokens != nil && !s.tokens(token) {
					reply("334 %s", base64.StdEncoding.EncodeToString([]byte(`{"status":"401","schemes":"bearer"}`)))
					if _, err := tp.ReadLine(); err != nil {
						return
					}
					ok = false
				}
				if !ok {
					reply("535 5.7.3 authentication unsuccessful")
					continue
				}
				m.User, m.Pass = user, token
			}
			m.Mechanism = mech
			reply("235 ok")
		case "MAIL":
			m.From = addr(arg)
			reply("250 ok")
		case "RCPT":
			to := addr(arg)
			if code := s.rcpt[to]; code != 0 {
				reply("%d no such mailbox", code)
				continue
			}
			m.To = append(m.To, to)
			reply("250 ok")
		case "DATA":
			reply("354 go on")
			data, err := io.ReadAll(tp.DotReader())
			if err != nil {
				return
			}
			m.Data, m.TLS = data, secure
			s.mu.Lock()
			m.Code = 250
			if len(s.script) > 0 {
				m.Code, s.script = s.script[0], s.script[1:]
			}
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			if m.Code == 250 {
				reply("250 queued")
			} else {
				reply("%d try again later", m.Code)
			}
			m = Message{User: m.User, Pass: m.Pass, Mechanism: m.Mechanism}
		case "RSET":
			m = Message{User: m.User, Pass: m.Pass, Mechanism: m.Mechanism}
			reply("250 ok")
		case "NOOP":
			reply("250 ok")
		case "QUIT":
			reply("221 bye")
			return
		default:
			reply("500 unknown")
		}
	}
}

// addr is the address in "FROM:<a>" or "TO:<a>" (parameters after it
// dropped).
func addr(arg string) string {
	_, a, _ := strings.Cut(arg, ":")
	a, _, _ = strings.Cut(strings.TrimSpace(a), " ")
	return strings.Trim(a, "<>")
}

// bearer reads an XOAUTH2 or OAUTHBEARER initial response: the user and
// the access token.
func bearer(mech, resp string) (user, token string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(resp)
	if err != nil {
		return "", "", false
	}
	fields := strings.Split(string(b), "\x01")
	if mech == "OAUTHBEARER" {
		// "n,a=USER," then the same key=value fields.
		gs2, rest, found := strings.Cut(string(b), ",\x01")
		if !found || !strings.HasPrefix(gs2, "n,a=") {
			return "", "", false
		}
		user = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(strings.TrimPrefix(gs2, "n,a="))
		fields = strings.Split(rest, "\x01")
	}
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, "user=") && mech == "XOAUTH2":
			user = strings.TrimPrefix(f, "user=")
		case strings.HasPrefix(f, "auth=Bearer "):
			token = strings.TrimPrefix(f, "auth=Bearer ")
		}
	}
	return user, token, user != "" && token != "" && strings.HasSuffix(string(b), "\x01\x01")
}
