package main

import (
	"fmt"
	"strings"
)

// builtinPrefix addresses a workflow compiled into the binary:
// builtin:ID or builtin:ID@VERSION.
const builtinPrefix = "builtin:"

// byName resolves a workflow named by id (ID or ID@VERSION, version 1 when
// omitted), or by builtin:ID for a built-in Go workflow. A bare id matches
// the bundles of --workflows first; otherwise it must name exactly one
// definition: when a built-in workflow and an embedded example share the
// id and version but not the definition (the built-in refund-agent and
// example:refund-agent do, with different inputs), the name is refused
// and the message says how to pick one.
func (c *catalog) byName(ref string) (candidate, error) {
	name, builtin := strings.CutPrefix(ref, builtinPrefix)
	id, version, _ := strings.Cut(name, "@")
	if version == "" {
		version = "1"
	}
	var matches []candidate
	for i, cd := range c.cands {
		if cd.wf.ID() != id || cd.wf.Version() != version {
			continue
		}
		if builtin {
			if cd.from == "built-in" {
				return cd, nil
			}
			continue
		}
		if i < c.explicit {
			return cd, nil
		}
		matches = append(matches, cd)
	}
	if builtin {
		return candidate{}, usagef("no built-in workflow %s@%s (built-in: %s)", id, version, c.builtinNames())
	}
	if len(matches) == 0 {
		if strings.ContainsAny(ref, `/\`) || strings.HasPrefix(ref, ".") {
			// A path, not an id: it was looked for as a directory first.
			return candidate{}, usagef("no bundle directory %s (and no workflow of that id)", ref)
		}
		return candidate{}, usagef("no workflow %s@%s (give a workflow id, builtin:ID, a bundle directory or example:NAME)", id, version)
	}
	for _, m := range matches[1:] {
		if m.wf.Digest() != matches[0].wf.Digest() {
			var alts []string
			for _, m := range matches {
				if m.from == "built-in" {
					alts = append(alts, builtinPrefix+id)
				} else {
					alts = append(alts, m.from)
				}
			}
			return candidate{}, usagef("%s@%s names %d different workflows; say which: %s", id, version, len(matches), strings.Join(alts, " or "))
		}
	}
	return matches[0], nil
}

func (c *catalog) builtinNames() string {
	var out []string
	for _, cd := range c.cands {
		if cd.from == "built-in" {
			out = append(out, fmt.Sprintf("%s%s@%s", builtinPrefix, cd.wf.ID(), cd.wf.Version()))
		}
	}
	return strings.Join(out, ", ")
}
