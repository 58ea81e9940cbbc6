// Package cron reads cron expressions and finds when they next fire: the
// calendar of a schedule that starts runs (flrh serve --schedules).
//
// It is pure: Parse takes the expression's text, Schedule.Next an instant
// and answers in the instant's own location, which the caller loads.
//
// An expression is five fields, minute hour day-of-month month
// day-of-week, or six with seconds first; or a macro: @yearly
// (@annually), @monthly, @weekly, @daily (@midnight), @hourly. A field is
// a list of "*", a value, a range a-b, each optionally stepped (/n; a/n
// runs from a to the field's end), "?" being "*" in the day fields.
// Months and days of the week may be named (JAN–DEC, SUN–SAT); Sunday is
// 0 or 7. As in Vixie cron (and robfig/cron), when both day fields are
// restricted a day matching either fires; a day field written "*" or "?"
// (unstepped) leaves the other alone to decide.
//
// Daylight saving time: the schedule is in wall-clock time. A wall time
// the clocks skip that day does not fire; a wall time they pass twice
// fires once, the first time. An expression that can never fire (the
// 30th of February) is refused by Parse.
//
// An interval, "@every 90m" or "@every 1h offset 15m", is what a
// calendar cannot say (every seven minutes without a jump at the hour,
// every 36 hours): it fires at every whole number of intervals after the
// Unix epoch, plus the offset, so that every server reading it agrees
// when it fires without any record of when it was first read. Durations
// are whole days, hours, minutes and seconds, largest first (1d12h,
// 90m, 45s), from a second to a year; the offset is shorter than the
// interval. Days are 24 hours: an interval is not wall-clock time, and
// daylight saving moves none of its instants.
package cron
