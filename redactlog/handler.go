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
	return &handler{next: next, s: s}
}

type handler struct {
	next slog.Handler
	s    *redact.Scrubber
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(h.s.String(name)), s: h.s}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, c := range g {
			clean[i] = h.attr(c)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		text := fmt.Sprintf("%+v", v.Any())
		if scrubbed := h.s.String(text); scrubbed != text {
			return slog.String(a.Key, scrubbed)
		}
		return slog.Attr{Key: a.Key, Value: v}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
