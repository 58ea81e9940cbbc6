package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"flrh.dev/flrh/ratelimit"
)

// rates holds each authenticated caller, by actor, to its rate: its
// token's, or the server's. The count is this process's: several servers
// behind one address each hold a caller to the rate, so it may reach
// that many times it in all.
type rates struct {
	mu sync.Mutex
	l  ratelimit.Limiter
}

// rateOf is the rate p is held to: its own, or the server's.
func (s *Server) rateOf(p Principal) ratelimit.Limit {
	if p.Rate != nil {
		return *p.Rate
	}
	return s.cfg.RateLimit
}

// admit spends one of p's requests, or answers 429 with when to come
// again. A refused request spends nothing, so a caller retrying early is
// not pushed further back.
func (s *Server) admit(p Principal) *Error {
	lim := s.rateOf(p)
	if lim == (ratelimit.Limit{}) {
		return nil
	}
	s.rates.mu.Lock()
	ok, wait := s.rates.l.Take(p.Actor, lim, time.Now())
	s.rates.mu.Unlock()
	if ok {
		return nil
	}
	return &Error{Status: http.StatusTooManyRequests, Type: TypeRateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("actor %s made more requests than its rate, %s, allows: try again in %s", p.Actor, lim, wait.Round(time.Millisecond))}
}
