package postgres

import (
	"context"
	"strings"
	"testing"
)

// The store's sessions run prepared statements on generic plans, unless
// the DSN says otherwise.
func TestGenericPlans(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ param, want string }{
		{"", "force_generic_plan"},
		{"plan_cache_mode=auto", "auto"},
	} {
		d := dsn(t)
		if c.param != "" {
			sep := "?"
			if strings.Contains(d, "?") {
				sep = "&"
			}
			if !strings.Contains(d, "://") {
				sep = " "
			}
			d += sep + c.param
		}
		s, err := Open(ctx, d, Options{Schema: freshSchema(t)})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = s.pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&got)
		s.Close()
		if err != nil || got != c.want {
			t.Fatalf("DSN %q: plan_cache_mode %q (%v), want %q", c.param, got, err, c.want)
		}
	}
}
