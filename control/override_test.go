package control

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestOverrideSetsOnlyWhatItNames(t *testing.T) {
	base := DefaultContract()
	c, err := base.Override([]byte(`{"budgets":{"steps":10,"wall_seconds":5,"retries_per_transition":1},"retry":{"base_millis":100,"cap_millis":400}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := base.Budgets.Limits
	want.Steps, want.WallSeconds = 10, 5
	if c.Budgets.Limits != want {
		t.Fatalf("limits %+v, want %+v", c.Budgets.Limits, want)
	}
	if c.Budgets.RetriesPerTransition != 1 || c.Retry.MaxRetries != 1 || c.Retry.BaseMillis != 100 || c.Retry.CapMillis != 400 {
		t.Fatalf("retry %+v budgets %+v", c.Retry, c.Budgets)
	}
	if c.Digest == base.Digest || c.NoProgress != base.NoProgress || c.Retry.ExhaustedEvent != base.Retry.ExhaustedEvent {
		t.Fatalf("override changed what it does not name or kept the digest")
	}
	if base.Budgets.Limits.Steps != 64 || base.Retry.BaseMillis != 500 {
		t.Fatalf("the base contract was modified: %+v", base.Budgets.Limits)
	}
	again, _ := base.Override([]byte(`{"retry":{"cap_millis":400,"base_millis":100},"budgets":{"retries_per_transition":1,"wall_seconds":5,"steps":10}}`))
	if again == nil || again.Digest != c.Digest {
		t.Fatalf("the digest depends on member order")
	}
	empty, err := base.Override([]byte(`{}`))
	if err != nil || empty.Budgets != base.Budgets || empty.Retry != base.Retry {
		t.Fatalf("empty override: %v", err)
	}
}

func TestOverrideRefusesBadSections(t *testing.T) {
	for _, tc := range []struct {
		name, text, ptr string
		code            Code
	}{
		{"not an object", `[]`, "", CodeSchema},
		{"unknown top member", `{"budget":{}}`, "/budget", CodeSchema},
		{"unknown budget", `{"budgets":{"stepz":3}}`, "/budgets/stepz", CodeSchema},
		{"zero steps", `{"budgets":{"steps":0}}`, "/budgets/steps", CodeLimit},
		{"negative wall", `{"budgets":{"wall_seconds":-1}}`, "/budgets/wall_seconds", CodeLimit},
		{"huge tool calls", `{"budgets":{"tool_calls":4503599627370497}}`, "/budgets/tool_calls", CodeLimit},
		{"too many retries", `{"budgets":{"retries_per_transition":16}}`, "/budgets/retries_per_transition", CodeLimit},
		{"soft at 100", `{"budgets":{"soft_checkpoint_percent":100}}`, "/budgets/soft_checkpoint_percent", CodeLimit},
		{"string limit", `{"budgets":{"steps":"10"}}`, "/budgets/steps", CodeSchema},
		{"cap below base", `{"retry":{"base_millis":1000,"cap_millis":10}}`, "/retry/cap_millis", CodeLimit},
		{"cap below default base", `{"retry":{"cap_millis":10}}`, "/retry/cap_millis", CodeLimit},
		{"jitter is fixed", `{"retry":{"jitter":"full"}}`, "/retry/jitter", CodeSchema},
		{"backoff over a day", `{"retry":{"cap_millis":86400001}}`, "/retry/cap_millis", CodeLimit},
		{"not json", `{"budgets":`, "", CodeSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := DefaultContract()
			_, err := base.Override([]byte(tc.text))
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || (tc.ptr != "" && e.Pointer != tc.ptr) {
				t.Fatalf("got %v, want %s at %s", err, tc.code, tc.ptr)
			}
			if base.Budgets.Limits != DefaultContract().Budgets.Limits {
				t.Fatal("a refused override changed the base")
			}
		})
	}
}

func TestMillisToSecondsRoundsUp(t *testing.T) {
	for _, tc := range []struct{ ms, s int64 }{{-5, 0}, {0, 0}, {1, 1}, {999, 1}, {1000, 1}, {1001, 2}, {600000, 600}, {600001, 601},
		{math.MaxInt64, math.MaxInt64/1000 + 1}} {
		if got := MillisToSeconds(tc.ms); got != tc.s {
			t.Errorf("MillisToSeconds(%d) = %d, want %d", tc.ms, got, tc.s)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.Int64Range(0, 1<<52).Draw(t, "ms")
		limit := rapid.Int64Range(1, 1<<40).Draw(t, "limit")
		if over := MillisToSeconds(ms) > limit; over != (ms > limit*1000) {
			t.Fatalf("%d ms against %d s: over=%v", ms, limit, over)
		}
	})
}

// FuzzOverride: any bytes either give a typed error and leave the base
// alone, or a contract whose every limit is within the contract's bounds.
func FuzzOverride(f *testing.F) {
	for _, s := range []string{`{}`, `{"budgets":{"steps":1}}`, `{"retry":{"base_millis":1,"cap_millis":1}}`,
		`{"budgets":{"tool_calls":4503599627370496,"retries_per_transition":15,"soft_checkpoint_percent":99}}`, `{"budgets":[]}`, `null`} {
		f.Add([]byte(s))
	}
	base := DefaultContract()
	want := base.Budgets
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := base.Override(b)
		typedOrNil(t, err)
		if base.Budgets != want {
			t.Fatal("the base contract changed")
		}
		if err != nil {
			return
		}
		l := c.Budgets.Limits
		for _, v := range []int64{l.Steps, l.ToolCalls, l.WallSeconds, l.SuspendedSeconds, l.Tokens, l.CostMicros, l.RecursionDepth, l.Parallelism} {
			if v < 1 || v > maxLimit {
				t.Fatalf("limit %d out of bounds: %+v", v, l)
			}
		}
		r := c.Retry
		if r.MaxRetries != c.Budgets.RetriesPerTransition || r.MaxRetries < 1 || r.MaxRetries > MaxRetriesCeiling ||
			r.BaseMillis < 1 || r.CapMillis < r.BaseMillis || r.CapMillis > MaxBackoffMillis {
			t.Fatalf("retry out of bounds: %+v", r)
		}
	})
}
