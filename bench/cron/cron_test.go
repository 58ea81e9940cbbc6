// Package cron sets flrh's cron expressions (package cron) beside
// robfig/cron v3, the most used Go cron library: a differential test over
// expressions and instants drawn at random, in UTC and in a zone without
// daylight saving (where the two mean to agree exactly), and benchmarks
// of Next side by side.
package cron

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"

	"flrh.dev/flrh/cron"
)

var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// drawField writes one field at random: *, a value, a range, a step, a
// list of those.
func drawField(r *rand.Rand, min, max int, names []string) string {
	one := func() string {
		v := func() string {
			n := min + r.IntN(max-min+1)
			if names != nil && r.IntN(3) == 0 && n-min < len(names) {
				return names[n-min]
			}
			return fmt.Sprint(n)
		}
		switch r.IntN(6) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprintf("*/%d", 1+r.IntN(max-min+1))
		case 2:
			a := min + r.IntN(max-min+1)
			b := a + r.IntN(max-a+1)
			return fmt.Sprintf("%d-%d", a, b)
		case 3:
			a := min + r.IntN(max-min+1)
			b := a + r.IntN(max-a+1)
			return fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(5))
		default:
			return v()
		}
	}
	items := []string{one()}
	for r.IntN(3) == 0 {
		items = append(items, one())
	}
	return strings.Join(items, ",")
}

func drawExpr(r *rand.Rand) string {
	f := []string{
		drawField(r, 0, 59, nil), drawField(r, 0, 59, nil), drawField(r, 0, 23, nil),
		drawField(r, 1, 31, nil), drawField(r, 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}),
		drawField(r, 0, 6, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}),
	}
	if r.IntN(2) == 0 {
		f = f[1:] // five fields
	}
	return strings.Join(f, " ")
}

func TestAgreesWithRobfig(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	fixed := time.FixedZone("UTC+05:30", 5*3600+1800)
	compared, refusedBoth, never := 0, 0, 0
	for i := 0; i < 4000; i++ {
		expr := drawExpr(r)
		ours, err := cron.Parse(expr)
		theirs, terr := parser.Parse(expr)
		if err != nil {
			if terr == nil && !strings.Contains(err.Error(), "would never fire") {
				t.Fatalf("%q: flrh refuses (%v), robfig parses", expr, err)
			}
			refusedBoth++
			continue
		}
		if terr != nil {
			t.Fatalf("%q: robfig refuses (%v), flrh parses", expr, terr)
		}
		loc := time.UTC
		if i%2 == 1 {
			loc = fixed
		}
		from := time.Date(2020, 1, 1, 0, 0, 0, 0, loc).Add(time.Duration(r.Int64N(int64(10 * 365 * 24 * time.Hour))))
		for step := 0; step < 5; step++ {
			a, b := ours.Next(from), theirs.Next(from)
			if b.IsZero() { // robfig looks five years ahead, flrh twelve
				never++
				break
			}
			if !a.Equal(b) {
				t.Fatalf("%q after %s: flrh %s, robfig %s", expr, from, a, b)
			}
			compared++
			from = a
		}
	}
	t.Logf("%d next times compared; %d expressions refused by both or never firing; %d beyond robfig's five years", compared, refusedBoth, never)
	if compared < 10000 {
		t.Fatalf("only %d compared", compared)
	}
}

func BenchmarkNext(b *testing.B) {
	from := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	// robfig's @every counts from the instant it is asked about, flrh's
	// from the epoch (decision 1975): the same work, not the same times.
	for _, expr := range []string{"*/5 * * * *", "30 9 * * MON-FRI", "0 0 29 2 *", "@every 90m"} {
		ours, _ := cron.Parse(expr)
		theirs, _ := parser.Parse(expr)
		b.Run(expr+"/flrh", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ours.Next(from)
			}
		})
		b.Run(expr+"/robfig", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				theirs.Next(from)
			}
		})
	}
}
