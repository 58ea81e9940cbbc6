// Package bundle loads a workflow bundle from a directory and connects it
// to the runner: it reads the files (the only I/O), compiles them with
// package workflow (pure), adapts the compiled workflow to runner.Workflow
// and builds the effect adapters the bundle names.
package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
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
// directly in dir is read; workflow.json says which of them matter. A bad
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

func isCompileError(err error) bool {
	var ce *workflow.Error
	return errors.As(err, &ce)
}

// LoadFS is Load over any file system: a directory, or a bundle embedded
// in the binary. It reads the regular files at the root of fsys.
func LoadFS(fsys fs.FS) (*Workflow, *Adapters, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if len(files) == MaxFiles {
			return nil, nil, fmt.Errorf("bundle: more than %d files", MaxFiles)
		}
		info, err := e.Info()
		if err != nil {
			return nil, nil, fmt.Errorf("bundle: %w", err)
		}
		if info.Size() > MaxFileSize {
			return nil, nil, fmt.Errorf("bundle: %s is larger than %d bytes", e.Name(), MaxFileSize)
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, nil, fmt.Errorf("bundle: %w", err)
		}
		files[e.Name()] = b
	}
	if _, ok := files[workflow.ManifestFile]; !ok {
		return nil, nil, fmt.Errorf("bundle: %s: %w", workflow.ManifestFile, fs.ErrNotExist)
	}
	wf, err := workflow.Compile(files)
	if err != nil {
		return nil, nil, err
	}
	return &Workflow{wf}, &Adapters{specs: wf.Adapters(), tool: wf.Versions().Tool}, nil
}

// Workflow is a compiled bundle as a runner.Workflow (and
// runner.ApprovalAuthorizer).
type Workflow struct {
	*workflow.Workflow
}

var (
	_ runner.Workflow           = (*Workflow)(nil)
	_ runner.ApprovalAuthorizer = (*Workflow)(nil)
)

// Decide implements runner.Workflow.
func (w *Workflow) Decide(state []byte, in runner.Accepted) (runner.Decision, error) {
	r, err := w.Workflow.Decide(state, workflow.Input{Seq: in.Seq, Kind: in.Kind, Body: in.Body, Digest: in.Digest, Actor: in.Actor,
		ActorRole: in.ActorRole, Capability: in.Capability})
	if errors.Is(err, workflow.ErrRuleBudget) {
		return runner.Decision{}, fmt.Errorf("%w: %v", runner.ErrRuleBudget, err)
	}
	if err != nil {
		return runner.Decision{}, err
	}
	d := runner.Decision{State: r.State, Completion: runner.Completion(r.Completion), Refusal: r.Refusal}
	for _, e := range r.Effects {
		d.Effects = append(d.Effects, plan(e))
	}
	for _, n := range r.Trace {
		d.Trace = append(d.Trace, store.TraceRecord{Kind: n.Kind, Body: n.Body})
	}
	return d, nil
}

func plan(e workflow.Effect) runner.EffectPlan {
	p := runner.EffectPlan{Intent: e.Intent, Payload: e.Payload, ContentDigest: e.ContentDigest}
	if e.Approval != nil {
		p.Approval = &runner.ApprovalNeed{RequestID: e.Approval.RequestID, RequestDigest: e.Approval.RequestDigest,
			IntentID: e.Approval.IntentID, Preview: e.Approval.Preview}
	}
	return p
}

func need(n runner.ApprovalNeed) workflow.ApprovalNeed {
	return workflow.ApprovalNeed{RequestID: n.RequestID, RequestDigest: n.RequestDigest, IntentID: n.IntentID, Preview: n.Preview}
}

// View implements runner.Viewer: the workflow's view of a run's state.
func (w *Workflow) View(state []byte) (any, error) { return w.Workflow.Inspect(state) }

// CheckApproval implements runner.Workflow: the grant must answer exactly
// this request, come from the approver the bundle names, and be unexpired.
func (w *Workflow) CheckApproval(n runner.ApprovalNeed, g store.Approval, now time.Time) error {
	if !now.Before(g.ExpiresAt) {
		return fmt.Errorf("the grant expired at %s", g.ExpiresAt.Format(time.RFC3339))
	}
	return w.Workflow.CheckGrant(need(n), workflow.Grant{LedgerRequestDigest: g.RequestDigest, Body: g.Body})
}

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
// getenv answers it (os.Getenv in production).
func (a *Adapters) Registry(getenv func(string) string) (*effect.Registry, error) {
	reg := &effect.Registry{}
	for et, spec := range a.specs {
		url := getenv(spec.URLEnv)
		if url == "" {
			return nil, fmt.Errorf("bundle: effect type %s: %s is not set", et, spec.URLEnv)
		}
		timeout := 10 * time.Second
		if spec.TimeoutMS > 0 {
			timeout = time.Duration(spec.TimeoutMS) * time.Millisecond
		}
		ad, err := httpadapter.New(httpadapter.Config{URL: url, Timeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("bundle: effect type %s: %w", et, err)
		}
		if err := reg.Register(et, a.tool, HTTP(ad)); err != nil {
			return nil, err
		}
	}
	return reg, nil
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
