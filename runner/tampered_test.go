package runner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"flrh.dev/flrh/internal/tamper"
	"flrh.dev/flrh/store/sqlite"
	"pgregory.net/rapid"
)

// A run stopped at a cut point (as a SIGKILL would stop it) whose store
// then has any one cell of any table changed behind its back, to any value
// the schema takes, is resumed by a fresh runner without a panic, and
// whatever the runner makes of it, the destination applies the run's one
// logical effect at most once, and a run that ends SUCCEEDED had it
// applied. The change may leave the run quarantined, failed or waiting:
// a store changed from outside is not the runner's to repair, only never
// to turn into a second payment or a success without one.
func TestResumeAfterAnyCellChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("a store and a crashed run per draw")
	}
	draws := 0
	outcomes := map[string]int{}
	tamper.FewerChecksUnderRace(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		draws++
		point := rapid.SampledFrom(tamper.CutPoints).Draw(rt, "cut point")
		dir, err := os.MkdirTemp(t.TempDir(), "draw")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		clock := newFakeClock()
		s, err := sqlite.Open(ctx, filepath.Join(dir, "flrh.db"), sqlite.Options{Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		h := &harness{t: t, store: s, dest: newDestination(), path: filepath.Join(dir, "flrh.db"), clock: clock}
		h.crashAt(point, "run", small)

		// One cell, drawn over every table's columns and rows.
		cols, err := tamper.Columns(s.DB())
		if err != nil {
			t.Fatal(err)
		}
		c := rapid.SampledFrom(cols).Draw(rt, "column")
		cells, err := tamper.Cells(s.DB(), c, "true")
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) == 0 {
			rt.Skipf("%s has no rows", c.Table)
		}
		x := rapid.SampledFrom(cells).Draw(rt, "cell")
		v, ok := tamper.Draw(rt, x.Type, x.Value, math.MinInt64, math.MaxInt64, 255)
		if !ok {
			rt.Skipf("%s.%s is %s", c.Table, c.Name, x.Type)
		}
		if err := tamper.Set(s.DB(), c, x.Key, v); err != nil {
			rt.Skipf("%s.%s = %v: %v", c.Table, c.Name, v, err)
		}
		what := fmt.Sprintf("cut at %s, %s.%s[%s] = %v", point, c.Table, c.Name, x.Key, v)

		h.r = h.runner(nil)
		var runErr error
		func() {
			defer func() {
				if p := recover(); p != nil {
					rt.Fatalf("%s: the resumed runner panicked: %v", what, p)
				}
			}()
			runErr = h.r.RunToIdle(ctx)
		}()
		run, readErr := s.Run(ctx, "run")
		outcome, broken := tamper.Resumed(run, readErr, runErr, h.dest.count())
		if broken != nil {
			rt.Fatalf("%s: %v", what, broken)
		}
		outcomes[outcome]++
	})
	t.Logf("%d draws; the run after each: %v", draws, outcomes)
}
