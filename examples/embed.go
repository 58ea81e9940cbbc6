// Package examples holds the example workflow bundles, embedded so that
// the flrh binary carries them (flrh demo, flrh serve) wherever it runs.
// Each bundle is a plain directory of files a user could have written.
package examples

import (
	"embed"
	"io/fs"
)

//go:embed refund-agent/*.json refund-agent/*.dl refund-agent/*.test.yaml ops-agent/*.json ops-agent/*.dl ops-agent/*.test.yaml support-agent/*.json support-agent/*.dl support-agent/*.test.yaml
var bundles embed.FS

// Bundle returns the example bundle with the given directory name
// ("refund-agent", "ops-agent", "support-agent").
func Bundle(name string) (fs.FS, error) { return fs.Sub(bundles, name) }

// Names lists the example bundles.
func Names() []string { return []string{"ops-agent", "refund-agent", "support-agent"} }
