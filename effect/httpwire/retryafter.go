package httpwire

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// HeaderRetryAfter is the header a destination sets on a 429 or 503 (or any
// transient failure) to say how long the caller should leave it alone
// before trying again (RFC 9110, section 10.2.3).
const HeaderRetryAfter = "Retry-After"

// MaxRetryAfter bounds the wait a Retry-After header can express here. A
// longer one reads as this: no caller holds a run for more than an hour on
// a destination's word, and the bound keeps the arithmetic far from
// overflow.
const MaxRetryAfter = time.Hour

// httpDates are the three forms of an HTTP-date a recipient must accept
// (RFC 9110, section 5.6.7): the preferred IMF-fixdate, then the obsolete
// RFC 850 and asctime forms.
var httpDates = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseHTTPDate reads an HTTP-date in any of its three forms, as UTC.
func ParseHTTPDate(text string) (time.Time, error) {
	for _, layout := range httpDates {
		if t, err := time.Parse(layout, text); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("httpwire: %q is not an HTTP-date", text)
}

// ParseRetryAfter reads a Retry-After header's value: a number of seconds
// (digits only), or an HTTP-date, which is read against now, the time the
// answer was given. The caller passes the answer's own Date header as now
// when it has one, so that a destination whose clock is off from the
// caller's still means what it says. A date already past is a wait of zero;
// a wait beyond MaxRetryAfter reads as MaxRetryAfter. Anything else is an
// error: a caller ignores a header it cannot read rather than guessing.
func ParseRetryAfter(value string, now time.Time) (time.Duration, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, errors.New("httpwire: Retry-After is empty")
	}
	if isDigits(v) {
		most := int64(MaxRetryAfter / time.Second)
		var secs int64
		for i := 0; i < len(v); i++ {
			secs = secs*10 + int64(v[i]-'0')
			if secs > most {
				return MaxRetryAfter, nil
			}
		}
		return time.Duration(secs) * time.Second, nil
	}
	at, err := ParseHTTPDate(v)
	if err != nil {
		return 0, fmt.Errorf("httpwire: Retry-After %q is neither seconds nor an HTTP-date", value)
	}
	d := at.Sub(now)
	// Sub saturates rather than wrapping, so a date centuries away is
	// still merely long.
	return min(max(d, 0), MaxRetryAfter), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
