// Package openended gives the refund-agent example bundle with its
// completion condition pointed at a fact nothing derives, so that one run
// takes any number of refund requests, each a governed step. Benchmarks
// and measurements of a step's cost use it to run many steps in one run.
package openended

import (
	"fmt"
	"io/fs"
	"strings"
	"testing/fstest"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/examples"
)

// RefundAgent loads the refund-agent example with `complete_when` changed
// from done("refund") to done("never"). It fails if the example no longer
// states the condition it rewrites, rather than measure another workflow.
func RefundAgent() (*bundle.Workflow, error) {
	m, err := Files()
	if err != nil {
		return nil, err
	}
	wf, _, err := bundle.LoadFS(m)
	return wf, err
}

// Files is the rewritten bundle's files, for a test that needs it as a
// directory (a command line given --workflows DIR).
func Files() (fstest.MapFS, error) {
	src, err := examples.Bundle("refund-agent")
	if err != nil {
		return nil, err
	}
	m := fstest.MapFS{}
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		if p == "workflow.json" {
			const from, to = `"complete_when": "done(\"refund\")"`, `"complete_when": "done(\"never\")"`
			if !strings.Contains(string(b), from) {
				return fmt.Errorf("refund-agent workflow.json no longer has %s", from)
			}
			b = []byte(strings.Replace(string(b), from, to, 1))
		}
		m[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
