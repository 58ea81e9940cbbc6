package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit is Count requests Per unit of time on average, Burst at once. The
// zero Limit holds nothing back.
type Limit struct {
	Count int
	Per   time.Duration
	Burst int
}

// Bounds of a limit: a rate of at most a million requests a unit, a burst
// of at most a million, and a burst spanning at most a day (an interval
// times the burst), which keeps the arithmetic far from overflow.
const (
	maxCount = 1_000_000
	maxBurst = 1_000_000
	maxSpan  = 24 * time.Hour
)

// Error is a limit refused: the text and why.
type Error struct {
	Text   string
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("rate limit %q: %s", e.Text, e.Detail) }

var units = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// Parse reads a rate, "COUNT/UNIT" with the unit s, m or h ("10/s",
// "600/m"), and takes burst as its burst; burst 0 is the rate's count
// (600/m: up to 600 at once).
func Parse(text string, burst int) (Limit, error) {
	bad := func(format string, args ...any) (Limit, error) {
		return Limit{}, &Error{Text: text, Detail: fmt.Sprintf(format, args...)}
	}
	count, unit, ok := strings.Cut(text, "/")
	per, known := units[unit]
	if !ok || !known {
		return bad("not COUNT/UNIT with the unit s, m or h (10/s, 600/m)")
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > maxCount || count[0] == '+' || count[0] == '0' {
		return bad("the count is a whole number from 1 to %d", maxCount)
	}
	if burst == 0 {
		burst = n
	}
	l := Limit{Count: n, Per: per, Burst: burst}
	if err := l.check(); err != nil {
		return bad("%s", err.Detail)
	}
	return l, nil
}

// check reports what is wrong with a limit, or nil.
func (l Limit) check() *Error {
	switch {
	case l.Count < 1 || l.Count > maxCount || l.Per < time.Second || l.Per > time.Hour:
		return &Error{Text: l.String(), Detail: fmt.Sprintf("the count is a whole number from 1 to %d, a second, a minute or an hour", maxCount)}
	case l.Burst < 1 || l.Burst > maxBurst:
		return &Error{Text: l.String(), Detail: fmt.Sprintf("the burst is a whole number from 1 to %d", maxBurst)}
	case l.interval()*time.Duration(l.Burst) > maxSpan:
		return &Error{Text: l.String(), Detail: fmt.Sprintf("a burst of %d at this rate spans more than a day: a smaller burst, or a faster rate", l.Burst)}
	}
	return nil
}

// Check reports whether l is a limit Parse could have made: a Limit built
// by hand (a configuration's) is checked before a Limiter takes it.
func (l Limit) Check() error {
	if err := l.check(); err != nil {
		return err
	}
	return nil
}

// Faster reports whether l allows more requests than o: more a second,
// or as many with a larger burst.
func (l Limit) Faster(o Limit) bool {
	x, y := int64(l.Count)*int64(o.Per), int64(o.Count)*int64(l.Per)
	return x > y || (x == y && l.Burst > o.Burst)
}

// interval is the time one request uses up: Per/Count, in whole
// nanoseconds.
func (l Limit) interval() time.Duration { return l.Per / time.Duration(l.Count) }

// String writes the limit as Parse reads it, with its burst: "10/s (burst
// 20)"; "none" for the zero Limit.
func (l Limit) String() string {
	if l.Count == 0 {
		return "none"
	}
	unit := "s"
	switch l.Per {
	case time.Minute:
		unit = "m"
	case time.Hour:
		unit = "h"
	}
	return fmt.Sprintf("%d/%s (burst %d)", l.Count, unit, l.Burst)
}

// Limiter holds keys to their limits. The zero Limiter is ready; it is
// not safe for concurrent use.
type Limiter struct {
	// tat is each key's theoretical arrival time, in Unix nanoseconds:
	// the instant its bucket is full again.
	tat map[string]int64
	// sweepAt is the size at which the next Take drops full buckets.
	sweepAt int
}

// minSweep is the fewest keys a Limiter holds before it sweeps.
const minSweep = 1024

// Take spends one request of key's under lim at now. It reports whether
// the request is allowed and, when not, how long until one would be. A
// refused request spends nothing: a caller retrying too early is not
// pushed further back. The zero Limit allows everything.
func (l *Limiter) Take(key string, lim Limit, now time.Time) (bool, time.Duration) {
	if lim.Count == 0 {
		return true, 0
	}
	t := now.UnixNano()
	if l.tat == nil {
		l.tat = map[string]int64{}
	}
	span := int64(lim.interval()) * int64(lim.Burst)
	tat, seen := l.tat[key]
	switch {
	case !seen || tat < t:
		tat = t
	case tat > t+span:
		// The key's limit changed to a faster rate or a smaller burst
		// (a token file reloaded): its bucket is empty under the new
		// limit, not as far behind as the old one put it, from now on.
		tat = t + span
		l.tat[key] = tat
	}
	next := tat + int64(lim.interval())
	if over := next - t - span; over > 0 {
		return false, time.Duration(over)
	}
	if !seen {
		l.sweep(t)
	}
	l.tat[key] = next
	return true, 0
}

// sweep drops the keys whose buckets are full at t, once the Limiter has
// grown to twice what the last sweep left (and at least minSweep): a
// key's memory is kept while it matters, and sweeping costs, over many
// Takes, a constant each.
func (l *Limiter) sweep(t int64) {
	if len(l.tat) < max(l.sweepAt, minSweep) {
		return
	}
	for k, tat := range l.tat {
		if tat <= t {
			delete(l.tat, k)
		}
	}
	l.sweepAt = 2 * len(l.tat)
}

// Len is how many keys the Limiter holds.
func (l *Limiter) Len() int { return len(l.tat) }
