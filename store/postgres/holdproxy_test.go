package postgres

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// holdProxy forwards connections to the test's server and, once hold is
// set, forwards nothing more of what the server answers: the client's
// messages still reach the server, which runs them, and their answers
// are lost when the test cuts the connections.
type holdProxy struct {
	ln    net.Listener
	hold  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
}

// newHoldProxy starts a proxy to the server of dsn and returns it with the
// DSN that connects through it.
func newHoldProxy(t *testing.T, dsn string) (*holdProxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("the test's DSN names no host to stand in for: %q", dsn)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &holdProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { io.Copy(server, client); server.Close() }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 && !p.hold.Load() {
						if _, err := client.Write(buf[:n]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				client.Close()
			}()
		}
	}()
	u.Host = ln.Addr().String()
	return p, u.String()
}

// cut closes every connection through the proxy.
func (p *holdProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A folded tick (one statement, sent without a pipeline) whose answer is
// lost after the server committed it is reported as lost (UNAVAILABLE:
// its outcome unknown), never as refused or retried, as a tick through the
// pipeline is (TestImplicitTickAnswerLost): it landed once.
func TestOneStatementTickAnswerLost(t *testing.T) {
	schema := freshSchema(t)
	p, through := newHoldProxy(t, dsn(t))
	s, err := Open(ctx, through, Options{Schema: schema, MaxConns: 1})
	must(t, err)
	defer s.Close()
	defer p.cut() // before the store waits for its connection
	adm := admin(t)
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	// The second tick prepares the folded statement on the connection.
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 0, Events: []store.Event{storetest.Ev("A", `{"n":1}`)}}))
	must(t, s.Commit(ctx, l, store.Tick{ExpectHead: 1, Events: []store.Event{storetest.Ev("B", `{"n":2}`)}}))

	tick := store.Tick{ExpectHead: 2, Events: []store.Event{storetest.Ev("C", `{"n":3}`)}}
	var sent [][]string
	testSent = func(sqls []string) { sent = append(sent, append([]string(nil), sqls...)) }
	defer func() { testSent = nil }()
	p.hold.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.Commit(ctx, l, tick) }()
	waitFor(t, func() bool { return headOf(t, adm, schema, "r") == 3 })
	p.cut()
	mustCode(t, <-done, store.CodeUnavailable)
	testSent = nil
	if len(sent) != 1 || len(sent[0]) != 1 {
		t.Fatalf("sent %q, want one commit of one statement", sent)
	}
	// The tick landed once; sent again (on a new connection), it is
	// refused as stale.
	p.hold.Store(false)
	evs, err := s.Events(ctx, "r", 0)
	must(t, err)
	if len(evs) != 3 || evs[2].Kind != "C" {
		t.Fatalf("events after the lost answer: %+v", evs)
	}
	mustCode(t, s.Commit(ctx, l, tick), store.CodeHeadMismatch)
}
