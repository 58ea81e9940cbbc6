package httpadapter_test

import (
	"net/http"
	"testing"
	"time"

	"flrh.dev/flrh/effect"
	"flrh.dev/flrh/effect/httpwire"
	"flrh.dev/flrh/effect/internal/fixture"
	"flrh.dev/flrh/effect/sandbox"
)

// A destination's Retry-After reaches the receipt of a transient failure,
// read as seconds or as a date against the answer's own Date header, and
// nothing else: a success, a permanent failure or an unknown outcome asks
// no wait, and a header the adapter cannot read is no wait.
func TestRetryAfterReachesATransientReceipt(t *testing.T) {
	in := fixture.Intent("effect:ra", payload)
	d := digestOf(t, in)
	// The destination's clock is a day behind this machine's: only its
	// own Date makes its HTTP-date mean 90 seconds.
	destNow := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		date       string
		want       effect.Outcome
		wait       time.Duration
	}{
		{"429 with seconds", 429, "7", "", effect.FailedTransient, 7 * time.Second},
		{"503 with seconds", 503, "120", "", effect.FailedTransient, 2 * time.Minute},
		{"503 with a date on the destination's clock", 503, destNow.Add(90 * time.Second).Format(http.TimeFormat), destNow.Format(http.TimeFormat), effect.FailedTransient, 90 * time.Second},
		{"429 asking more than an hour", 429, "86400", "", effect.FailedTransient, httpwire.MaxRetryAfter},
		{"429 with a date already past", 429, destNow.Add(-time.Minute).Format(http.TimeFormat), destNow.Format(http.TimeFormat), effect.FailedTransient, 0},
		{"429 with an unreadable header", 429, "in a while", "", effect.FailedTransient, 0},
		{"429 with no header", 429, "", "", effect.FailedTransient, 0},
		{"400 with seconds", 400, "7", "", effect.FailedPermanent, 0},
		{"untyped 409 with seconds", 409, "7", "", effect.Unknown, 0},
		{"201 with seconds", 201, "7", "", effect.Succeeded, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := stub(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				if tc.date != "" {
					w.Header().Set("Date", tc.date)
				}
				w.WriteHeader(tc.status)
				if tc.status/100 == 2 {
					w.Write(httpwire.Result{IdempotencyKey: "effect:ra", ContentDigest: d, Sequence: 1}.Encode())
				}
			})
			r := execute(t, newAdapter(t, url, 5*time.Second), in)
			// A seconds value is read against nothing; a date is read
			// against the answer's Date, so both are exact.
			if r.Outcome != tc.want || r.RetryAfter != tc.wait {
				t.Fatalf("%v (%s), wait %v; want %v, wait %v", r.Outcome, r.Code, r.RetryAfter, tc.want, tc.wait)
			}
		})
	}
}

// The sandbox asks for a wait as a rate-limited service does, over HTTP
// and in process alike.
func TestSandboxRetryAfter(t *testing.T) {
	s := startSandbox(t)
	over := newAdapter(t, s.EffectsURL, 5*time.Second)
	inProcess := s.Sandbox.Adapter()
	for name, a := range map[string]effect.Adapter{"http": over, "in process": inProcess} {
		key := "effect:limited-" + map[string]string{"http": "h", "in process": "p"}[name]
		if err := s.Inject(sandbox.Fault{Key: key, Times: 1, Status: 429, RetryAfterSeconds: 3}); err != nil {
			t.Fatal(err)
		}
		in := fixture.Intent(key, payload)
		r, err := a.Execute(t.Context(), in)
		if err != nil || r.Outcome != effect.FailedTransient || r.Code != httpwire.CodeInjected || r.RetryAfter != 3*time.Second {
			t.Fatalf("%s: %+v, %v", name, r, err)
		}
		// The rule is used up: the retry applies and asks nothing.
		if r, err := a.Execute(t.Context(), in); err != nil || r.Outcome != effect.Succeeded || r.RetryAfter != 0 {
			t.Fatalf("%s: retry %+v, %v", name, r, err)
		}
	}
}
