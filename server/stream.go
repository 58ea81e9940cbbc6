package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"flrh.dev/flrh/store"
)

// Notifier tells event streams that a run committed, so they push the new
// events at once rather than at their next poll.
type Notifier struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// noticed is called after a commit that wrote a notice (OnNotices).
	noticed func()
}

// OnNotices has f called after every commit through the wrapped store
// that wrote a store.Notice: a notifier's wake-up, so that a notice is
// delivered as soon as it is committed rather than at the next poll. Set
// it before the store is used; f must not block.
func (n *Notifier) OnNotices(f func()) { n.noticed = f }

// NotifyCommits wraps st so that every successful Commit (and Quarantine,
// and Release) notifies the returned Notifier. Give the wrapped store to the runner and
// the Notifier to the server's Config.
func NotifyCommits(st store.Store) (store.Store, *Notifier) {
	n := &Notifier{}
	return notifyingStore{Store: st, n: n}, n
}

type notifyingStore struct {
	store.Store
	n *Notifier
}

// Unwrap implements store.Unwrapper: the runner finds the wrapped store's
// ReadyLister through it.
func (s notifyingStore) Unwrap() store.Store { return s.Store }

func (s notifyingStore) Commit(ctx context.Context, lease store.Lease, tick store.Tick) error {
	err := s.Store.Commit(ctx, lease, tick)
	if err == nil {
		s.n.Notify(lease.RunID)
		if len(tick.Notices) > 0 && s.n.noticed != nil {
			s.n.noticed()
		}
	}
	return err
}

func (s notifyingStore) Quarantine(ctx context.Context, runID, reason string, notices ...store.Notice) error {
	err := s.Store.Quarantine(ctx, runID, reason, notices...)
	if err == nil {
		s.n.Notify(runID)
		if len(notices) > 0 && s.n.noticed != nil {
			s.n.noticed()
		}
	}
	return err
}

// Release notifies too: a released run's stream may have work again.
func (s notifyingStore) Release(ctx context.Context, rel store.Release) error {
	err := s.Store.Release(ctx, rel)
	if err == nil {
		s.n.Notify(rel.RunID)
	}
	return err
}

// Notify wakes every stream of the run. It never blocks.
func (n *Notifier) Notify(runID string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[runID] {
		select {
		case ch <- struct{}{}:
		default: // a wake is already pending
		}
	}
}

// subscribe returns a channel woken on the run's commits and a function
// that ends the subscription. A nil Notifier gives a channel never woken.
func (n *Notifier) subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	if n == nil {
		return ch, func() {}
	}
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[string]map[chan struct{}]struct{}{}
	}
	if n.subs[runID] == nil {
		n.subs[runID] = map[chan struct{}]struct{}{}
	}
	n.subs[runID][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.subs[runID], ch)
		if len(n.subs[runID]) == 0 {
			delete(n.subs, runID)
		}
		n.mu.Unlock()
	}
}

// heartbeat keeps idle streams alive through proxies.
const heartbeat = 15 * time.Second

// stream pushes a run's events as server-sent events as they commit:
// each event is "id: SEQ", "event: KIND", "data: <EventView JSON>". A
// client resumes with Last-Event-ID (or ?after=SEQ). When the run has
// ended and every event is sent, a final "event: end" carries the run's
// header and the stream closes. A stream whose token is revoked (SetTokens)
// ends with "event: revoked", one whose token expires with "event: expired".
func (s *Server) stream(w http.ResponseWriter, r *http.Request, _ Principal) error {
	id, err := runQuery(r, "after")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after, err := intParam(q, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || n < 0 {
			return apiErr(http.StatusBadRequest, TypeMalformed, "Last-Event-ID", "Last-Event-ID must be an event sequence number")
		}
		after = n
	}
	if _, err := s.cfg.Store.Run(r.Context(), id); err != nil {
		return err
	}
	if n := s.streams.Add(1); n > int64(s.cfg.MaxStreams) {
		s.streams.Add(-1)
		return apiErr(http.StatusServiceUnavailable, TypeUnavailable, "", "too many open event streams; retry later")
	}
	defer s.streams.Add(-1)
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()

	wake, unsubscribe := s.cfg.Notifier.subscribe(id)
	defer unsubscribe()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	rc.Flush()

	poll := time.NewTicker(s.cfg.StreamPoll)
	defer poll.Stop()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	ctx := r.Context()
	for {
		evs, err := s.cfg.Store.Events(ctx, id, after)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("stream read", "request_id", requestID(r), "run_id", id, "err", err.Error())
			}
			endIfRevoked(ctx, w, rc)
			return nil
		}
		for _, e := range evs {
			data, _ := json.Marshal(eventView(e))
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data); err != nil {
				return nil
			}
			after = e.Seq
		}
		if len(evs) > 0 {
			if rc.Flush() != nil {
				return nil
			}
		}
		if len(evs) == 0 {
			run, err := s.cfg.Store.Run(ctx, id)
			if err == nil && run.Head <= after && (run.Outcome != "" || run.Quarantine != "") {
				data, _ := json.Marshal(ViewRun(run))
				fmt.Fprintf(w, "event: end\ndata: %s\n\n", data)
				rc.Flush()
				return nil
			}
		}
		select {
		case <-ctx.Done():
			endIfRevoked(ctx, w, rc)
			return nil
		case <-s.closing():
			fmt.Fprint(w, "event: shutdown\ndata: {}\n\n")
			rc.Flush()
			return nil
		case <-wake:
		case <-poll.C:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// endIfRevoked tells a stream's client that it ends because its token
// was revoked ("event: revoked") or expired ("event: expired"), when that
// is why ctx is done.
func endIfRevoked(ctx context.Context, w io.Writer, rc *http.ResponseController) {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrTokenRevoked):
		fmt.Fprint(w, "event: revoked\ndata: {}\n\n")
	case errors.Is(cause, ErrTokenExpired):
		fmt.Fprint(w, "event: expired\ndata: {}\n\n")
	default:
		return
	}
	rc.Flush()
}

// Shutdown ends every open event stream, so that an http.Server's own
// Shutdown, which waits for handlers, is not held up by them. Register it
// with http.Server.RegisterOnShutdown.
func (s *Server) Shutdown() {
	s.closeOnce.Do(func() { close(s.done) })
}

func (s *Server) closing() <-chan struct{} { return s.done }
