// Command puritycheck runs the purity analyzer over packages, e.g.
//
//	go run ./cmd/puritycheck ./...
//
// It reports only in flrh's pure packages (see package purity) and exits
// non-zero when it finds anything, so CI fails on an impure construct.
package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"flrh.dev/flrh/analysis/purity"
)

func main() { singlechecker.Main(purity.Analyzer) }
