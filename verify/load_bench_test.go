package verify

import (
	"testing"

	"flrh.dev/flrh/store/sqlite"
)

// BenchmarkLoad measures reading 200 refund-agent runs from SQLite as
// verify.Run does (every table verify checks), without checking them: the
// store's share of verify's cost; and (verify-batches) as CheckMany reads
// them, sixteen runs by one statement.
func BenchmarkLoad(b *testing.B) {
	path, _, ids := manyRuns(b, 200)
	st, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, p := range []struct {
		name  string
		parts int
	}{{"verify", withRun | withEffects}, {"replay", 0}} {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, id := range ids {
					if _, err := load(ctx, st, id, p.parts); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("verify-batches", func(b *testing.B) {
		rr, ok := recordsReaderOf(st)
		if !ok {
			b.Fatal("the SQLite store reads no batches")
		}
		b.ReportAllocs()
		for b.Loop() {
			for lo := 0; lo < len(ids); lo += 16 {
				recs, errs := rr.ReadRunRecords(ctx, ids[lo:min(lo+16, len(ids))], true)
				for i, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
					fromRunRecord(st, recs[i], withRun|withEffects)
				}
			}
		}
	})
}
