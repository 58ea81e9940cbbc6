package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"flrh.dev/flrh/server"
)

// loadIdentity reads an identity provider's configuration from file and
// fetches the provider's key set.
func loadIdentity(ctx context.Context, file string, log *slog.Logger) (*server.Identity, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	cfg, err := server.ParseIdentityConfig(data, filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	return server.NewIdentity(ctx, cfg, &http.Client{Timeout: 15 * time.Second}, log)
}

// identityReload reads flrh serve's identity provider configuration
// again, fetches the key set, and puts both in place (server.SetIdentity):
// on SIGHUP, and when the configuration or the key set file it names
// changes.
type identityReload struct {
	file string
	srv  *server.Server
}

func (r identityReload) reload(ctx context.Context, log *slog.Logger) {
	id, err := loadIdentity(ctx, r.file, log)
	if err == nil {
		err = r.srv.SetIdentity(id)
	}
	if err != nil {
		log.Warn("identity provider kept as it was", "file", r.file, "err", err.Error())
		return
	}
	log.Info("identity provider reloaded", "file", r.file, "issuer", id.Config().Issuer, "keys", len(id.Keys().Keys()))
}

// fingerprint digests the configuration file and the key set file it
// names, if any.
func (r identityReload) fingerprint() [sha256.Size]byte {
	h := sha256.New()
	data, err := os.ReadFile(r.file)
	if err != nil {
		putFields(h, "error", err.Error())
	} else {
		putFields(h, "config", string(data))
		if cfg, err := server.ParseIdentityConfig(data, filepath.Dir(r.file)); err == nil && cfg.JWKSFile != "" {
			keys, err := os.ReadFile(cfg.JWKSFile)
			if err != nil {
				putFields(h, "keys error", err.Error())
			} else {
				putFields(h, "keys", string(keys))
			}
		}
	}
	var fp [sha256.Size]byte
	h.Sum(fp[:0])
	return fp
}

func (r identityReload) watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	watchChanges(ctx, every, r.fingerprint, func() { r.reload(ctx, log) })
}

// refreshIdentity fetches the identity provider's key set again every
// refresh_seconds of its configuration (as it is at each turn), so that
// a key the provider withdrew stops verifying tokens; a failed fetch
// keeps the keys in use and is logged.
func refreshIdentity(ctx context.Context, srv *server.Server, log *slog.Logger) {
	for {
		id := srv.Identity()
		if id == nil {
			return
		}
		cfg := id.Config()
		select {
		case <-ctx.Done():
			return
		case <-time.After(cfg.RefreshEvery()):
		}
		if err := srv.RefreshIdentity(ctx); err != nil && ctx.Err() == nil {
			log.Warn("identity provider key set not fetched: the keys in use are kept", "err", err.Error())
		}
	}
}

// authMode says how flrh serve authenticates callers.
func authMode(t *server.Tokens, id *server.Identity) string {
	switch {
	case id != nil && t != nil:
		return fmt.Sprintf("%d tokens and identity provider %s", t.Len(), id.Config().Issuer)
	case id != nil:
		return "identity provider " + id.Config().Issuer
	case t != nil:
		return fmt.Sprintf("%d tokens", t.Len())
	}
	return "no tokens: loopback clients only"
}
