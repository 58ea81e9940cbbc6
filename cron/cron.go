package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Error is an expression refused: which field and why.
type Error struct {
	Expr   string
	Field  string // "second", "minute", …; "" for the expression as a whole
	Detail string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("cron %q: %s", e.Expr, e.Detail)
	}
	return fmt.Sprintf("cron %q: the %s field: %s", e.Expr, e.Field, e.Detail)
}

// Schedule is a parsed expression: a set of values per field.
type Schedule struct {
	second, minute, hour, dom, month, dow uint64
	domStar, dowStar                      bool
	expr                                  string
	// every and phase, in seconds, are an interval's (@every): every is
	// 0 for a calendar.
	every, phase int64
}

// String is the expression as written.
func (s Schedule) String() string { return s.expr }

type field struct {
	name     string
	min, max int
	names    []string // names for min, min+1, … (months, days)
}

var (
	fSecond = field{name: "second", max: 59}
	fMinute = field{name: "minute", max: 59}
	fHour   = field{name: "hour", max: 23}
	fDom    = field{name: "day-of-month", min: 1, max: 31}
	fMonth  = field{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	fDow    = field{name: "day-of-week", max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
)

var macros = map[string]string{
	"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
	"@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *", "@hourly": "0 0 * * * *",
}

// maxExprBytes bounds an expression.
const maxExprBytes = 256

// Parse reads an expression.
func Parse(expr string) (Schedule, error) {
	bad := func(f, format string, args ...any) (Schedule, error) {
		return Schedule{}, &Error{Expr: expr, Field: f, Detail: fmt.Sprintf(format, args...)}
	}
	if len(expr) > maxExprBytes {
		return bad("", "longer than %d bytes", maxExprBytes)
	}
	text := strings.TrimSpace(expr)
	if word, rest, _ := strings.Cut(text, " "); strings.EqualFold(word, "@every") {
		every, phase, err := parseEvery(strings.TrimSpace(rest))
		if err != nil {
			return bad("", "%v", err)
		}
		return Schedule{expr: expr, every: every, phase: phase}, nil
	}
	if strings.HasPrefix(text, "@") {
		m, ok := macros[strings.ToLower(text)]
		if !ok {
			return bad("", "no macro %s (@yearly, @monthly, @weekly, @daily, @hourly, @every 15m)", text)
		}
		text = m
	}
	parts := strings.Fields(text)
	switch len(parts) {
	case 5:
		parts = append([]string{"0"}, parts...)
	case 6:
	default:
		return bad("", "%d fields; five (minute hour day-of-month month day-of-week) or six (seconds first)", len(parts))
	}
	s := Schedule{expr: expr}
	var err error
	for i, f := range []struct {
		spec field
		dst  *uint64
		star *bool
	}{{fSecond, &s.second, nil}, {fMinute, &s.minute, nil}, {fHour, &s.hour, nil}, {fDom, &s.dom, &s.domStar}, {fMonth, &s.month, nil}, {fDow, &s.dow, &s.dowStar}} {
		var star bool
		if *f.dst, star, err = parseField(parts[i], f.spec); err != nil {
			return bad(f.spec.name, "%v", err)
		}
		if f.star != nil {
			*f.star = star
		}
	}
	if s.dow&(1<<7) != 0 { // Sunday written 7
		s.dow |= 1
	}
	s.dow &^= 1 << 7
	if !s.domStar && s.dowStar && !s.someDayExists() {
		return bad("day-of-month", "no month of %s has such a day: the schedule would never fire", parts[4])
	}
	return s, nil
}

// someDayExists reports whether a restricted day of the month falls in
// one of the schedule's months (the 29th of February counts: leap years
// have it).
func (s Schedule) someDayExists() bool {
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		for d := 1; d <= days[m]; d++ {
			if s.month&(1<<m) != 0 && s.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

// parseField reads one field: its values as bits, and whether it was
// written unrestricted ("*" or "?", unstepped).
func parseField(text string, f field) (uint64, bool, error) {
	var bits uint64
	star := false
	for _, item := range strings.Split(text, ",") {
		rng, stepText, stepped := strings.Cut(item, "/")
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max-f.min+1 || stepText != strconv.Itoa(n) {
				return 0, false, fmt.Errorf("the step %q is not a number from 1 to %d", stepText, f.max-f.min+1)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*" || (rng == "?" && (f.name == fDom.name || f.name == fDow.name)):
			if step == 1 {
				star = true
			}
		case rng == "":
			return 0, false, fmt.Errorf("an empty item in %q", text)
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, false, err
			}
			hi = lo
			if isRange {
				if hi, err = value(b, f); err != nil {
					return 0, false, err
				}
				if hi < lo {
					return 0, false, fmt.Errorf("the range %s runs backwards", rng)
				}
			} else if stepped {
				hi = f.max // a/n: from a to the field's end
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, star, nil
}

// value reads one value of a field: a number in its range, or a name.
func value(text string, f field) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	n, err := strconv.Atoi(text)
	if err != nil || text != strconv.Itoa(n) {
		if f.names != nil {
			return 0, fmt.Errorf("%q is not a number from %d to %d nor a name (%s–%s)", text, f.min, f.max, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", text, f.min, f.max)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%d is outside %d–%d", n, f.min, f.max)
	}
	return n, nil
}

// searchDays bounds how far Next looks: past eight years, which the
// 29th of February on a given weekday can need (2096 to 2104 has no
// leap day).
const searchDays = 366 * 12

// Next is the first instant strictly after t at which the schedule fires,
// in t's location (wall-clock time there); the zero Time if it fires
// never within searchDays of t.
func (s Schedule) Next(t time.Time) time.Time {
	if s.every > 0 {
		return s.nextEvery(t)
	}
	loc := t.Location()
	// The wall clock of the first whole second after t.
	from := t.Truncate(time.Second).Add(time.Second)
	fy, fm, fd := from.Date()
	fh, fmin, fs := from.Clock()
	day := time.Date(fy, fm, fd, 12, 0, 0, 0, loc)
	limit := day.AddDate(0, 0, searchDays)
	for i := 0; day.Before(limit); i++ {
		y, m, d := day.Date()
		if s.month&(1<<uint(m)) == 0 {
			// A month the schedule skips: on to the first of the next.
			day = time.Date(y, m+1, 1, 12, 0, 0, 0, loc)
			continue
		}
		day = day.AddDate(0, 0, 1)
		if !s.dayMatches(m, d, time.Date(y, m, d, 12, 0, 0, 0, loc).Weekday()) {
			continue
		}
		first := y == fy && m == fm && d == fd
		for h := 0; h < 24; h++ {
			if s.hour&(1<<h) == 0 || (first && h < fh) {
				continue
			}
			for mi := 0; mi < 60; mi++ {
				if s.minute&(1<<mi) == 0 || (first && h == fh && mi < fmin) {
					continue
				}
				for se := 0; se < 60; se++ {
					if s.second&(1<<se) == 0 || (first && h == fh && mi == fmin && se < fs) {
						continue
					}
					at, ok := wall(y, m, d, h, mi, se, loc)
					if ok && !at.Before(from) {
						return at
					}
				}
			}
		}
	}
	return time.Time{}
}

// dayMatches reports whether the schedule fires on a day: its month, and
// its day of the month or of the week (either, when both are restricted).
func (s Schedule) dayMatches(m time.Month, d int, wd time.Weekday) bool {
	if s.month&(1<<uint(m)) == 0 {
		return false
	}
	domOK, dowOK := s.dom&(1<<uint(d)) != 0, s.dow&(1<<uint(wd)) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// wall is the first instant the location's clocks read the wall time,
// and false when they skip it that day (a daylight saving gap).
func wall(y int, m time.Month, d, h, mi, se int, loc *time.Location) (time.Time, bool) {
	at := time.Date(y, m, d, h, mi, se, 0, loc)
	if at.Hour() != h || at.Minute() != mi || at.Day() != d {
		return time.Time{}, false
	}
	// Clocks set back pass this wall time twice: time.Date may give
	// either; the earlier is the one that fires.
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		if e := at.Add(-back); e.Hour() == h && e.Minute() == mi && e.Second() == se && e.Day() == d {
			return e, true
		}
	}
	return at, true
}
