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
package cron
