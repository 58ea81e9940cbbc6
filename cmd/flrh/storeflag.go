package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/demo"
	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpadapter"
	"flrh.dev/flrh/effect/sharedlimit"
	"flrh.dev/flrh/examples"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// defaultStore is where flrh keeps runs unless told otherwise.
const defaultStore = "sqlite:./flrh.db"

// addStoreFlag adds --store to a command and returns where its value lands.
func addStoreFlag(cmd *cobra.Command) *string {
	s := new(string)
	cmd.Flags().StringVar(s, "store", defaultStore, "the run store: sqlite:PATH (or a plain path), or postgres://USER@HOST:PORT/DB[?schema=NAME]")
	addEncryptionFlag(cmd)
	return s
}

// openStore opens the store a --store value names.
func openStore(ctx context.Context, spec string, readOnly bool) (store.Store, error) {
	return openStoreThere(ctx, spec, readOnly, readOnly)
}

// openStoreThere is openStore, refusing (when existing) an embedded store
// whose file is not there: a store opened to be read, or to be moved out
// of, is never made empty.
func openStoreThere(ctx context.Context, spec string, readOnly, existing bool) (store.Store, error) {
	sealer, err := storeSealer()
	if err != nil {
		return nil, err
	}
	path := spec
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path = strings.TrimPrefix(spec, "sqlite:")
	case strings.Contains(spec, "://"):
		st, err := openURLStore(ctx, spec, readOnly, sealer)
		return st, openHint(err, spec, readOnly)
	}
	if path == "" {
		return nil, usagef("empty store path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// SQLite answers a directory with a disk I/O error.
		return nil, usagef("%s is a directory; give the store's file: --store sqlite:%s", path, filepath.Join(path, "flrh.db"))
	}
	if existing {
		// Reading a store that is not there is a mistake in the command
		// line, not an empty store: say so rather than create one.
		if _, err := os.Stat(path); err != nil {
			return nil, usagef("no store at %s (give sqlite:PATH)", path)
		}
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: readOnly, Sealer: sealer})
	return st, openHint(err, spec, readOnly)
}

// openHint adds to a store's refusal to open what the person can do about
// it: a command that only reads never migrates (the store's own words, "open
// it read-write first", name no command), and a PostgreSQL schema that does
// not exist yet is created by migrate.
func openHint(err error, spec string, readOnly bool) error {
	if err == nil || !readOnly || store.CodeOf(err) != store.CodeInvalidInput {
		return err
	}
	hint := ""
	switch msg := err.Error(); {
	case strings.Contains(msg, "needs migration"):
		hint = "this command only reads; migrate the store first: flrh store migrate --store '%s'"
	case strings.Contains(msg, "no schema on the search_path"):
		hint = "the schema does not exist yet; flrh store migrate --store '%s' creates it"
	default:
		return err
	}
	return usagef("%v (%s)", err, fmt.Sprintf(hint, redactURL(spec)))
}

// builtinWorkflows are the workflows compiled into this binary.
func builtinWorkflows() []runner.Workflow {
	return []runner.Workflow{demo.Refunds{AutoLimit: 100, Blocked: []string{"mallory"}, Destination: "payments-sandbox"}}
}

// examplePrefix addresses a bundle embedded in the binary: example:NAME.
const examplePrefix = "example:"

// addWorkflowsFlag adds --workflows to a command: bundles to load besides
// the built-in workflows and the embedded examples.
func addWorkflowsFlag(cmd *cobra.Command) *[]string {
	s := new([]string)
	cmd.Flags().StringSliceVar(s, "workflows", nil, "workflow bundles to load: a bundle directory, a directory of bundle directories, or example:NAME (repeatable; default ./workflows if present)")
	return s
}

// candidate is a workflow the CLI can run, with the adapters its bundle
// names (nil for a built-in workflow or an unwired bundle).
type candidate struct {
	wf       runner.Workflow
	adapters *effect.Registry
	from     string // where it was loaded from, for messages
	unwired  string // why its adapters could not be built ("" when they were)
}

// catalog is every workflow a command can use, in priority order:
// bundles named on the command line, then --workflows, then the built-in
// workflows, then the embedded examples. Two candidates may share an id
// and version (the built-in refund-agent and example:refund-agent do); a
// run is matched to the one whose definition digest its checkpoint
// records, and otherwise to the first.
type catalog struct {
	cands    []candidate
	explicit int // how many of cands came from --workflows (they come first)
	// shared holds the limits the catalog's adapters share with other
	// processes; it is bound to the store once the store is open.
	shared *sharedlimit.Board
}

// loadCatalog loads the workflows a command can use. refs are the
// --workflows values; when none were given and ./workflows exists it is
// used. destination, when set, overrides every adapter's url_env.
func loadCatalog(refs []string, changed bool, destination string) (*catalog, error) {
	c := &catalog{shared: newSharedLimits()}
	env := bundleEnv(destination, c.shared)
	if !changed && len(refs) == 0 {
		if fi, err := os.Stat("workflows"); err == nil && fi.IsDir() {
			refs = []string{"workflows"}
		}
	}
	for _, ref := range refs {
		if err := c.addRef(ref, env); err != nil {
			return nil, usagef("--workflows: %v", err)
		}
	}
	c.explicit = len(c.cands)
	for _, wf := range builtinWorkflows() {
		var reg *effect.Registry
		if destination != "" {
			ad, err := httpadapter.New(httpadapter.Config{URL: destination, Timeout: 10 * time.Second})
			if err != nil {
				return nil, usagef("--destination: %v", err)
			}
			reg = &effect.Registry{}
			if err := reg.Register("refund.pay", "http/1", demo.HTTPAdapter(ad)); err != nil {
				return nil, err
			}
		}
		c.cands = append(c.cands, candidate{wf: wf, adapters: reg, from: "built-in"})
	}
	for _, name := range examples.Names() {
		if err := c.addRef(examplePrefix+name, env); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// bundleEnv is where bundles' adapters read their variables: the
// process's environment (NAME_FILE included), or, with --destination, that
// endpoint for every variable and no files; and where they hold the
// limits they share with other processes.
func bundleEnv(destination string, shared *sharedlimit.Board) bundle.Env {
	env := bundle.OSEnv()
	if destination != "" {
		env = bundle.Vars(func(string) string { return destination })
	}
	env.Shared = shared
	return env
}

// addRef loads one bundle reference and appends what it holds.
func (c *catalog) addRef(ref string, env bundle.Env) error {
	if name, ok := strings.CutPrefix(ref, examplePrefix); ok {
		wf, ads, err := bundle.LoadExample(name)
		if errors.Is(err, bundle.ErrNoExample) {
			return err
		}
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		// Unwired without its endpoint: its runs can be read and its effects fail.
		reg, _, err := ads.Wire(env)
		c.cands = append(c.cands, candidate{wf: wf, adapters: reg, from: ref, unwired: errText(err)})
		return nil
	}
	dirs, err := bundle.Dirs(ref)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return fmt.Errorf("%s holds no workflow bundle", ref)
	}
	for _, d := range dirs {
		wf, ads, err := bundle.Load(d)
		if err != nil {
			return fmt.Errorf("bundle %s: %w", d, err)
		}
		reg, _, err := ads.Wire(env)
		c.cands = append(c.cands, candidate{wf: wf, adapters: reg, from: d, unwired: errText(err)})
	}
	return nil
}

// first returns the first candidate named id@version.
func (c *catalog) first(id, version string) (candidate, bool) {
	for _, cd := range c.cands {
		if cd.wf.ID() == id && cd.wf.Version() == version {
			return cd, true
		}
	}
	return candidate{}, false
}

// checkpointDigest is the workflow digest a checkpoint's body records, ""
// if it records none.
func checkpointDigest(body []byte) string {
	var cp struct {
		WorkflowDigest string `json:"workflow_digest"`
	}
	if json.Unmarshal(body, &cp) != nil {
		return ""
	}
	return cp.WorkflowDigest
}

// forRun returns the candidate a recorded run needs: its id and version,
// and, among several, the one whose digest the run recorded when it was
// created (or, for a run from a store that did not record it, the one its
// checkpoint records; st nil: a run read from an archive, whose
// digest the caller took from its checkpoint). When exact is set and the run names a definition,
// only that one will do: a runner holding another leaves the run alone.
func (c *catalog) forRun(ctx context.Context, st store.Store, run store.Run, exact bool) (candidate, bool) {
	digest := run.WorkflowDigest
	var cpErr error
	if digest == "" && st != nil {
		var cp store.Checkpoint
		cp, cpErr = st.Checkpoint(ctx, run.ID)
		if cpErr == nil {
			digest = checkpointDigest(cp.Body)
		}
	}
	if digest != "" {
		for _, cd := range c.cands {
			if cd.wf.ID() == run.WorkflowID && cd.wf.Version() == run.WorkflowVersion && cd.wf.Digest() == digest {
				return cd, true
			}
		}
		if exact {
			return candidate{}, false
		}
	}
	if exact && store.CodeOf(cpErr) == store.CodeNotFound && c.ambiguous(run.WorkflowID, run.WorkflowVersion) {
		// No checkpoint says which definition the run was started with
		// (its first pass never committed), and the loaded ones differ:
		// the first of them, the built-in one, say, would advance a run
		// started from a bundle under other rules. The one definition
		// that takes the run's first input is the one it was started
		// with (run start checks exactly that); none or several, and the
		// person must say.
		return c.takesFirstInput(ctx, st, run)
	}
	return c.first(run.WorkflowID, run.WorkflowVersion)
}

// ambiguous reports whether id@version names more than one definition and
// none of them was given with --workflows.
func (c *catalog) ambiguous(id, version string) bool {
	digests := map[string]bool{}
	for i, cd := range c.cands {
		if cd.wf.ID() != id || cd.wf.Version() != version {
			continue
		}
		if i < c.explicit {
			return false
		}
		digests[cd.wf.Digest()] = true
	}
	return len(digests) > 1
}

// takesFirstInput returns the one definition of the run's workflow whose
// pure step takes the run's first input, if exactly one does.
func (c *catalog) takesFirstInput(ctx context.Context, st store.Store, run store.Run) (candidate, bool) {
	inbox, err := st.Inbox(ctx, run.ID, false)
	if err != nil || len(inbox) == 0 || inbox[0].Kind != runner.KindInput {
		return candidate{}, false
	}
	var found *candidate
	for i, cd := range c.cands {
		if cd.wf.ID() != run.WorkflowID || cd.wf.Version() != run.WorkflowVersion || checkFirstInput(cd.wf, run.ID, inbox[0].Body) != nil {
			continue
		}
		if found != nil && found.wf.Digest() != cd.wf.Digest() {
			return candidate{}, false
		}
		if found == nil {
			found = &c.cands[i]
		}
	}
	if found == nil {
		return candidate{}, false
	}
	return *found, true
}

// pick returns one workflow per id@version for a runner, preferring the
// pinned candidates, and the adapters of exactly those workflows.
func (c *catalog) pick(pinned ...candidate) ([]runner.Workflow, *effect.Registry, error) {
	seen := map[string]bool{}
	var wfs []runner.Workflow
	reg := &effect.Registry{}
	for _, cd := range append(pinned, c.cands...) {
		key := cd.wf.ID() + "@" + cd.wf.Version()
		if seen[key] {
			continue
		}
		seen[key] = true
		wfs = append(wfs, cd.wf)
		if cd.adapters == nil {
			continue
		}
		for _, e := range cd.adapters.Entries() {
			if _, taken := reg.Adapter(e[0], e[1]); taken {
				continue // an earlier workflow's adapter for the same effect type serves both
			}
			a, _ := cd.adapters.Adapter(e[0], e[1])
			if err := reg.Register(e[0], e[1], a); err != nil {
				return nil, nil, err
			}
		}
	}
	return wfs, reg, nil
}

// workflowFor finds the workflow of a recorded run among the built-in
// workflows, ./workflows and the embedded examples.
func workflowFor(ctx context.Context, st store.Store, run store.Run, refs []string) (runner.Workflow, bool, error) {
	c, err := loadCatalog(refs, len(refs) > 0, "")
	if err != nil {
		return nil, false, err
	}
	cd, ok := c.forRun(ctx, st, run, false)
	return cd.wf, ok, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
