package ratelimit_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/ratelimit"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		text  string
		burst int
		want  string
	}{
		{"10/s", 0, "10/s (burst 10)"},
		{"10/s", 25, "10/s (burst 25)"},
		{"600/m", 0, "600/m (burst 600)"},
		{"1/h", 3, "1/h (burst 3)"},
		{"1000000/s", 1, "1000000/s (burst 1)"},
		{"1/h", 24, "1/h (burst 24)"},
	} {
		l, err := ratelimit.Parse(c.text, c.burst)
		if err != nil || l.String() != c.want || l.Check() != nil {
			t.Errorf("%s burst %d: %v, %v; want %s", c.text, c.burst, l, err, c.want)
		}
	}
	for _, c := range []struct {
		text  string
		burst int
		words string
	}{
		{"", 0, "not COUNT/UNIT"},
		{"10", 0, "not COUNT/UNIT"},
		{"10/d", 0, "not COUNT/UNIT"},
		{"10/S", 0, "not COUNT/UNIT"},
		{"10/s/s", 0, "not COUNT/UNIT"},
		{"/s", 0, "the count is a whole number"},
		{"0/s", 0, "the count is a whole number"},
		{"-1/s", 0, "the count is a whole number"},
		{"+1/s", 0, "the count is a whole number"},
		{"01/s", 0, "the count is a whole number"},
		{"1.5/s", 0, "the count is a whole number"},
		{"1000001/s", 0, "the count is a whole number from 1 to 1000000"},
		{"10/s", -1, "the burst is a whole number"},
		{"10/s", 1_000_001, "the burst is a whole number"},
		{"1/h", 25, "spans more than a day"},
	} {
		_, err := ratelimit.Parse(c.text, c.burst)
		var re *ratelimit.Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%q burst %d: %v; want an error saying %q", c.text, c.burst, err, c.words)
		}
	}
	for _, l := range []ratelimit.Limit{{Count: 1, Per: time.Millisecond, Burst: 1}, {Count: 1, Per: time.Second}, {Count: 2, Per: 2 * time.Hour, Burst: 1}} {
		if l.Check() == nil {
			t.Errorf("%+v: checked as a limit", l)
		}
	}
}

func TestFaster(t *testing.T) {
	read := func(text string, burst int) ratelimit.Limit {
		l, err := ratelimit.Parse(text, burst)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		a, b ratelimit.Limit
		want bool
	}{
		{read("2/s", 0), read("100/m", 0), true},
		{read("100/m", 0), read("2/s", 0), false},
		{read("120/m", 10), read("2/s", 3), true}, // as many a second, a larger burst
		{read("2/s", 3), read("120/m", 10), false},
		{read("2/s", 3), read("2/s", 3), false},
		{read("1000000/s", 0), read("1000000/h", 0), true},
	} {
		if got := c.a.Faster(c.b); got != c.want {
			t.Errorf("%v faster than %v: %v", c.a, c.b, got)
		}
	}
}

func TestTake(t *testing.T) {
	lim, _ := ratelimit.Parse("2/s", 3)
	var l ratelimit.Limiter
	at := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		if ok, _ := l.Take("a", lim, at); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := l.Take("a", lim, at)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %s", ok, wait)
	}
	// Another key has its own bucket; the zero Limit holds nothing back.
	if ok, _ := l.Take("b", lim, at); !ok {
		t.Fatal("another key refused")
	}
	for range 100 {
		if ok, _ := l.Take("c", ratelimit.Limit{}, at); !ok {
			t.Fatal("the zero limit refused")
		}
	}
	// A refusal spends nothing: retried at once, the wait is the same.
	if ok, again := l.Take("a", lim, at.Add(100*time.Millisecond)); ok || again != 400*time.Millisecond {
		t.Fatalf("retried early: %v, wait %s", ok, again)
	}
	if ok, _ := l.Take("a", lim, at.Add(wait)); !ok {
		t.Fatal("refused after the wait it was given")
	}
	if ok, _ := l.Take("a", lim, at.Add(wait)); ok {
		t.Fatal("a second request in the interval allowed")
	}
	// The key's limit changed: a faster rate finds the bucket empty under
	// it, one interval of the new rate away, not as far as the old one.
	slow, _ := ratelimit.Parse("1/h", 20)
	for range 20 {
		l.Take("d", slow, at)
	}
	fast, _ := ratelimit.Parse("100/s", 1)
	if ok, wait := l.Take("d", fast, at); ok || wait != 10*time.Millisecond {
		t.Fatalf("a faster rate: %v, wait %s", ok, wait)
	}
	if ok, _ := l.Take("d", fast, at.Add(10*time.Millisecond)); !ok {
		t.Fatal("a faster rate refused after its interval")
	}
}

// bucket is an oracle: the token bucket written out, credit in
// nanoseconds of the interval, filled by the time passed up to a burst's
// worth and spent an interval a request.
type bucket struct{ credit, last int64 }

func (b *bucket) take(interval, burst, t int64, seen bool) bool {
	if !seen {
		b.credit, b.last = interval*burst, t
	}
	if t > b.last {
		b.credit = min(interval*burst, b.credit+t-b.last)
		b.last = t
	}
	if b.credit < interval {
		return false
	}
	b.credit -= interval
	return true
}

// Take against the token bucket, over drawn keys, limits and times
// (times never go back, as a server's clock reads them), enough keys
// for the Limiter to sweep.
func TestTakeAgainstTokenBucket(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		count := rapid.IntRange(1, 50).Draw(t, "count")
		per := rapid.SampledFrom([]time.Duration{time.Second, time.Minute}).Draw(t, "per")
		burst := rapid.IntRange(1, 20).Draw(t, "burst")
		lim := ratelimit.Limit{Count: count, Per: per, Burst: burst}
		if lim.Check() != nil {
			t.Fatalf("%+v refused", lim)
		}
		interval := int64(per) / int64(count)
		keys := rapid.IntRange(1, 3000).Draw(t, "keys")
		var l ratelimit.Limiter
		oracle := map[string]*bucket{}
		now := int64(1_800_000_000) * 1e9
		for i := range rapid.IntRange(1, 4000).Draw(t, "requests") {
			now += rapid.Int64Range(0, 3*interval).Draw(t, "gap")
			key := fmt.Sprint(rapid.IntRange(0, keys-1).Draw(t, "key"))
			b, seen := oracle[key]
			if !seen {
				b = &bucket{}
				oracle[key] = b
			}
			want := b.take(interval, int64(burst), now, seen)
			got, wait := l.Take(key, lim, time.Unix(0, now))
			if got != want {
				t.Fatalf("request %d of %s at %d: allowed %v, the bucket says %v", i, key, now, got, want)
			}
			if !got && (wait <= 0 || wait > time.Duration(interval)) {
				t.Fatalf("request %d refused with a wait of %s (interval %s)", i, wait, time.Duration(interval))
			}
			if probe := *b; !got && !probe.take(interval, int64(burst), now+int64(wait), true) {
				t.Fatalf("request %d: the bucket refuses after the wait, %s", i, wait)
			}
			if early := *b; !got && early.take(interval, int64(burst), now+int64(wait)-1, true) {
				t.Fatalf("request %d: the bucket allows a nanosecond before the wait, %s, ends", i, wait)
			}
		}
		if l.Len() > max(2*keys, 2048) {
			t.Fatalf("%d keys held for %d drawn", l.Len(), keys)
		}
	})
}

// Keys whose buckets are full are forgotten once the Limiter grows.
func TestSweep(t *testing.T) {
	lim, _ := ratelimit.Parse("1/s", 1)
	var l ratelimit.Limiter
	at := time.Unix(1_800_000_000, 0)
	for i := range 5000 {
		l.Take(fmt.Sprint(i), lim, at.Add(time.Duration(i)*time.Millisecond))
	}
	// Each key's bucket is full a second after its request: at most the
	// last thousand-odd, and twice what a sweep left, are held.
	if n := l.Len(); n > 2100 {
		t.Fatalf("%d keys held", n)
	}
	// A key whose bucket is not full again is never forgotten: each
	// requested in the last second is still refused.
	last := at.Add(4999 * time.Millisecond)
	for i := 4001; i < 5000; i++ {
		if ok, _ := l.Take(fmt.Sprint(i), lim, last); ok {
			t.Fatalf("key %d, requested %d ms before, allowed again", i, 4999-i)
		}
	}
	// A key swept is as new: its burst is whole.
	if ok, _ := l.Take("0", lim, at.Add(10*time.Second)); !ok {
		t.Fatal("a forgotten key refused")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"10/s", "600/m", "1/h", "0/s", "1000000/s", "+1/h", "9999999999999999999/s"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, text string, burst int) {
		l, err := ratelimit.Parse(text, burst)
		if err != nil {
			var re *ratelimit.Error
			if !errors.As(err, &re) {
				t.Fatalf("an untyped error: %v", err)
			}
			return
		}
		if l.Check() != nil {
			t.Fatalf("%q: parsed %+v fails its check", text, l)
		}
		again, err := ratelimit.Parse(strings.Fields(l.String())[0], l.Burst)
		if err != nil || again != l {
			t.Fatalf("%q: %v read back as %v, %v", text, l, again, err)
		}
		var lim ratelimit.Limiter
		at := time.Unix(1_800_000_000, 0)
		for i := range min(l.Burst, 1000) {
			if ok, _ := lim.Take("k", l, at); !ok {
				t.Fatalf("%v: request %d of the burst refused", l, i)
			}
		}
		if ok, wait := lim.Take("k", l, at); l.Burst <= 1000 && (ok || wait <= 0) {
			t.Fatalf("%v: past the burst: %v, %s", l, ok, wait)
		}
	})
}

func BenchmarkTake(b *testing.B) {
	lim, _ := ratelimit.Parse("1000/s", 100)
	for _, keys := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			names := make([]string, keys)
			for i := range names {
				names[i] = fmt.Sprint("actor-", i)
			}
			var l ratelimit.Limiter
			at := time.Unix(1_800_000_000, 0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				at = at.Add(time.Millisecond)
				l.Take(names[i%keys], lim, at)
				i++
			}
		})
	}
}
