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

// take spends one of key's requests under lim now, or says how long
// until one would be allowed: Limiter.Take under the lock.
func (r *rates) take(key string, lim ratelimit.Limit) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.l.Take(key, lim, time.Now())
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
	ok, wait := s.rates.take(p.Actor, lim)
	if ok {
		return nil
	}
	return &Error{Status: http.StatusTooManyRequests, Type: TypeRateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("actor %s made more requests than its rate, %s, allows: try again in %s", p.Actor, lim, wait.Round(time.Millisecond))}
}
