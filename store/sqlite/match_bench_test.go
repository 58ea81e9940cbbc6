package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

// BenchmarkMatchRuns is storetest.BenchMatchRuns on the embedded store.
func BenchmarkMatchRuns(b *testing.B) {
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	storetest.BenchMatchRuns(b, s)
}

// BenchmarkRunHeader reads a run's header, as every lease and pass does:
// bare, and bearing four labels, which each read decodes.
func BenchmarkRunHeader(b *testing.B) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), time.Now)
	defer s.Close()
	labels := map[string]string{"order": "A-1042", "team": "payments", "region": "eu-west-1", "ticket": "OPS-7781"}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{{"bare", nil}, {"labelled", labels}} {
		if err := s.CreateRun(ctx, store.Run{ID: c.name, WorkflowID: "wf", WorkflowVersion: "1", State: "INGEST", Labels: c.labels}); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Run(ctx, c.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
