package tripcount

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// An echo server behind the proxy: each request line answered before the
// next is sent is a round trip; lines sent together before any answer are
// one.
func TestCountsRoundTrips(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	p, err := Start("postgres://u@"+ln.Addr().String()+"/db", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.DSN() == "postgres://u@"+ln.Addr().String()+"/db" {
		t.Fatal("the proxy's DSN names the server, not the proxy")
	}
	host := p.ln.Addr().String()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Trips(); got != 3 {
		t.Fatalf("three request-answer exchanges counted as %d round trips", got)
	}
	// Two lines written at once, then both answers read: one round trip.
	if _, err := c.Write([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Trips(); got != 4 {
		t.Fatalf("a pipelined pair counted as %d more round trips, want 1", got-3)
	}
}

func TestDelayIsHeldBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 16)
		n, _ := c.Read(buf)
		c.Write(buf[:n])
	}()
	p, err := Start("postgres://"+ln.Addr().String(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write([]byte("x"))
	buf := make([]byte, 1)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("a round trip through a 50 ms proxy took %v", took)
	}
}

func TestRefusesAURLWithoutAHost(t *testing.T) {
	if _, err := Start("postgres:///db?host=/run/postgresql", 0); err == nil {
		t.Fatal("a socket URL was accepted")
	}
}
