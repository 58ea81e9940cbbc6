package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Config is the command-line configuration of a standalone sandbox.
type Config struct {
	Addr        string        // listen address, host:port (port 0 picks one)
	StatePath   string        // optional ledger file
	AllowRemote bool          // permit a listen address that is not loopback
	Grace       time.Duration // graceful shutdown bound; 0 means 5s
	Logger      *slog.Logger  // optional: one line per mutation request
}

// Run serves a standalone sandbox until ctx is done (the caller wires
// SIGTERM and SIGINT to ctx), then shuts down gracefully. Once it listens
// it writes one line to out:
//
//	flrh sandbox: listening on http://127.0.0.1:PORT (effects at /v1/effects)
//
// so that a supervising process can learn the chosen port.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if !cfg.AllowRemote && !IsLoopback(cfg.Addr) {
		return fmt.Errorf("sandbox: %q is not a loopback address; the sandbox has unauthenticated admin endpoints (pass the allow-remote option to insist)", cfg.Addr)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	s, err := New(Options{StatePath: cfg.StatePath, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	fmt.Fprintf(out, "flrh sandbox: listening on http://%s (effects at %s)\n", ln.Addr(), EffectsPath)
	err = s.Serve(ctx, ln, cfg.Grace)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil {
		fmt.Fprintf(out, "flrh sandbox: stopped after %d mutations\n", len(s.Mutations()))
	}
	return err
}
