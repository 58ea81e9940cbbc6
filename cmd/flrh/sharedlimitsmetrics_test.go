package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/store/sqlite"
)

// The limits in use are read from the store at each scrape: slots held
// and requests waiting by every process, the bound that holds, and how
// many bounds the requests declare; nothing before the board is bound,
// and a limit no longer used is no longer shown.
func TestSharedLimitGauges(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "flrh.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	board := newSharedLimits()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sharedLimitMetrics(board)...)
	if got := gauges(t, reg); len(got) != 0 {
		t.Fatalf("an unbound board shows %v", got)
	}
	board.Bind(st)
	// Another process holds a slot under a bound of three, this one
	// under two, and a third waits declaring four.
	for _, take := range []struct {
		max    int
		holder string
		queue  time.Duration
	}{{3, "other:1", 0}, {2, "this:1", 0}, {4, "third:1", time.Minute}} {
		if _, _, err := st.TakeSlot(ctx, "payments", take.max, take.holder, time.Hour, take.queue); err != nil {
			t.Fatal(err)
		}
	}
	got := gauges(t, reg)
	want := map[string]float64{"flrh_shared_limit_bound": 2, "flrh_shared_limit_bounds_declared": 3,
		"flrh_shared_limit_slots_held": 2, "flrh_shared_limit_waiting": 1}
	if len(got) != len(want) {
		t.Fatalf("gauges %v, want %v", got, want)
	}
	for name, v := range want {
		if got[name+`{limit="payments"}`] != v {
			t.Errorf("%s: %v, want %v (all: %v)", name, got[name+`{limit="payments"}`], v, got)
		}
	}
	for slot, holder := range []string{"other:1", "this:1"} {
		if err := st.GiveSlot(ctx, "payments", slot, holder); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.LeaveQueue(ctx, "payments", "third:1"); err != nil {
		t.Fatal(err)
	}
	if got := gauges(t, reg); len(got) != 0 {
		t.Fatalf("a limit no longer used shows %v", got)
	}
}

// gauges gathers reg's gauges, each series as name{label="value"}.
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if m.GetGauge() == nil {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}
