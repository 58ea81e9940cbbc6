package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// An interval (@every 90m, @every 1h offset 15m) fires at every instant
// a whole number of intervals after the Unix epoch, moved on by the
// offset: every server reading it finds the same instants, with no
// record of when it was first read. An interval dividing a day fires at
// the same UTC clock times each day (@every 6h: 00:00, 06:00, 12:00 and
// 18:00 UTC); the time zone names its wall-clock times but moves none.

// maxEvery bounds an interval and its offset: a year, as a calendar's
// search does.
const maxEvery = 366 * 86400

// parseEvery reads what follows @every: DURATION [offset DURATION].
func parseEvery(text string) (every, phase int64, err error) {
	parts := strings.Fields(text)
	switch {
	case len(parts) == 1:
	case len(parts) == 3 && strings.EqualFold(parts[1], "offset"):
		if phase, err = parseSeconds(parts[2]); err != nil {
			return 0, 0, fmt.Errorf("@every's offset: %v", err)
		}
	default:
		return 0, 0, errors.New("@every takes an interval and, optionally, an offset: @every 90m, @every 1h offset 15m")
	}
	if every, err = parseSeconds(parts[0]); err != nil {
		return 0, 0, fmt.Errorf("@every: %v", err)
	}
	if every == 0 {
		return 0, 0, errors.New("@every: an interval of nothing would fire without end")
	}
	if phase >= every {
		return 0, 0, fmt.Errorf("@every's offset, %s, is not shorter than the interval, %s", parts[2], parts[0])
	}
	return every, phase, nil
}

// parseSeconds reads a duration written in whole days, hours, minutes
// and seconds, each unit at most once and largest first (1d12h, 90m,
// 45s), up to a year.
func parseSeconds(text string) (int64, error) {
	if text == "" {
		return 0, errors.New("no duration: write one as 90m, 1h30m, 2d or 45s")
	}
	units := []struct {
		letter byte
		secs   int64
	}{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}
	var total int64
	rest, next := text, 0
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, fmt.Errorf("%q is not a duration: whole numbers each followed by d, h, m or s (1h30m)", text)
		}
		u := next
		for u < len(units) && units[u].letter != rest[i] {
			u++
		}
		if u == len(units) {
			return 0, fmt.Errorf("%q is not a duration: units d, h, m and s, each once, largest first", text)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > maxEvery {
			return 0, fmt.Errorf("%q is longer than a year", text)
		}
		if total += n * units[u].secs; total > maxEvery {
			return 0, fmt.Errorf("%q is longer than a year", text)
		}
		rest, next = rest[i+1:], u+1
	}
	return total, nil
}

// nextEvery is the first instant strictly after t that is a whole number
// of intervals after the epoch plus the offset, in t's location.
func (s Schedule) nextEvery(t time.Time) time.Time {
	// t.Unix() rounds down, so the instant found, a whole second after
	// the last one at or before t's second, is after t.
	n := t.Unix() - s.phase
	q := n / s.every
	if n%s.every < 0 {
		q-- // division rounding towards zero, for instants before the epoch
	}
	return time.Unix((q+1)*s.every+s.phase, 0).In(t.Location())
}
