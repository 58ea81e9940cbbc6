package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store/sqlite"
)

// SIGTERM while a refund is on its way to the destination, on the
// embedded store: the process stops taking work but lets the send
// finish within --grace, records its receipt, and exits 0 with the run
// SUCCEEDED — the send is not cut short into an outcome nobody knows.
func TestServeDrainsASendInFlightOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	// The destination takes a while before it applies the request; the
	// rule is spent, and no longer listed, once the request has arrived.
	installFault(t, sb, `{"times":1,"delay_ms":3000}`) // long enough that SIGTERM lands within it on a loaded machine
	db := filepath.Join(t.TempDir(), "flrh.db")
	p := startServe(t, bin, nil, "--store", "sqlite:"+db, "--destination", sb+"/v1/effects", "--grace", "20s")
	started := make(chan error, 1)
	go func() { started <- postRefund(p.base, "drain-1", 42) }()
	// Wait until the request has reached the destination, then stop.
	eventually(t, "the refund's request at the destination", 20*time.Second, func() bool {
		r, err := http.Get(sb + "/_sandbox/faults")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode == http.StatusOK && !strings.Contains(string(b), "delay_ms")
	})
	if n := len(mutations(t, sb)); n != 0 {
		t.Fatalf("%d mutations before the delay ran out", n)
	}
	stopServe(t, p)
	<-started
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.Run(context.Background(), "drain-1")
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := st.Receipts(context.Background(), "drain-1")
	if err != nil {
		t.Fatal(err)
	}
	if run.State != "SUCCEEDED" || len(rcs) != 1 || rcs[0].Outcome != "confirmed_success" || len(mutations(t, sb)) != 1 {
		t.Fatalf("after SIGTERM mid-send the run is %s with receipts %+v and %d mutations; want SUCCEEDED, one confirmed success, one mutation\n%s",
			run.State, rcs, len(mutations(t, sb)), p.stderr)
	}
}
