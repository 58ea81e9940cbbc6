package httpwire

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		value string
		want  time.Duration
		bad   bool
	}{
		{value: "0", want: 0},
		{value: "7", want: 7 * time.Second},
		{value: " 120 ", want: 2 * time.Minute},
		{value: "0007", want: 7 * time.Second},
		{value: "3600", want: time.Hour},
		{value: "3601", want: MaxRetryAfter},
		{value: "99999999999999999999999999", want: MaxRetryAfter},
		// The three forms of an HTTP-date, read against now.
		{value: "Sat, 05 Dec 2026 12:00:30 GMT", want: 30 * time.Second},
		{value: "Saturday, 05-Dec-26 12:01:00 GMT", want: time.Minute},
		{value: "Sat Dec  5 12:00:05 2026", want: 5 * time.Second},
		{value: "Sat, 05 Dec 2026 11:59:00 GMT", want: 0},             // already past
		{value: "Sat, 05 Dec 2099 12:00:00 GMT", want: MaxRetryAfter}, // far off
		{value: "Sat, 05 Dec 1900 12:00:00 GMT", want: 0},
		{value: "", bad: true},
		{value: "   ", bad: true},
		{value: "-5", bad: true},
		{value: "+5", bad: true},
		{value: "1.5", bad: true},
		{value: "5s", bad: true},
		{value: "soon", bad: true},
		{value: "2026-12-05T12:00:30Z", bad: true},
		{value: "Sat, 05 Dec 2026 12:00:30 CET", bad: true},
	} {
		got, err := ParseRetryAfter(c.value, now)
		switch {
		case c.bad && err == nil:
			t.Errorf("ParseRetryAfter(%q) = %v, want an error", c.value, got)
		case !c.bad && err != nil:
			t.Errorf("ParseRetryAfter(%q): %v", c.value, err)
		case !c.bad && got != c.want:
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", c.value, got, c.want)
		case c.bad && got != 0:
			t.Errorf("ParseRetryAfter(%q) refused with a wait %v", c.value, got)
		}
	}
}

// TestParseHTTPDateAgreesWithNetHTTP holds ParseHTTPDate to the standard
// library's reading of the three forms of an HTTP-date, spelled as RFC 9110
// spells them (in GMT; net/http also takes other zone names in the RFC 850
// form, whose offsets it looks up in the machine's local zone, which a pure
// reading must not).
func TestParseHTTPDateAgreesWithNetHTTP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.Unix(rapid.Int64Range(0, 1<<33).Draw(t, "unix"), 0).UTC()
		for _, text := range []string{at.Format(http.TimeFormat), at.Format("Monday, 02-Jan-06 15:04:05 GMT"), at.Format(time.ANSIC)} {
			want, werr := http.ParseTime(text)
			got, gerr := ParseHTTPDate(text)
			if (werr == nil) != (gerr == nil) || !got.Equal(want) {
				t.Fatalf("%q: got %v (%v), net/http %v (%v)", text, got, gerr, want, werr)
			}
		}
		// Seconds from now and the date that far off are the same wait.
		secs := rapid.Int64Range(0, 2*3600).Draw(t, "secs")
		then := at.Add(time.Duration(secs) * time.Second)
		a, err1 := ParseRetryAfter(then.Format(http.TimeFormat), at)
		b, err2 := ParseRetryAfter(strconv.FormatInt(secs, 10), at)
		if err1 != nil || err2 != nil || a != b || a != min(time.Duration(secs)*time.Second, MaxRetryAfter) {
			t.Fatalf("%d s: date %v (%v), seconds %v (%v)", secs, a, err1, b, err2)
		}
	})
}

// FuzzParseRetryAfter: any header value reads as a wait within
// [0, MaxRetryAfter] or as an error with no wait, and never panics.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "Sat, 05 Dec 2026 12:00:30 GMT", "Saturday, 05-Dec-26 12:01:00 GMT", "Sat Dec  5 12:00:05 2026", "soon", "99999999999999999999"} {
		f.Add(s, int64(1796472000))
	}
	f.Fuzz(func(t *testing.T, value string, unix int64) {
		d, err := ParseRetryAfter(value, time.Unix(unix, 0))
		if err != nil && d != 0 {
			t.Fatalf("%q: error %v with a wait %v", value, err, d)
		}
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("%q: wait %v outside [0, %v]", value, d, MaxRetryAfter)
		}
	})
}
