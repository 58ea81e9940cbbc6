package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/redact"
)

// adapterReload rebuilds, on a signal, the adapters of the bundles a
// server runs, from their directory and the environment as they are then:
// the files NAME_FILE names are read again, so a rotated credential or
// client certificate reaches the destination without a restart. Only
// adapters change. A bundle whose files changed (its digest is not the
// one the server runs), or one the server did not load, is left for a
// restart; a bundle that cannot be wired now keeps the adapters it has.
// The secrets of the new adapters are scrubbed from the logs before the
// adapters are put in place, and the old ones still are.
type adapterReload struct {
	mu        sync.Mutex
	dir       string
	env       func() bundle.Env
	loaded    map[string]string // id@version → the digest the server runs
	live      *effect.Registry
	secrets   []string // every secret scrubbed so far
	scrubbing *atomic.Pointer[redact.Scrubber]
	// bundles counts each bundle's outcome at each reload: reloaded or
	// kept (its adapters left as they were).
	bundles *prometheus.CounterVec
}

func newAdapterReload(dir string, loaded map[string]string, live *effect.Registry, secrets []string, scrubbing *atomic.Pointer[redact.Scrubber]) *adapterReload {
	return &adapterReload{dir: dir, env: bundle.OSEnv, loaded: loaded, live: live, secrets: secrets, scrubbing: scrubbing,
		bundles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_adapter_reloads_total",
			Help: "Bundles whose adapters a SIGHUP rebuilt (reloaded) or left as they were (kept)."}, []string{"outcome"})}
}

// register adds the reload's counts to reg, both outcomes at zero.
func (a *adapterReload) register(reg *prometheus.Registry) error {
	if err := reg.Register(a.bundles); err != nil {
		return err
	}
	a.bundles.WithLabelValues("reloaded")
	a.bundles.WithLabelValues("kept")
	return nil
}

// reloadReport says what one reload did, bundle by bundle.
type reloadReport struct {
	Reloaded []string // id@version whose adapters were rebuilt
	Kept     []string // id@version: why its adapters were left as they were
}

func (a *adapterReload) reload() reloadReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	var rep reloadReport
	defer func() {
		a.bundles.WithLabelValues("reloaded").Add(float64(len(rep.Reloaded)))
		a.bundles.WithLabelValues("kept").Add(float64(len(rep.Kept)))
	}()
	keep := func(what, why string) { rep.Kept = append(rep.Kept, what+": "+why) }
	dirs, err := bundle.Dirs(a.dir)
	if err != nil {
		keep(a.dir, err.Error())
		return rep
	}
	env := a.env()
	for _, d := range dirs {
		wf, ads, err := bundle.Load(d)
		if err != nil {
			keep(d, err.Error())
			continue
		}
		name := wf.ID() + "@" + wf.Version()
		switch digest, ok := a.loaded[name]; {
		case !ok:
			keep(name, "not run by this server; restart to load it")
			continue
		case digest != wf.Digest():
			keep(name, "its files changed; restart to run the new definition")
			continue
		}
		reg, sent, err := ads.Wire(env)
		if err != nil {
			keep(name, err.Error())
			continue
		}
		secrets := append(append([]string(nil), a.secrets...), sent...)
		scrub, err := redact.NewScrubber(secrets...)
		if err != nil {
			keep(name, err.Error())
			continue
		}
		// Scrubbed first, then sent: no record made while the new
		// adapters are in place can carry their secrets.
		a.secrets = secrets
		a.scrubbing.Store(scrub)
		for _, e := range reg.Entries() {
			ad, _ := reg.Adapter(e[0], e[1])
			if err := a.live.Set(e[0], e[1], ad); err != nil {
				keep(name, err.Error())
				continue
			}
		}
		rep.Reloaded = append(rep.Reloaded, name)
	}
	return rep
}

// fingerprint digests what a reload would wire now, bundle by bundle of
// those the server runs: every variable the bundle's adapters read,
// resolved as a reload resolves it (each NAME_FILE read again), or why it
// cannot be. It keeps no value, only the digest of them all, so that a
// change of any credential, certificate or endpoint, or of whether one
// can be read, changes it.
func (a *adapterReload) fingerprint() [sha256.Size]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := sha256.New()
	field := func(parts ...string) { putFields(h, parts...) }
	dirs, err := bundle.Dirs(a.dir)
	if err != nil {
		field("dirs", err.Error())
	}
	env := a.env()
	for _, d := range dirs {
		wf, ads, err := bundle.Load(d)
		if err != nil {
			field("load", d, err.Error())
			continue
		}
		if a.loaded[wf.ID()+"@"+wf.Version()] != wf.Digest() {
			continue // a reload leaves it as it is
		}
		field("bundle", d)
		getenv, err := ads.Resolve(env)
		if err != nil {
			field("unresolved", err.Error())
			continue
		}
		for _, v := range ads.Variables() {
			field(v, getenv(v))
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// watch reloads the adapters whenever their fingerprint changes, looking
// every interval until ctx is done: a credential a platform rotates by
// swapping a mounted file reaches the destination without a signal. Each
// look reads every bundle's files and variables; nothing is rebuilt while
// they stay the same.
func (a *adapterReload) watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	watchChanges(ctx, every, a.fingerprint, func() {
		rep := a.reload()
		log.Info("adapters reloaded", "why", "their variables changed", "bundles", rep.Reloaded, "kept", len(rep.Kept))
		for _, k := range rep.Kept {
			log.Warn("adapters kept as they were", "bundle", k)
		}
	})
}

// fileReload reads one of flrh serve's files again and puts what it holds
// in place: on SIGHUP (reload), and when its fingerprint changes (watch).
// A file that does not load leaves what was in place, and the log says
// why.
type fileReload struct {
	what string // what the file holds ("tokens"): the log's words and its count's key
	file string
	// apply reads the file, puts what it holds in place and counts it.
	apply func() (int, error)
	// fingerprint digests what the file's loading reads; nil: the file's
	// bytes alone (fileDigest).
	fingerprint func() [sha256.Size]byte
}

func (r fileReload) reload(log *slog.Logger) {
	n, err := r.apply()
	if err != nil {
		log.Warn(r.what+" kept as they were", "file", r.file, "err", err.Error())
		return
	}
	log.Info(r.what+" reloaded", "file", r.file, r.what, n)
}

func (r fileReload) watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	fp := r.fingerprint
	if fp == nil {
		fp = func() [sha256.Size]byte { return fileDigest(r.file) }
	}
	watchChanges(ctx, every, fp, func() { r.reload(log) })
}

// fileDigest is the digest of a file's bytes (of the error reading it,
// when it cannot be read).
func fileDigest(file string) [sha256.Size]byte {
	b, err := os.ReadFile(file)
	if err != nil {
		return sha256.Sum256([]byte(err.Error()))
	}
	return sha256.Sum256(b)
}

// watchChanges takes fingerprint now and every interval until ctx is
// done, and calls changed each time it differs from the one before.
func watchChanges(ctx context.Context, every time.Duration, fingerprint func() [sha256.Size]byte, changed func()) {
	last := fingerprint()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if fp := fingerprint(); fp != last {
			last = fp
			changed()
		}
	}
}

// putFields writes parts to h each prefixed with its length, so that no
// two different lists of parts write the same bytes.
func putFields(h io.Writer, parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
}
