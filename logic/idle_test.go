package logic

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// An update that passes over the strata nothing reaches leaves exactly
// what running every stratum's passes leaves: the same facts and supports,
// the same rounds and deaths of every row, the same stats, net changes,
// and errors, over generated programs and update sequences.
func TestIdleStrataSkipIsEveryPass(t *testing.T) {
	defer func(v bool) { skipIdleStrata = v }(skipIdleStrata)
	rapid.Check(t, func(rt *rapid.T) {
		c, src := genLoaded(rt)
		lim := Limits{MaxTuples: rapid.SampledFrom([]int64{0, 8, 20000}).Draw(rt, "maxtuples"), MaxDepth: rapid.IntRange(0, 4).Draw(rt, "maxdepth")}
		ms := genBase(rt)
		m, err := Evaluate(c, ms.facts(), lim)
		if err != nil {
			rt.Skip("evaluation error")
		}
		m.recordChanges = true
		for step := range rapid.IntRange(1, 10).Draw(rt, "steps") {
			changes := genChanges(rt, ms)
			ctx := fmt.Sprintf("step %d changes %v\nprogram:\n%s", step, changes, src)
			skipIdleStrata = false
			want, werr := m.Clone().Apply(changes)
			skipIdleStrata = true
			before := m.stats
			got, gerr := m.Apply(changes)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				rt.Fatalf("%s: every pass: %v; skipping: %v", ctx, werr, gerr)
			}
			if gerr != nil {
				if fmt.Sprint(m.stats) != fmt.Sprint(before) {
					rt.Fatalf("%s: a failed update changed the stats", ctx)
				}
				rt.Skip("both failed")
			}
			assertSameMaterialization(rt, got, want, ctx)
			if g, w := fmt.Sprint(got.Stats()), fmt.Sprint(want.Stats()); g != w {
				rt.Fatalf("%s: stats\n got %s\nwant %s", ctx, g, w)
			}
			if g, w := fmt.Sprint(got.lastChanges), fmt.Sprint(want.lastChanges); g != w {
				rt.Fatalf("%s: net changes\n got %s\nwant %s", ctx, g, w)
			}
			if got.round != want.round || got.epoch != want.epoch || got.live != want.live {
				rt.Fatalf("%s: round %d epoch %d live %d, want %d %d %d", ctx, got.round, got.epoch, got.live, want.round, want.epoch, want.live)
			}
			for ti, tb := range got.tables {
				wb := want.tables[ti]
				if tb.n != wb.n || tb.ndead != wb.ndead {
					rt.Fatalf("%s: table %d has %d rows (%d dead), want %d (%d)", ctx, ti, tb.n, tb.ndead, wb.n, wb.ndead)
				}
				for r := int32(0); r < tb.n; r++ {
					if tb.round.get(r) != wb.round.get(r) || tb.died.get(r) != wb.died.get(r) {
						rt.Fatalf("%s: table %d row %d: round %d died %d, want %d %d", ctx, ti, r, tb.round.get(r), tb.died.get(r), wb.round.get(r), wb.died.get(r))
					}
				}
			}
			m = got
		}
	})
}
