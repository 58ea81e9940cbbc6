package main

import (
	"sync"
	"sync/atomic"

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
		getenv, err := ads.Resolve(env)
		if err != nil {
			keep(name, err.Error())
			continue
		}
		reg, err := ads.Registry(getenv)
		if err != nil {
			keep(name, err.Error())
			continue
		}
		secrets := append(append([]string(nil), a.secrets...), ads.Secrets(getenv)...)
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
