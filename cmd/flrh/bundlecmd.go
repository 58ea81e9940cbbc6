package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/effect/sharedlimit"
	"flrh.dev/flrh/workflow"
)

func init() {
	cmd := &cobra.Command{Use: "bundle", Short: "Check workflow bundles before any run uses them"}
	check := &cobra.Command{Use: "check DIR|example:NAME...",
		Short: "Compile workflow bundles and say what is wrong, where, or what each defines",
		Long: `check compiles each bundle as a runner would load it, and reports it: its
workflow id and version, its digest (what a run records of the workflow it
ran under), its manifest, its tools and the environment variables its
adapters read; or the first problem found, with its code, the file, the JSON
Pointer and, in a file written in YAML, the line and column.

DIR is a bundle directory (one holding workflow.json or workflow.yaml) or a
directory of bundle directories; example:NAME is a bundle the binary embeds.
With --wired, a bundle fails too when this environment does not set every
variable its adapters read (endpoints and credentials, named, never
printed): how a deployment checks it can run the bundles it ships.

Exit status: 0 when every bundle compiles (and, with --wired, is wired), 1
when any does not, 2 when a DIR is not there or holds no bundle.`,
		Args: cobra.MinimumNArgs(1)}
	wired := check.Flags().Bool("wired", false, "also fail a bundle whose adapters' variables this environment does not set")
	asJSON := check.Flags().Bool("json", false, "print JSON")
	check.RunE = func(cmd *cobra.Command, args []string) error {
		var reps []bundleReport
		for _, a := range args {
			rs, err := checkBundles(a, *wired, bundle.OSEnv())
			if err != nil {
				return err
			}
			reps = append(reps, rs...)
		}
		failed := slices.ContainsFunc(reps, func(r bundleReport) bool { return !r.OK })
		return finishReport(cmd.OutOrStdout(), *asJSON, bundleReports(reps), nil, failed)
	}
	toYAML := &cobra.Command{Use: "yaml DIR --to NEWDIR",
		Short: "Write a bundle's JSON documents in YAML, as a new bundle",
		Long: `yaml writes the bundle in DIR (its manifest workflow.json) to the new
directory NEWDIR with its JSON documents written in YAML: workflow.yaml, and
the domain, capabilities and controller model the manifest names, renamed
*.yaml there. Members keep their order; a string is quoted where plain YAML
would read it as something else; each file starts with a comment naming the
file it came from. Rule and gate files, and any other file, are copied.

The new bundle is checked to be the same workflow (id, version, version
envelope and tools) before yaml succeeds; it has a digest of its own, since
a bundle's digest binds its files as written, so runs started under the
JSON bundle replay against the JSON bundle. Exit 2 when NEWDIR exists or DIR
is not a bundle written in JSON.`,
		Args: cobra.ExactArgs(1)}
	to := toYAML.Flags().String("to", "", "the new directory to write the bundle in YAML to (must not exist)")
	toYAML.RunE = func(cmd *cobra.Command, args []string) error {
		if *to == "" {
			return usagef("--to NEWDIR is required")
		}
		if _, err := os.Stat(*to); err == nil {
			return usagef("%s exists: yaml writes a new directory", *to)
		}
		if !bundle.IsDir(args[0]) {
			return usagef("%s is not a bundle directory", args[0])
		}
		wrote, err := bundle.WriteYAML(args[0], *to)
		if err != nil {
			var we *workflow.Error
			if errors.As(err, &we) {
				return err
			}
			return usagef("%v", err)
		}
		w, _, err := bundle.Load(*to)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s\n%s@%s %s\n", *to, strings.Join(wrote, ", "), w.ID(), w.Version(), w.Digest())
		return nil
	}
	cmd.AddCommand(check, toYAML)
	cmd.AddCommand(operatorKeyCommands()...)
	cmd.AddCommand(policyTestCommand())
	rootCmd.AddCommand(cmd)
}

// bundleReport is what flrh bundle check found of one bundle.
type bundleReport struct {
	Bundle   string   `json:"bundle"` // the directory, or example:NAME
	OK       bool     `json:"ok"`
	ID       string   `json:"id,omitempty"`
	Version  string   `json:"version,omitempty"`
	Digest   string   `json:"digest,omitempty"`
	Manifest string   `json:"manifest,omitempty"` // workflow.json or workflow.yaml
	Tools    []string `json:"tools,omitempty"`    // effect types
	// Approvers says who may approve the workflow's approval requests.
	Approvers string `json:"approvers,omitempty"`
	// Variables are the environment variables the adapters read, by
	// name: endpoints and credentials.
	Variables []string `json:"variables,omitempty"`
	// Unwired says why this environment cannot run the bundle's effects
	// (a variable not set), "" when it can.
	Unwired string          `json:"unwired,omitempty"`
	Error   *workflow.Error `json:"error,omitempty"`
	// Failure is an error that is not the bundle's compilation (a file
	// that cannot be read, say), or why --wired failed the bundle.
	Failure string `json:"failure,omitempty"`
}

type bundleReports []bundleReport

func (rs bundleReports) print(w io.Writer) {
	bad := 0
	for _, r := range rs {
		switch {
		case r.Error != nil:
			fmt.Fprintf(w, "FAIL %s: %v\n", r.Bundle, r.Error)
		case !r.OK:
			fmt.Fprintf(w, "FAIL %s: %s\n", r.Bundle, r.Failure)
		default:
			fmt.Fprintf(w, "ok   %s: %s@%s %s (%s; tools %s)\n", r.Bundle, r.ID, r.Version, r.Digest, r.Manifest, strings.Join(r.Tools, ", "))
			fmt.Fprintf(w, "     approved by: %s\n", r.Approvers)
			if r.Unwired != "" {
				fmt.Fprintf(w, "     not wired here: %s\n", r.Unwired)
			}
		}
		if !r.OK {
			bad++
		}
	}
	fmt.Fprintf(w, "%d bundles checked, %d failed\n", len(rs), bad)
}

// checkBundles checks the bundles ref names (checkBundle): a bundle
// directory, a directory of bundle directories (each, in name order), or
// example:NAME. A ref that names none is the caller's mistake.
func checkBundles(ref string, wired bool, env bundle.Env) ([]bundleReport, error) {
	if name, ok := strings.CutPrefix(ref, "example:"); ok {
		w, a, err := bundle.LoadExample(name)
		if errors.Is(err, bundle.ErrNoExample) {
			return nil, usagef("%v", err)
		}
		return []bundleReport{checkBundle(ref, w, a, err, wired, env)}, nil
	}
	fi, err := os.Stat(ref)
	if err != nil || !fi.IsDir() {
		return nil, usagef("%s is not a bundle directory or a directory of them", ref)
	}
	dirs, err := bundle.Dirs(ref)
	if err != nil {
		return nil, usagef("%s: %v", ref, err)
	}
	if len(dirs) == 0 {
		return nil, usagef("%s holds no workflow bundle (a directory with workflow.json or workflow.yaml)", ref)
	}
	var out []bundleReport
	for _, d := range dirs {
		w, a, err := bundle.Load(d)
		out = append(out, checkBundle(d, w, a, err, wired, env))
	}
	return out, nil
}

// checkBundle reports the bundle at where, loaded as w and a, or refused
// with err.
func checkBundle(where string, w *bundle.Workflow, a *bundle.Adapters, err error, wired bool, env bundle.Env) bundleReport {
	r := bundleReport{Bundle: where}
	var we *workflow.Error
	switch {
	case errors.As(err, &we):
		r.Error = we
		return r
	case err != nil:
		r.Failure = err.Error()
		return r
	}
	r.OK, r.ID, r.Version, r.Digest = true, w.ID(), w.Version(), w.Digest()
	r.Manifest = workflow.ManifestFile // the examples' own
	if !strings.HasPrefix(where, "example:") {
		r.Manifest = bundle.ManifestIn(where)
	}
	for et := range w.Manifests() {
		r.Tools = append(r.Tools, et)
	}
	slices.Sort(r.Tools)
	r.Approvers = w.WhoMayApprove()
	r.Variables = a.Variables()
	getenv, err := a.Resolve(env)
	var unset []string
	for _, v := range r.Variables {
		if err == nil && getenv(v) == "" {
			unset = append(unset, v)
		}
	}
	switch {
	case err != nil:
		r.Unwired = strings.TrimPrefix(err.Error(), "bundle: ")
	case len(unset) > 0:
		r.Unwired = "not set: " + strings.Join(unset, ", ")
	default:
		// Wired, not run: shared limits are held by a board no store backs.
		if _, err := a.RegistrySharing(getenv, sharedlimit.New("check")); err != nil {
			r.Unwired = strings.TrimPrefix(err.Error(), "bundle: ")
		}
	}
	if r.Unwired != "" {
		if wired {
			r.OK, r.Failure = false, "not wired here: "+r.Unwired
		}
	}
	return r
}
