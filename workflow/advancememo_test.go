package workflow

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/frontier"
	"flrh.dev/flrh/internal/racebuild"
)

// TestAdvanceMemoIsTheBoxedPair holds advanceMemo.pair to the two
// advances react boxed every tick before, for drawn marks (each tick's
// end within and past the memo, marks between ticks, negative ones) under
// two profiles taking turns on one memo, and a nil memo: either no pair,
// or the pair written out. A repeated mark is not boxed again.
func TestAdvanceMemoIsTheBoxedPair(t *testing.T) {
	profiles := [][2]string{{"sha256:aa", "single/1"}, {"sha256:bb", "single/2"}}
	rapid.Check(t, func(rt *rapid.T) {
		m := new(advanceMemo)
		if rapid.Bool().Draw(rt, "nil") {
			m = nil
		}
		for range rapid.IntRange(1, 20).Draw(rt, "calls") {
			pr := rapid.SampledFrom(profiles).Draw(rt, "profile")
			mark := rapid.OneOf(
				rapid.Map(rapid.Int64Range(-2, advanceMemoTicks+2), func(k int64) int64 { return k * EpochStride }),
				rapid.Int64Range(-3*EpochStride, (advanceMemoTicks+3)*EpochStride),
			).Draw(rt, "mark")
			p := m.pair(pr[0], pr[1], mark)
			inMemo := m != nil && mark%EpochStride == 0 && mark >= EpochStride && mark <= advanceMemoTicks*EpochStride
			if (p != nil) != inMemo {
				rt.Fatalf("pair(%d) = %v, in the memo %v", mark, p, inMemo)
			}
			if p == nil {
				continue
			}
			want := []frontier.Command{
				frontier.AdvanceFrontier{ProfileDigest: pr[0], DataflowVersion: pr[1], SourceID: ProposalSource, LowWatermark: mark},
				frontier.AdvanceFrontier{ProfileDigest: pr[0], DataflowVersion: pr[1], SourceID: VerdictSource, LowWatermark: mark},
			}
			if !reflect.DeepEqual(p[:], want) {
				rt.Fatalf("pair(%d) = %#v, want %#v", mark, p[:], want)
			}
		}
	})
	if racebuild.Enabled {
		return
	}
	m := new(advanceMemo)
	m.pair("sha256:aa", "single/1", 3*EpochStride)
	if n := testing.AllocsPerRun(20, func() { m.pair("sha256:aa", "single/1", 3*EpochStride) }); n != 0 {
		t.Fatalf("a repeated mark allocated %v times", n)
	}
}
