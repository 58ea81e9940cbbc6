// Package bundle loads a workflow bundle from a directory and connects it
// to the runner: it reads the files (the only I/O), compiles them with
// package workflow (pure), adapts the compiled workflow to runner.Workflow
// and builds the effect adapters the bundle names.
package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/redact"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/workflow"
)

// Bounds on what Load reads.
const (
	MaxFiles    = 256
	MaxFileSize = 8 << 20
)

// Load reads the bundle in dir and compiles it. Every regular file
// directly in dir is read; the manifest (workflow.json, or workflow.yaml)
// says which of them matter. A bad
// bundle is a *workflow.Error (or an I/O error naming the file); nothing is
// half loaded.
func Load(dir string) (*Workflow, *Adapters, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	w, a, err := LoadFS(os.DirFS(dir))
	if err != nil && !isCompileError(err) {
		return nil, nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	return w, a, err
}

// ManifestIn returns the name of the manifest dir holds (workflow.json,
// or workflow.yaml or workflow.yml), or "" when it holds none.
func ManifestIn(dir string) string {
	for _, n := range workflow.ManifestNames {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			return n
		}
	}
	return ""
}

// IsDir reports whether dir holds a bundle's manifest (ManifestIn): how a
// directory of bundles is told from a bundle.
func IsDir(dir string) bool { return ManifestIn(dir) != "" }

// Dirs returns the bundle directories dir names: dir itself when it is
// one (IsDir), otherwise each of its subdirectories that is, in name
// order (none when none is). An error is os.ReadDir's, as it returned it.
func Dirs(dir string) ([]string, error) {
	if IsDir(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries { // ReadDir returns them by name
		if sub := filepath.Join(dir, e.Name()); e.IsDir() && IsDir(sub) {
			dirs = append(dirs, sub)
		}
	}
	return dirs, nil
}

// ErrNoExample is the error LoadExample wraps for a name that is not an
// embedded example bundle.
var ErrNoExample = errors.New("no example bundle")

// LoadExample loads and compiles the example bundle the flrh binary
// embeds under name (see examples.Names); a name that is not one of them is
// ErrNoExample, with the names there are.
func LoadExample(name string) (*Workflow, *Adapters, error) {
	if !slices.Contains(examples.Names(), name) {
		return nil, nil, fmt.Errorf("%w %q (have %s)", ErrNoExample, name, strings.Join(examples.Names(), ", "))
	}
	fsys, err := examples.Bundle(name)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: example %s: %w", name, err)
	}
	w, a, err := LoadFS(fsys)
	if err != nil && !isCompileError(err) {
		return nil, nil, fmt.Errorf("%w (in example %s)", err, name)
	}
	return w, a, err
}

func isCompileError(err error) bool {
	var ce *workflow.Error
	return errors.As(err, &ce)
}

// LoadFS is Load over any file system: a directory, or a bundle embedded
// in the binary. It reads the regular files at the root of fsys.
func LoadFS(fsys fs.FS) (*Workflow, *Adapters, error) {
	files, err := readFiles(fsys)
	if err != nil {
		return nil, nil, err
	}
	if _, err := workflow.Manifest(files); err != nil {
		var we *workflow.Error
		if errors.As(err, &we) && we.Code == workflow.CodeMissingFile {
			return nil, nil, fmt.Errorf("bundle: %s (or %s): %w", workflow.ManifestFile, workflow.ManifestYAML, fs.ErrNotExist)
		}
		return nil, nil, err
	}
	wf, err := workflow.Compile(files)
	if err != nil {
		return nil, nil, err
	}
	return &Workflow{wf}, &Adapters{specs: wf.Adapters(), tool: wf.Versions().Tool}, nil
}

// readFiles reads the regular files at the root of fsys, within the
// bounds MaxFiles and MaxFileSize.
func readFiles(fsys fs.FS) (map[string][]byte, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if len(files) == MaxFiles {
			return nil, fmt.Errorf("bundle: more than %d files", MaxFiles)
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		if info.Size() > MaxFileSize {
			return nil, fmt.Errorf("bundle: %s is larger than %d bytes", e.Name(), MaxFileSize)
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		files[e.Name()] = b
	}
	return files, nil
}

// Workflow is a compiled bundle as a runner.Workflow (and
// runner.ApprovalAuthorizer).
type Workflow struct {
	*workflow.Workflow
}

var (
	_ runner.Workflow           = (*Workflow)(nil)
	_ runner.ApprovalAuthorizer = (*Workflow)(nil)
	_ runner.ContractedWorkflow = (*Workflow)(nil)
	_ runner.Paneled            = (*Workflow)(nil)
)

// Decide implements runner.Workflow.
func (w *Workflow) Decide(state []byte, in runner.Accepted) (runner.Decision, error) {
	r, err := w.Workflow.Decide(state, input(in))
	return decision(r, err)
}

// DecideUntraced is Decide for a caller that reads no trace (a replay):
// the same Decision without its Trace, decided by the workflow's
// DecideUntraced, which writes no trace and takes none of the digests
// only a trace records.
func (w *Workflow) DecideUntraced(state []byte, in runner.Accepted) (runner.Decision, error) {
	r, err := w.Workflow.DecideUntraced(state, input(in))
	return decision(r, err)
}

// input is the workflow's form of an accepted input.
func input(in runner.Accepted) workflow.Input {
	return workflow.Input{Seq: in.Seq, Kind: in.Kind, Body: in.Body, Digest: in.Digest, Actor: in.Actor,
		ActorRole: in.ActorRole, Capability: in.Capability}
}

// decision is the runner's form of what the workflow decided.
func decision(r workflow.Result, err error) (runner.Decision, error) {
	if errors.Is(err, workflow.ErrRuleBudget) {
		return runner.Decision{}, fmt.Errorf("%w: %v", runner.ErrRuleBudget, err)
	}
	if err != nil {
		return runner.Decision{}, err
	}
	// The workflow writes its state canonically, the bytes cjson.Marshal
	// writes, under its own state kind, which has no set-like members.
	d := runner.Decision{State: r.State, StateCanonical: true, Completion: runner.Completion(r.Completion), Refusal: r.Refusal, Offered: r.Offered}
	for _, e := range r.Effects {
		d.Effects = append(d.Effects, plan(e))
	}
	if len(r.Trace) > 0 {
		d.Trace = make([]store.TraceRecord, len(r.Trace))
		for i, n := range r.Trace {
			d.Trace[i] = store.TraceRecord{Kind: n.Kind, Body: n.Body}
		}
	}
	return d, nil
}

func plan(e workflow.Effect) runner.EffectPlan {
	p := runner.EffectPlan{Intent: e.Intent, Payload: e.Payload, ContentDigest: e.ContentDigest}
	if e.Approval != nil {
		p.Approval = &runner.ApprovalNeed{RequestID: e.Approval.RequestID, RequestDigest: e.Approval.RequestDigest,
			IntentID: e.Approval.IntentID, Preview: e.Approval.Preview, Quorum: e.Approval.Quorum, Approver: e.Approval.Approver}
	}
	return p
}

func need(n runner.ApprovalNeed) workflow.ApprovalNeed {
	return workflow.ApprovalNeed{RequestID: n.RequestID, RequestDigest: n.RequestDigest, IntentID: n.IntentID, Preview: n.Preview,
		Quorum: n.Quorum, Approver: n.Approver}
}

// WhoMayApproveFor implements runner.ApproverTeller: who may approve the
// request need, in the workflow's words.
func (w *Workflow) WhoMayApproveFor(n runner.ApprovalNeed) string {
	return w.Workflow.WhoMayApproveRequest(n.Approver, n.Quorum)
}

// View implements runner.Viewer: the workflow's view of a run's state.
func (w *Workflow) View(state []byte) (any, error) { return w.Workflow.Inspect(state) }

// Kept implements runner.Keeper: the proposals the run keeps for a person.
func (w *Workflow) Kept(state []byte) (int, error) { return w.Workflow.Kept(state) }

// Offered implements runner.Offerer: the proposals waiting for a person's
// choice among options.
func (w *Workflow) Offered(state []byte) ([]string, error) { return w.Workflow.Offered(state) }

// CheckApproval implements runner.Workflow: the grant must answer exactly
// this request, come from the approver the bundle names, and be unexpired.
func (w *Workflow) CheckApproval(n runner.ApprovalNeed, g store.Approval, now time.Time) error {
	if !now.Before(g.ExpiresAt) {
		return fmt.Errorf("the grant expired at %s", g.ExpiresAt.Format(time.RFC3339))
	}
	return w.Workflow.CheckGrant(need(n), workflow.Grant{LedgerRequestDigest: g.RequestDigest, Body: g.Body})
}

// Quorum implements runner.Quorate: how many people the bundle's approval
// policy asks to approve each request.
func (w *Workflow) Quorum(runner.ApprovalNeed) int { return w.Workflow.ApprovalQuorum() }

// Panel implements runner.Paneled: the groups of the panel the request
// names, each of which a different person must answer for.
func (w *Workflow) Panel(n runner.ApprovalNeed) []runner.PanelGroup {
	return w.Workflow.ApprovalPanel(n.Approver)
}

// SeparatesDuties implements runner.DutySeparator.
func (w *Workflow) SeparatesDuties() bool { return w.Workflow.SeparatesDuties() }

// AuthorizeApproved implements runner.ApprovalAuthorizer.
func (w *Workflow) AuthorizeApproved(state []byte, n runner.ApprovalNeed, g store.Approval, _ int64) (runner.EffectPlan, error) {
	e, err := w.Workflow.AuthorizeApproved(state, need(n), workflow.Grant{LedgerRequestDigest: g.RequestDigest, Body: g.Body})
	if err != nil {
		return runner.EffectPlan{}, err
	}
	return plan(e), nil
}

// Adapters are the effect adapters a bundle names, to be wired by the
// shell.
type Adapters struct {
	specs map[string]workflow.AdapterSpec
	tool  string
}

// Specs returns the adapter of each effect type.
func (a *Adapters) Specs() map[string]workflow.AdapterSpec {
	out := make(map[string]workflow.AdapterSpec, len(a.specs))
	for k, v := range a.specs {
		out[k] = v
	}
	return out
}

// Registry builds the effect registry: for each effect type an HTTP
// adapter whose endpoint is the value of the spec's url_env variable, as
// getenv answers it (os.Getenv in production), sending the spec's headers
// and its secret parameters (each read from its variable; see package
// redact). A variable that is unset is an error naming the variable, never
// a value.
func (a *Adapters) Registry(getenv func(string) string) (*effect.Registry, error) {
	return a.RegistrySharing(getenv, nil)
}

// RegistrySharing is Registry with shared holding the limits that adapters
// share with other processes (limits.shared; a sharedlimit.Board bound
// to the store, in a shell). Without one, an adapter whose limits are
// shared is an error: its limits could not be held.
func (a *Adapters) RegistrySharing(getenv func(string) string, shared httpadapter.Sharer) (*effect.Registry, error) {
	reg := &effect.Registry{}
	// In effect type order, so that of several problems the same one is
	// named each time.
	for _, et := range slices.Sorted(maps.Keys(a.specs)) {
		spec := a.specs[et]
		url := getenv(spec.URLEnv)
		if url == "" {
			return nil, fmt.Errorf("bundle: effect type %s: %s is not set", et, spec.URLEnv)
		}
		timeout := 10 * time.Second
		if spec.TimeoutMS > 0 {
			timeout = time.Duration(spec.TimeoutMS) * time.Millisecond
		}
		headers, values, err := secretHeaders(et, spec, getenv)
		if err != nil {
			return nil, err
		}
		scrubber, err := redact.NewScrubber(values...)
		if err != nil {
			return nil, fmt.Errorf("bundle: effect type %s: %w", et, err)
		}
		tlsConfig, err := tlsFor(et, spec.TLS, getenv)
		if err != nil {
			return nil, err
		}
		cfg := httpadapter.Config{URL: url, Timeout: timeout, Headers: headers, TLS: tlsConfig}
		if l := spec.Limits; l != nil {
			cfg.MaxInFlight, cfg.PerSecond, cfg.QueueWait = int(l.MaxInFlight), int(l.PerSecond), time.Duration(l.WaitMS)*time.Millisecond
			if l.Shared != "" {
				if shared == nil {
					return nil, fmt.Errorf("bundle: effect type %s: its limits are shared as %q, and nothing here holds shared limits", et, l.Shared)
				}
				cfg.Shared, cfg.SharedName = shared, l.Shared
			}
		}
		ad, err := httpadapter.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("bundle: effect type %s: %w", et, err)
		}
		var eff effect.Adapter = HTTP(ad)
		if scrubber.Len() > 0 {
			eff = scrub(eff, scrubber)
		}
		if err := reg.Register(et, a.tool, eff); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// secretHeaders reads the request headers of one effect type: the
// adapter's own headers and one per secret parameter. It returns them with
// the secret values, for scrubbing.
func secretHeaders(et string, spec workflow.AdapterSpec, getenv func(string) string) (map[string]string, []string, error) {
	headers := map[string]string{}
	var values []string
	read := func(header, env string) error {
		v := getenv(env)
		if v == "" {
			return fmt.Errorf("bundle: effect type %s: %s (for header %s) is not set", et, env, header)
		}
		if len(v) < redact.MinSecretLen {
			return fmt.Errorf("bundle: effect type %s: %s (for header %s) is shorter than %d bytes: too short to be a secret", et, env, header, redact.MinSecretLen)
		}
		headers[header] = v
		values = append(values, v)
		return nil
	}
	for h, hs := range spec.Headers {
		if err := read(h, hs.Env); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range spec.Secrets {
		if err := read(redact.HeaderName(m.Name), m.Env); err != nil {
			return nil, nil, err
		}
	}
	return headers, values, nil
}

// Variables returns the names of every environment variable the
// bundle's adapters read (endpoints, headers, secret parameters), sorted,
// each once: what a deployment must set to run the bundle's effects.
func (a *Adapters) Variables() []string {
	var out []string
	for _, spec := range a.specs {
		out = append(out, spec.URLEnv)
		for _, hs := range spec.Headers {
			out = append(out, hs.Env)
		}
		for _, m := range spec.Secrets {
			out = append(out, m.Env)
		}
		if t := spec.TLS; t != nil {
			for _, v := range []string{t.CAEnv, t.CertEnv, t.KeyEnv} {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Secrets returns the values of every header and secret parameter the
// bundle's adapters send, as getenv answers them (unset ones are left
// out): what a shell scrubs from its logs.
func (a *Adapters) Secrets(getenv func(string) string) []string {
	var out []string
	for _, spec := range a.specs {
		for _, hs := range spec.Headers {
			if v := getenv(hs.Env); v != "" {
				out = append(out, v)
			}
		}
		for _, m := range spec.Secrets {
			if v := getenv(m.Env); v != "" {
				out = append(out, v)
			}
		}
		if spec.TLS != nil && spec.TLS.KeyEnv != "" {
			if v := getenv(spec.TLS.KeyEnv); v != "" {
				out = append(out, v) // a client key
			}
		}
	}
	return out
}

// scrubbed keeps an adapter's secrets out of what it reports: a
// destination that repeats a credential in an error, or a transport error
// that quotes one, must not put it in an attempt's detail or a receipt.
type scrubbed struct {
	effect.Adapter
	s *redact.Scrubber
}

func (a scrubbed) Execute(ctx context.Context, in effect.Intent) (effect.Receipt, error) {
	return a.scrubReceipt(a.Adapter.Execute(ctx, in))
}

func (a scrubbed) scrubReceipt(rc effect.Receipt, err error) (effect.Receipt, error) {
	rc.Code, rc.Detail = a.s.String(rc.Code), a.s.String(rc.Detail)
	if ev := a.s.Bytes(rc.Evidence); len(rc.Evidence) > 0 && &ev[0] != &rc.Evidence[0] {
		rc.Evidence, rc.EvidenceDigest = ev, cjson.Digest(ev)
	}
	return rc, a.scrubErr(err)
}

func (a scrubbed) Lookup(ctx context.Context, key, contentDigest string) (effect.LookupResult, error) {
	res, err := a.Adapter.Lookup(ctx, key, contentDigest)
	res.Code, res.Detail = a.s.String(res.Code), a.s.String(res.Detail)
	if ev := a.s.Bytes(res.Evidence); len(res.Evidence) > 0 && &ev[0] != &res.Evidence[0] {
		res.Evidence, res.EvidenceDigest = ev, cjson.Digest(ev)
	}
	return res, a.scrubErr(err)
}

func (a scrubbed) ContentDigest(in effect.Intent) (string, error) {
	return a.Adapter.(effect.ContentDigester).ContentDigest(in)
}

// scrubbedPreparer is scrubbed over an adapter that prepares its
// requests (effect.Preparer). It passes the preparation through, so the
// runner sends the request it bound the intent's content to instead of
// preparing it a second time; the secrets never enter the preparation
// (they travel as headers), and what the adapter reports is scrubbed as
// in Execute.
type scrubbedPreparer struct{ scrubbed }

func (a scrubbedPreparer) Prepare(in effect.Intent) (effect.Prepared, error) {
	return a.Adapter.(effect.Preparer).Prepare(in)
}

func (a scrubbedPreparer) ExecutePrepared(ctx context.Context, in effect.Intent, p effect.Prepared) (effect.Receipt, error) {
	return a.scrubReceipt(a.Adapter.(effect.Preparer).ExecutePrepared(ctx, in, p))
}

// scrub wraps an adapter so that nothing it reports carries a secret,
// keeping whether it is an effect.Preparer.
func scrub(a effect.Adapter, s *redact.Scrubber) effect.Adapter {
	if _, ok := a.(effect.Preparer); ok {
		return scrubbedPreparer{scrubbed{a, s}}
	}
	return scrubbed{a, s}
}

func (a scrubbed) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := a.s.String(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// httpEffect lets the runner bind each idempotency key to the digest of
// exactly the request the HTTP adapter sends.
type httpEffect struct{ *httpadapter.Adapter }

func (httpEffect) ContentDigest(in effect.Intent) (string, error) {
	_, d, err := httpadapter.Prepare(in)
	return d, err
}

// HTTP wraps an HTTP adapter so the runner binds idempotency keys to the
// exact request bytes.
func HTTP(a *httpadapter.Adapter) effect.Adapter { return httpEffect{a} }
