package store

import (
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// What a store keeps of a retry's waits gives back, at any claim after
// the notice fell due, every route by name with its failures and what
// is left of its wait (0 once passed); and the notice falls due when the
// soonest wait passes.
func TestWaitsKeptAndReadBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9=_-]{0,8}`), 1, MaxNoticeRoutes, rapid.ID[string]).Draw(t, "routes")
		waits := make([]RouteWait, len(names))
		for i, n := range names {
			waits[i] = RouteWait{Route: n, After: time.Duration(rapid.Int64Range(0, int64(48*time.Hour)).Draw(t, "after")),
				Failures: rapid.IntRange(0, 1000).Draw(t, "failures")}
		}
		if err := ValidateRetry(nil, waits); err != nil {
			t.Fatalf("valid waits refused: %v", err)
		}
		kept, soonest := JoinWaits(waits)
		if want := slices.MinFunc(waits, func(a, b RouteWait) int { return int(a.After - b.After) }).After; soonest != want {
			t.Fatalf("due after %v, want the soonest %v", soonest, want)
		}
		late := time.Duration(rapid.Int64Range(0, int64(49*time.Hour)).Draw(t, "late"))
		var want []RouteWait
		for _, w := range waits {
			want = append(want, RouteWait{Route: w.Route, After: max(w.After-soonest-late, 0), Failures: w.Failures})
		}
		slices.SortFunc(want, func(a, b RouteWait) int { return strings.Compare(a.Route, b.Route) })
		if got := SplitWaits(kept, late); !slices.Equal(got, want) {
			t.Fatalf("read back %v from %q at %v late, want %v", got, kept, late, want)
		}
	})
}

// No waits are kept as none, due at once.
func TestJoinNoWaits(t *testing.T) {
	if kept, soonest := JoinWaits(nil); kept != "" || soonest != 0 || SplitWaits(kept, 0) != nil {
		t.Fatalf("no waits kept as %q, due after %v", kept, soonest)
	}
}

// Retries with bad routes or waits are refused, each saying why.
func TestValidateRetry(t *testing.T) {
	w := func(route string, after time.Duration) RouteWait {
		return RouteWait{Route: route, After: after, Failures: 1}
	}
	for _, c := range []struct {
		sent  []string
		waits []RouteWait
		want  string
	}{
		{nil, nil, "no route waits"},
		{nil, []RouteWait{w("", 0)}, "route 0 waiting is not a name"},
		{nil, []RouteWait{w("a\nb", 0)}, "route 0 waiting is not a name"},
		{nil, []RouteWait{w("chat", -1)}, `route "chat" waits a negative`},
		{nil, []RouteWait{{Route: "chat", Failures: -1}}, `route "chat" waits with -1 failures`},
		{[]string{"chat"}, []RouteWait{w("chat", 0)}, `route "chat" both took the notice and waits for it`},
		{nil, []RouteWait{w("chat", 0), w("chat", 1)}, `route "chat" waiting is named twice`},
		{[]string{"a", "a"}, []RouteWait{w("chat", 0)}, `route "a" sent to is named twice`},
		{nil, make([]RouteWait, MaxNoticeRoutes+1), "more than 32"},
	} {
		err := ValidateRetry(c.sent, c.waits)
		if CodeOf(err) != CodeInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ValidateRetry(%q, %v) = %v, want %q", c.sent, c.waits, err, c.want)
		}
	}
}

// Whatever a waits column holds, reading it never fails: entries that do
// not read as JoinWaits writes them are taken as passed, and what is read
// names routes a retry may name, each with a wait still to run.
func FuzzSplitWaits(f *testing.F) {
	kept, _ := JoinWaits([]RouteWait{{Route: "chat", After: time.Second, Failures: 1}, {Route: "a=b", After: time.Hour, Failures: 7}})
	for _, s := range []string{"", kept, "chat=", "=5:1", "chat=-1:1", "chat=1:0", "chat=1:-1", "chat=5", "chat=99999999999999999999:1", ",,", "x=1:1,x=2:3", "\xff=3:1"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, late int64) {
		got := SplitWaits(s, time.Duration(late))
		for _, w := range got {
			if !goodRouteName(w.Route) || w.After < 0 || w.Failures < 0 {
				t.Fatalf("read %v from %q", w, s)
			}
		}
		if len(got) > 0 && strings.Count(s, ",")+1 < len(got) {
			t.Fatalf("%d waits read from %q", len(got), s)
		}
	})
}
