package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRateLimitOverTheCLI: flrh serve --rate-limit holds a caller (here
// the loopback's "local") to the rate, 429 with Retry-After past it;
// a rate it cannot read, or a burst without a rate, is a usage error.
func TestRateLimitOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "flrh.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate-limit", "3/fortnight"}, `--rate-limit: rate limit "3/fortnight": not COUNT/UNIT`},
		{[]string{"--rate-limit", "1/h", "--rate-burst", "48"}, "spans more than a day"},
		{[]string{"--rate-burst", "3"}, "--rate-burst needs --rate-limit"},
	} {
		out, err := flrh(bin, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--store", db}, c.args...)...)
		if exitStatus(t, err) != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("serve %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
	}
	p := startServe(t, bin, nil, "--store", db, "--rate-limit", "3/h")
	get := func() (int, string) {
		resp, err := http.Get(p.base + "/v1/runs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 3 {
		if code, _ := get(); code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	code, retry := get()
	if n, _ := strconv.Atoi(retry); code != http.StatusTooManyRequests || n < 1170 || n > 1200 {
		t.Fatalf("past 3/h: %d, Retry-After %q", code, retry)
	}
}
