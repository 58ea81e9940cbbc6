package store_test

import (
	"context"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// plain is a store with no optional interfaces (its methods are never
// called here).
type plain struct{ store.Store }

// ready is a store that lists ready runs.
type ready struct {
	store.Store
	name string
}

func (r ready) Ready(context.Context, []string, time.Time) ([]string, error) {
	return []string{r.name}, nil
}

// wrapper wraps another store and says so.
type wrapper struct{ store.Store }

func (w wrapper) Unwrap() store.Store { return w.Store }

// ReadyListerOf (store.As) finds the lister on the store itself or down a chain of
// wrappers, takes the outermost one, and reports false when the chain has
// none or a link does not unwrap.
func TestReadyListerOf(t *testing.T) {
	cases := []struct {
		name string
		s    store.Store
		want string // "" when no lister is expected
	}{
		{"nil", nil, ""},
		{"plain", plain{}, ""},
		{"lister", ready{name: "a"}, "a"},
		{"wrapped lister", wrapper{ready{name: "a"}}, "a"},
		{"twice wrapped", wrapper{wrapper{ready{name: "b"}}}, "b"},
		{"wrapped plain", wrapper{plain{}}, ""},
		{"wrapper around nothing", wrapper{}, ""},
		{"lister behind a wrapper that does not unwrap", plain{ready{name: "a"}}, ""},
		{"outermost lister wins", ready{Store: wrapper{ready{name: "inner"}}, name: "outer"}, "outer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rl, ok := store.ReadyListerOf(c.s)
			if ok != (c.want != "") {
				t.Fatalf("found = %v, want %v", ok, c.want != "")
			}
			if !ok {
				return
			}
			ids, err := rl.Ready(context.Background(), nil, time.Time{})
			if err != nil || len(ids) != 1 || ids[0] != c.want {
				t.Fatalf("Ready = %v, %v; want [%s]", ids, err, c.want)
			}
		})
	}
}
