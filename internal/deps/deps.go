//go:build deps

// Package deps pins modules the project depends on before code imports them,
// so that `go mod tidy` keeps them. It is never built.
package deps

import (
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/text/unicode/norm"
	_ "golang.org/x/tools/go/analysis"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
