package runner

import (
	"testing"

	"flrh.dev/flrh/store"
)

// A pass takes its run's cached checkpoint and puts the next one back:
// the entry is reused, so the round allocates nothing; what is taken is
// what was put, the run is then uncached (a pass that fails leaves no
// cache behind), and the spare entry keeps no checkpoint. It fails when
// an entry is allocated for each put.
func TestCachedCheckpointEntryReused(t *testing.T) {
	r := &Runner{cps: map[string]*cachedCheckpoint{}}
	cp := &checkpoint{}
	want := cachedCheckpoint{head: 7, generation: 2, cp: cp, run: store.Run{ID: "r", Head: 7}, inboxEmpty: true}
	r.putCached("r", want)
	round := func() {
		got, ok := r.takeCached("r")
		// Field by field: reflect.DeepEqual would allocate, and a header
		// holds a map, which == does not compare.
		same := got.head == want.head && got.generation == want.generation && got.cp == want.cp && got.inboxEmpty == want.inboxEmpty &&
			got.run.ID == want.run.ID && got.run.Head == want.run.Head && got.run.Labels == nil
		if !ok || !same {
			t.Fatalf("took %+v (%v), want %+v", got, ok, want)
		}
		if _, ok := r.cps["r"]; ok {
			t.Fatal("the run is still cached once taken")
		}
		if len(r.cpSpare) != 1 || r.cpSpare[0].cp != nil {
			t.Fatalf("spares %d, the last holding checkpoint %v; want one holding none", len(r.cpSpare), r.cpSpare[0].cp)
		}
		r.putCached("r", want)
	}
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Errorf("%.1f allocations a pass's take and put, want 0", n)
	}
	if _, ok := r.takeCached("other"); ok {
		t.Error("a run never cached was taken")
	}
}
