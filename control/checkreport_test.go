package control

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/internal/racebuild"
)

// CheckReport's check of a report in range, without the dimensions'
// table, gives what the table's check gives, for every report: drawn
// dimensions at, inside and past the bounds.
func TestCheckReportIsTheTablesCheck(t *testing.T) {
	value := rapid.OneOf(
		rapid.SampledFrom([]int64{0, 0, 0, 1, -1, MaxReported, MaxReported + 1, -MaxReported, 1 << 62, -1 << 63}),
		rapid.Int64(),
	)
	rapid.Check(t, func(t *rapid.T) {
		u := Usage{}
		reported := rapid.Bool().Draw(t, "tokens and cost only")
		for _, d := range u.dims() {
			if reported && d.d != DimTokens && d.d != DimCostMicros {
				continue
			}
			if rapid.IntRange(0, 3).Draw(t, "set "+string(d.d)) < 2 {
				*d.v = value.Draw(t, string(d.d))
			}
		}
		if (u.Tokens != 0 || u.CostMicros != 0) && rapid.Bool().Draw(t, "in range") {
			u.Tokens, u.CostMicros = max(0, min(u.Tokens, MaxReported)), max(0, min(u.CostMicros, MaxReported))
		}
		want := u
		got, wantErr := CheckReport(u), checkReport(&want)
		if !reflect.DeepEqual(got, wantErr) {
			t.Fatalf("%+v: CheckReport %v, the table's check %v", u, got, wantErr)
		}
	})
}

// A report in range is checked without an allocation.
func TestCheckReportInRangeAllocatesNothing(t *testing.T) {
	if racebuild.Enabled {
		t.Skip("allocations are counted without the race detector")
	}
	u := Usage{Tokens: 120, CostMicros: 3}
	if n := testing.AllocsPerRun(100, func() {
		if CheckReport(u) != nil {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
