package cron_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cron"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNext(t *testing.T) {
	cases := []struct{ expr, after, want string }{
		{"* * * * *", "2026-12-07 12:00:00", "2026-12-07 12:01:00"},
		{"* * * * *", "2026-12-07 12:00:30", "2026-12-07 12:01:00"},
		{"*/15 * * * *", "2026-12-07 12:14:59", "2026-12-07 12:15:00"},
		{"0 3 * * *", "2026-12-07 03:00:00", "2026-12-08 03:00:00"},
		{"0 3 * * *", "2026-12-07 02:59:59", "2026-12-07 03:00:00"},
		{"30 9 * * MON-FRI", "2026-12-11 10:00:00", "2026-12-14 09:30:00"}, // Friday after → Monday
		{"0 0 1 * *", "2026-12-07 00:00:00", "2027-01-01 00:00:00"},
		{"0 0 29 2 *", "2026-03-01 00:00:00", "2028-02-29 00:00:00"},
		{"0 0 13 * FRI", "2026-12-07 00:00:00", "2026-12-11 00:00:00"},   // either day field: Friday the 11th first
		{"0 0 13 * *", "2026-12-07 00:00:00", "2026-12-13 00:00:00"},     // the 13th
		{"0 0 * * 7", "2026-12-07 00:00:00", "2026-12-13 00:00:00"},      // Sunday as 7
		{"0 0 ? * sun", "2026-12-07 00:00:00", "2026-12-13 00:00:00"},    // ? and a lower-case name
		{"0 0 */10 * *", "2026-12-07 00:00:00", "2026-12-11 00:00:00"},   // 1, 11, 21, 31
		{"0 0 */10 * MON", "2026-12-07 00:00:00", "2026-12-11 00:00:00"}, // stepped: restricted, so either
		{"5/20 * * * *", "2026-12-07 12:46:00", "2026-12-07 13:05:00"},   // 5, 25, 45
		{"0 0 1-3,15 jan,jul *", "2026-12-07 00:00:00", "2027-01-01 00:00:00"},
		{"*/2 * * * * *", "2026-12-07 12:00:00", "2026-12-07 12:00:02"}, // seconds first
		{"30 0 0 1 1 *", "2026-12-07 00:00:00", "2027-01-01 00:00:30"},
		{"@hourly", "2026-12-07 12:00:00", "2026-12-07 13:00:00"},
		{"@daily", "2026-12-07 12:00:00", "2026-12-08 00:00:00"},
		{"@weekly", "2026-12-07 12:00:00", "2026-12-13 00:00:00"},
		{"@monthly", "2026-12-07 12:00:00", "2027-01-01 00:00:00"},
		{"@YEARLY", "2026-12-07 12:00:00", "2027-01-01 00:00:00"},
		{"59 23 31 12 *", "2026-12-31 23:59:00", "2027-12-31 23:59:00"},
	}
	for _, c := range cases {
		s, err := cron.Parse(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := s.Next(utc(c.after)); !got.Equal(utc(c.want)) {
			t.Errorf("%s after %s: %s, want %s", c.expr, c.after, got.Format(time.DateTime), c.want)
		}
	}
	// Intervals: whole multiples of the interval since the epoch, plus
	// the offset, strictly after the instant.
	for _, c := range []struct{ expr, after, want string }{
		{"@every 15m", "2026-12-07 12:00:00", "2026-12-07 12:15:00"},
		{"@every 15m", "2026-12-07 12:14:59", "2026-12-07 12:15:00"},
		{"@every 7m", "2026-12-07 12:00:00", "2026-12-07 12:02:00"}, // 4,277,726 intervals since the epoch…
		{"@every 7m", "2026-12-07 12:02:00", "2026-12-07 12:09:00"}, // …not reset at the hour
		{"@every 90m", "2026-12-07 23:59:59", "2026-12-08 00:00:00"},
		{"@every 90m", "2026-12-08 00:00:00", "2026-12-08 01:30:00"},
		{"@every 1h offset 15m", "2026-12-07 12:15:00", "2026-12-07 13:15:00"},
		{"@every 1h offset 15m", "2026-12-07 12:14:00", "2026-12-07 12:15:00"},
		{"@EVERY 1d12h", "2026-12-07 00:00:00", "2026-12-07 12:00:00"}, // 20,794 days since the epoch: 13,862 × 36 h + 24 h
		{"@every 6h", "1969-12-31 20:00:00", "1970-01-01 00:00:00"},    // before the epoch
		{"@every 7s", "1969-12-31 23:59:50", "1969-12-31 23:59:53"},
		{"@every 1s", "2026-12-07 12:00:00", "2026-12-07 12:00:01"},
		{"  @every   366d  ", "2026-12-07 00:00:00", "2027-02-13 00:00:00"},
	} {
		s, err := cron.Parse(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := s.Next(utc(c.after)); !got.Equal(utc(c.want)) {
			t.Errorf("%s after %s: %s, want %s", c.expr, c.after, got.Format(time.DateTime), c.want)
		}
	}
	// A zone names an interval's instants but moves none of them.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	six, _ := cron.Parse("@every 6h")
	if got := six.Next(utc("2026-12-07 12:00:00").In(paris)); !got.Equal(utc("2026-12-07 18:00:00")) || got.Location() != paris {
		t.Errorf("every six hours from noon UTC, in Paris: %s", got)
	}
	// A sub-second instant: the next whole second that fires.
	s, _ := cron.Parse("* * * * * *")
	if got := s.Next(utc("2026-12-07 12:00:00").Add(400 * time.Millisecond)); !got.Equal(utc("2026-12-07 12:00:01")) {
		t.Errorf("every second after 12:00:00.4: %s", got)
	}
}

// Wall-clock time across daylight saving: a time the clocks skip does
// not fire that day; one they pass twice fires once, the first time.
func TestNextAcrossDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	lh, _ := time.LoadLocation("Australia/Lord_Howe") // clocks move by 30 minutes
	at := func(loc *time.Location, s string) time.Time {
		x, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	cases := []struct {
		loc         *time.Location
		expr, after string
		want        []string // UTC instants of the next fires, in order
	}{
		// 2026-03-08: 02:00 EST becomes 03:00 EDT; 02:30 does not exist.
		{ny, "30 2 * * *", "2026-03-07 12:00:00", []string{"2026-03-09 06:30:00", "2026-03-10 06:30:00"}},
		{ny, "0 * * * *", "2026-03-08 00:30:00", []string{"2026-03-08 06:00:00", "2026-03-08 07:00:00"}}, // 01:00 EST, then 03:00 EDT
		// 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 comes twice.
		{ny, "30 1 * * *", "2026-10-31 12:00:00", []string{"2026-11-01 05:30:00", "2026-11-02 06:30:00"}},
		{ny, "*/30 * * * *", "2026-11-01 00:45:00", []string{"2026-11-01 05:00:00", "2026-11-01 05:30:00", "2026-11-01 07:00:00"}},
		// Lord Howe, 2026-10-04: 02:00 becomes 02:30; 02:15 does not exist.
		{lh, "15 2 * * *", "2026-10-03 12:00:00", []string{"2026-10-04 15:15:00"}},
	}
	for _, c := range cases {
		s, err := cron.Parse(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		from := at(c.loc, c.after)
		for i, w := range c.want {
			got := s.Next(from)
			if !got.Equal(utc(w)) {
				t.Fatalf("%s in %s, fire %d after %s: %s (%s), want %s UTC", c.expr, c.loc, i+1, from, got.UTC().Format(time.DateTime), got, w)
			}
			if got.Location() != c.loc {
				t.Fatalf("answered in %s", got.Location())
			}
			from = got
		}
	}
	// Anywhere in the repeated hour after 01:30's first pass, the next
	// 01:30 is the next day's.
	s, _ := cron.Parse("30 1 * * *")
	secondPass := utc("2026-11-01 06:10:00").In(ny) // 01:10 EST
	if got := s.Next(secondPass); !got.Equal(utc("2026-11-02 06:30:00")) {
		t.Fatalf("from 01:10 EST: %s", got.UTC())
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct{ expr, words string }{
		{"", "0 fields"},
		{"* * * *", "4 fields"},
		{"* * * * * * *", "7 fields"},
		{"60 * * * *", "the minute field: 60 is outside 0–59"},
		{"* 24 * * *", "the hour field: 24 is outside 0–23"},
		{"* * 0 * *", "the day-of-month field: 0 is outside 1–31"},
		{"* * * 13 *", "the month field: 13 is outside 1–12"},
		{"* * * * 8", "the day-of-week field: 8 is outside 0–7"},
		{"* * * FOO *", `"FOO" is not a number from 1 to 12 nor a name (JAN–DEC)`},
		{"5-1 * * * *", "the range 5-1 runs backwards"},
		{"*/0 * * * *", `the step "0"`},
		{"*/61 * * * *", `the step "61"`},
		{"*/+5 * * * *", `the step "+5"`},
		{"1,,2 * * * *", "an empty item"},
		{"? * * * *", `"?" is not a number`},
		{"0 0 30 2 *", "no month of 2 has such a day"},
		{"0 0 31 4,6,9,11 *", "no month of 4,6,9,11 has such a day"},
		{"@yearly 5", "no macro @yearly 5"},
		{"@every", "@every takes an interval"},
		{"@every 0s", "an interval of nothing"},
		{"@every 5", `"5" is not a duration`},
		{"@every m", `"m" is not a duration`},
		{"@every 1.5h", `"1.5h" is not a duration`},
		{"@every -5m", `"-5m" is not a duration`},
		{"@every 30m1h", "largest first"},
		{"@every 1h1h", "largest first"},
		{"@every 5w", "units d, h, m and s"},
		{"@every 367d", "longer than a year"},
		{"@every 366d1s", "longer than a year"},
		{"@every 99999999999999999999s", "longer than a year"},
		{"@every 1h offset 1h", "is not shorter than the interval"},
		{"@every 1h offset", "an interval and, optionally, an offset"},
		{"@every 1h plus 5m", "an interval and, optionally, an offset"},
		{"@every 1h offset x", "@every's offset: \"x\" is not a duration"},
		{"01 * * * *", `"01" is not a number`},
		{strings.Repeat("1,", 200) + "1 * * * *", "longer than 256 bytes"},
	}
	for _, c := range cases {
		_, err := cron.Parse(c.expr)
		var ce *cron.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%q: %v; want an error saying %q", c.expr, err, c.words)
		}
	}
	// The 30th of February alongside a weekday fires on the weekday.
	if _, err := cron.Parse("0 0 30 2 MON"); err != nil {
		t.Errorf("a weekday beside an impossible date: %v", err)
	}
}

// Next against the definition, checked second by second (an oracle that
// cannot be wrong the same way): the answer fires, and no second between
// the instant and the answer does.
func TestNextAgainstEverySecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pick := func(label string, max int) string {
			switch rapid.IntRange(0, 4).Draw(t, label+"-kind") {
			case 0:
				return "*"
			case 1:
				return "*/" + itoa(rapid.IntRange(1, max+1).Draw(t, label+"-step"))
			case 2:
				a := rapid.IntRange(0, max).Draw(t, label+"-a")
				return itoa(a) + "-" + itoa(rapid.IntRange(a, max).Draw(t, label+"-b"))
			default:
				return itoa(rapid.IntRange(0, max).Draw(t, label+"-v"))
			}
		}
		expr := pick("sec", 59) + " " + pick("min", 59) + " " + pick("hour", 23) + " * * *"
		s, err := cron.Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		from := utc("2026-12-07 00:00:00").Add(time.Duration(rapid.IntRange(0, 86400*2).Draw(t, "from")) * time.Second)
		got := s.Next(from)
		if got.IsZero() || !got.After(from) || got.Sub(from) > 48*time.Hour {
			t.Fatalf("%s after %s: %s", expr, from, got)
		}
		if !matches(expr, got) {
			t.Fatalf("%s after %s: %s does not match the fields", expr, from, got)
		}
		for x := from.Add(time.Second); x.Before(got); x = x.Add(time.Second) {
			if matches(expr, x) {
				t.Fatalf("%s after %s: %s, but %s matches first", expr, from, got, x)
			}
		}
	})
}

// An interval's Next against the definition, second by second: the
// answer is the offset from a whole number of intervals since the epoch,
// and no second between the instant and the answer is.
func TestEveryAgainstEverySecond(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		every := rapid.Int64Range(1, 4000).Draw(t, "every")
		phase := rapid.Int64Range(0, every-1).Draw(t, "phase")
		expr := "@every " + strconv.FormatInt(every, 10) + "s"
		if phase > 0 || rapid.Bool().Draw(t, "written") {
			expr += " offset " + strconv.FormatInt(phase, 10) + "s"
		}
		s, err := cron.Parse(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		fires := func(x int64) bool { return ((x-phase)%every+every)%every == 0 }
		from := time.Unix(rapid.Int64Range(-1e10, 1e10).Draw(t, "from"), rapid.Int64Range(0, 999999999).Draw(t, "nanos"))
		got := s.Next(from)
		if !got.After(from) || got.Nanosecond() != 0 || !fires(got.Unix()) {
			t.Fatalf("%s after %s: %s", expr, from, got)
		}
		for x := from.Unix() + 1; x < got.Unix(); x++ {
			if fires(x) {
				t.Fatalf("%s after %s: %s, but %s fires first", expr, from, got, time.Unix(x, 0).UTC())
			}
		}
	})
}

// matches is an oracle for the three time fields of a daily expression.
func matches(expr string, x time.Time) bool {
	f := strings.Fields(expr)
	return fieldHas(f[0], x.Second(), 59) && fieldHas(f[1], x.Minute(), 59) && fieldHas(f[2], x.Hour(), 23)
}

func fieldHas(f string, v, max int) bool {
	switch {
	case f == "*":
		return true
	case strings.HasPrefix(f, "*/"):
		return v%atoi(f[2:]) == 0
	case strings.Contains(f, "-"):
		a, b, _ := strings.Cut(f, "-")
		return atoi(a) <= v && v <= atoi(b)
	}
	return atoi(f) == v
}

func itoa(n int) string { return strconv.Itoa(n) }

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 1,15 jan-mar mon-fri", "0 0 29 2 *", "@weekly", "1/7 * * * * ?", "@every 1h30m offset 45s", "@every 1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := cron.Parse(expr)
		if err != nil {
			var ce *cron.Error
			if !errors.As(err, &ce) {
				t.Fatalf("an untyped error: %v", err)
			}
			return
		}
		from := utc("2026-12-07 12:00:00")
		next := s.Next(from)
		if !next.IsZero() && !next.After(from) {
			t.Fatalf("%q: next %s is not after %s", expr, next, from)
		}
		if !next.IsZero() {
			if again := s.Next(next.Add(-time.Second)); !again.Equal(next) {
				t.Fatalf("%q: next from a second before %s is %s", expr, next, again)
			}
		}
	})
}
