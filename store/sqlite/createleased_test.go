package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// BenchmarkRunStart is a run's start as the runner makes it: the run with
// its first input, and the lease its first pass takes; two commits
// (CreateRun, then AcquireLease) or one (CreateRunLeased).
func BenchmarkRunStart(b *testing.B) {
	for _, leased := range []bool{false, true} {
		name := "CreateRunThenAcquireLease"
		if leased {
			name = "CreateRunLeased"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "flrh.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			body := []byte(`{"type":"refund.requested/1","payload":{"amount":10,"payee":"p","reason":"damaged item","refund_id":"r-1"}}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("run-%d", i)
				run := store.Run{ID: id, WorkflowID: "wf", WorkflowVersion: "1", State: "INIT"}
				in := store.Inbound{ID: "input:1", RunID: id, Kind: "INPUT", ActorRole: "runner", Actor: "runner", Capability: "run.start",
					Body: body, Digest: store.BodyDigest(body)}
				if leased {
					_, err = s.CreateRunLeased(ctx, run, "runner", 30*time.Second, in)
				} else if err = s.CreateRun(ctx, run, in); err == nil {
					_, err = s.AcquireLease(ctx, id, "runner", 30*time.Second)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
