package notify

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	secret, other := []byte("0123456789abcdef-secret"), []byte("0123456789abcdef-other")
	body := []byte(`{"id":"r/1/0/run_ended"}`)
	now := time.Unix(1_800_000_000, 0)
	good := Sign(secret, body, now.Unix())
	for _, tc := range []struct {
		name, header string
		body         []byte
		ok           bool
	}{
		{"signed now", good, body, true},
		{"signed 4 minutes ago", Sign(secret, body, now.Unix()-240), body, true},
		{"signed 4 minutes ahead", Sign(secret, body, now.Unix()+240), body, true},
		{"a second secret's signature beside", good + ",v1=" + strings.Repeat("00", 32), body, true},
		{"spaces after commas", strings.ReplaceAll(good, ",", ", "), body, true},
		{"body changed", good, []byte(`{"id":"r/1/0/run_ended "}`), false},
		{"another secret", Sign(other, body, now.Unix()), body, false},
		{"too old", Sign(secret, body, now.Unix()-301), body, false},
		{"too far ahead", Sign(secret, body, now.Unix()+301), body, false},
		{"time changed", strings.Replace(good, "t=1800000000", "t=1800000001", 1), body, false},
		{"no time", good[strings.Index(good, ",")+1:], body, false},
		{"no signature", "t=1800000000", body, false},
		{"two times", "t=1800000000," + good, body, false},
		{"short signature", "t=1800000000,v1=abcd", body, false},
		{"not hex", "t=1800000000,v1=" + strings.Repeat("zz", 32), body, false},
		{"not key=value", good + ",junk", body, false},
		{"empty", "", body, false},
	} {
		err := Verify(secret, tc.body, tc.header, now, 5*time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Verify = %v, want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v does not wrap ErrSignature", tc.name, err)
		}
	}
}

// Verify never panics, accepts what Sign signs, and accepts nothing for a
// body but a header carrying that body's signature.
func FuzzVerify(f *testing.F) {
	secret := []byte("0123456789abcdef")
	f.Add([]byte(`{}`), "t=100,v1="+strings.Repeat("ab", 32), int64(100))
	f.Add([]byte(`{"a":1}`), Sign(secret, []byte(`{"a":1}`), 100), int64(100))
	f.Add([]byte(``), "t=,v1=", int64(0))
	f.Fuzz(func(t *testing.T, body []byte, header string, at int64) {
		now := time.Unix(at, 0)
		if at > -1<<40 && at < 1<<40 {
			if err := Verify(secret, body, Sign(secret, body, at), now, time.Minute); err != nil {
				t.Fatalf("a fresh signature refused: %v", err)
			}
		}
		if Verify(secret, body, header, now, time.Minute) == nil {
			// Accepted: the header names a time, and the body's signature
			// at that time is among its values.
			signed := false
			for _, part := range strings.Split(header, ",") {
				if k, v, _ := strings.Cut(strings.TrimSpace(part), "="); k == "t" {
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("accepted %q with the time %q", header, v)
					}
					want := Sign(secret, body, n)
					signed = strings.Contains(strings.ToLower(header), want[strings.Index(want, "v1="):])
				}
			}
			if !signed {
				t.Fatalf("accepted %q, which does not carry the body's signature", header)
			}
		}
	})
}
