// Package tripcount is a TCP proxy in front of a database server that
// counts round trips: one each time a client speaks after the server has
// answered, so a pipeline of statements sent together counts once. Tests
// and benchmarks use it to hold a store to the round trips a write may
// take, and to hold back each round trip as a network would.
package tripcount

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection it accepts to one server address.
type Proxy struct {
	dsn    string
	target string
	delay  time.Duration
	ln     net.Listener
	trips  atomic.Int64
	wg     sync.WaitGroup
}

// Start listens on a loopback port and forwards to the host of dsn, a
// postgres:// URL (port 5432 when it names none). delay, when positive,
// is held back before each round trip is forwarded. DSN gives the URL to
// connect through the proxy.
func Start(dsn string, delay time.Duration) (*Proxy, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("tripcount: round trips are counted for URLs that name a host (%q): %v", dsn, err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tripcount: %w", err)
	}
	u.Host = ln.Addr().String()
	p := &Proxy{dsn: u.String(), target: target, delay: delay, ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
	return p, nil
}

// DSN is the URL that connects through the proxy.
func (p *Proxy) DSN() string { return p.dsn }

// Trips is the number of round trips counted so far, over every
// connection.
func (p *Proxy) Trips() int64 { return p.trips.Load() }

// Close stops accepting connections; those open end with their peers.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) forward(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	// answered is set when the server has sent bytes since the client
	// last spoke; the client's next bytes start a new round trip.
	var answered atomic.Bool
	answered.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				answered.Store(true)
				if _, werr := client.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		client.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if answered.Swap(false) {
				p.trips.Add(1)
				if p.delay > 0 {
					time.Sleep(p.delay)
				}
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	<-done
}
