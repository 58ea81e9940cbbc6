// Package redactlog keeps known secrets out of log records: a slog.Handler
// that scrubs every record with a redact.Scrubber before passing it on.
package redactlog

import (
	"context"
	"fmt"
	"log/slog"

	"flrh.dev/flrh/redact"
)

// Handler wraps a slog.Handler so that no record it passes on carries a
// known secret: the message and every attribute's text (strings, errors,
// anything printed with %v, inside groups too) are scrubbed. It is the
// last line of defence: secrets are kept out of what is logged in the
// first place.
func Handler(next slog.Handler, s *redact.Scrubber) slog.Handler {
	if s.Len() == 0 {
		return next
	}
	return &handler{next: next, s: func() *redact.Scrubber { return s }}
}

// HandlerFrom is Handler with the scrubber current calls returns at each
// record: a server that learns new secrets while it runs (credentials
// reloaded) scrubs them from the next record on.
func HandlerFrom(next slog.Handler, current func() *redact.Scrubber) slog.Handler {
	return &handler{next: next, s: current}
}

type handler struct {
	next slog.Handler
	s    func() *redact.Scrubber
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.s()
	out := slog.NewRecord(r.Time, r.Level, s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(s, a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	s := h.s()
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(s, a)
	}
	return &handler{next: h.next.WithAttrs(clean), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(h.s().String(name)), s: h.s}
}

func attr(s *redact.Scrubber, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, s.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, c := range g {
			clean[i] = attr(s, c)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		text := fmt.Sprintf("%+v", v.Any())
		if scrubbed := s.String(text); scrubbed != text {
			return slog.String(a.Key, scrubbed)
		}
		return slog.Attr{Key: a.Key, Value: v}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
