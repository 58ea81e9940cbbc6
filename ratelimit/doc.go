// Package ratelimit holds each caller of the API to a rate: an agent in
// a loop that starts runs, or polls, as fast as it can is answered "try
// again in …" once it has used its share, and the others it shares a
// server with are not slowed by it.
//
// A Limit is Count requests Per unit of time, with up to Burst of them at
// once ("10/s", burst 20). A Limiter keeps, per key, one instant: the
// theoretical arrival time of the generic cell rate algorithm (GCRA), the
// instant the key's bucket would be full again. It is the token bucket
// without tokens: a request at now is allowed when the key's instant,
// moved on by one interval (Per/Count), is within Burst intervals of now.
// A key whose instant has passed has a full bucket and holds nothing a
// forgotten key would not, so the Limiter drops those as it grows: its
// memory is the callers active within a burst's span, not every caller
// ever seen.
//
// It is pure: the caller passes the instant, and serializes calls.
package ratelimit
