package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"flrh.dev/flrh/store/postgres"
)

// Serve processes on one PostgreSQL schema are killed with SIGKILL at
// seeded random moments while runs are in flight — between a commit and
// the send it makes durable, while the destination holds a request it has
// applied and not yet answered, in the middle of a transaction, while a
// person's approval is on its way — and a new process takes each one's
// place. The survivors take the dead processes' runs over once their
// leases lapse and reconcile every attempt left in flight by asking the
// destination. Afterwards every run has succeeded with one intent and one
// receipt, the destination applied one mutation per refund, every record
// verifies, and nothing is left quarantined or leased to a live run.
// FLRH_KILL_SEED picks another campaign.
func TestServeProcessesSurviveSIGKILL(t *testing.T) {
	storeURL, st := pgStoreURL(t)
	seed := uint64(20261204)
	if s := os.Getenv("FLRH_KILL_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("kill campaign seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bin := buildFlrh(t)
	sb := startQuietSandbox(t, bin)
	// Every request waits a little before it is applied and longer before
	// it is answered: a kill often lands while a request the destination
	// applied has no answer yet.
	installFault(t, sb, `{"delay_ms":10,"delay_after_ms":150}`)
	common := []string{"--store", storeURL, "--runners", "2", "--lease-ttl", "1s", "--destination", sb + "/v1/effects", "--grace", "10s"}
	var mu sync.Mutex // guards procs, which the approver reads
	procs := []*serveProc{}
	for range 3 {
		procs = append(procs, startServe(t, bin, nil, common...))
	}
	const waves, perWave = 4, 15
	// Every fifth refund is large and waits for a person's approval; a
	// person approves it through whichever process, all the while kills
	// come and go.
	large := func(i int) bool { return i%5 == 4 }
	var largeIDs []string
	for w := range waves {
		for i := range perWave {
			if large(i) {
				largeIDs = append(largeIDs, fmt.Sprintf("k-%d-%02d", w, i))
			}
		}
	}
	stopApprover := startApprover(largeIDs, seed, func() []*serveProc { mu.Lock(); defer mu.Unlock(); return slices.Clone(procs) })
	defer stopApprover()
	killed := 0
	for w := range waves {
		// The wave's runs are started through the process about to be
		// killed, all at once, so that it holds them when it dies; a
		// start it did not answer is made again through a survivor (the
		// run may exist already: then the first start committed).
		victim := rnd.IntN(len(procs))
		survivor := procs[(victim+1+rnd.IntN(len(procs)-1))%len(procs)]
		p := procs[victim]
		var wg sync.WaitGroup
		errs := make(chan error, perWave)
		for i := range perWave {
			id, amount := fmt.Sprintf("k-%d-%02d", w, i), 10+rnd.IntN(80)
			if large(i) {
				amount = 700 + rnd.IntN(300)
			}
			wg.Go(func() {
				if postRefund(p.base, id, amount) == nil {
					return
				}
				if err := postRefund(survivor.base, id, amount); err != nil && !strings.Contains(err.Error(), "already exists") {
					errs <- err
				}
			})
		}
		// The kill lands while the victim holds a run: on a loaded
		// machine the survivors may claim every run of the wave first,
		// and a kill then takes nothing over.
		holds(t, st, p, w, perWave)
		time.Sleep(time.Duration(rnd.IntN(100)) * time.Millisecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		killed++
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		next := startServe(t, bin, nil, common...)
		mu.Lock()
		procs[victim] = next
		mu.Unlock()
	}
	runs := waves * perWave
	everyRunDone(t, st, 180*time.Second)
	if n := stopApprover(); n == 0 {
		t.Fatal("no approval was taken")
	}
	states := map[string]int{}
	attempts, takenOver := 0, 0
	for w := range waves {
		for i := range perWave {
			id := fmt.Sprintf("k-%d-%02d", w, i)
			rec := readRecord(t, st, id)
			states[rec.Run.State]++
			attempts += rec.Attempts
			if rec.Run.Lease.Generation > 1 && !large(i) { // a large run is leased again after its approval
				takenOver++
			}
			if rec.Run.State != "SUCCEEDED" || rec.Intents != 1 || rec.Receipts != 1 || rec.Run.Quarantine != "" {
				t.Errorf("%s ended %s (%q) with %d intents, %d attempts and %d receipts; want SUCCEEDED with one intent and one receipt",
					id, rec.Run.State, rec.Run.Quarantine, rec.Intents, rec.Attempts, rec.Receipts)
			}
		}
	}
	onePerRefund(t, sb, runs)
	if out, err := flrh(bin, nil, "verify", "--all", "--store", storeURL); err != nil {
		t.Fatalf("flrh verify --all after %d kills: %v\n%s", killed, err, out)
	}
	if out, err := flrh(bin, nil, "store", "check", "--store", storeURL); err != nil {
		t.Fatalf("store check after %d kills: %v\n%s", killed, err, out)
	}
	if takenOver == 0 {
		t.Fatalf("no run was taken over from a killed process in %d kills: the campaign tested nothing", killed)
	}
	t.Logf("%d processes killed; runs %v, %d attempts, %d small ones leased more than once", killed, states, attempts, takenOver)
}

// holds waits, up to 5 s, until process p holds the lease of a live run
// of wave w.
func holds(t *testing.T, st *postgres.Store, p *serveProc, w, perWave int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for i := range perWave {
			run, err := st.Run(context.Background(), fmt.Sprintf("k-%d-%02d", w, i))
			if err == nil && run.Outcome == "" && run.Lease.Owner == p.owner() && run.Lease.ExpiresAt.After(time.Now()) {
				return
			}
		}
	}
}

// startApprover approves the large refunds ids as a person would,
// through a process of procs picked at random each time, until stopped: it
// reads the run's page and approves the request it waits on, trying again
// on any failure (a process killed under it, an approval that already
// stands). The returned function stops it (once or more) and reports how
// many approvals were taken.
func startApprover(ids []string, seed uint64, procs func() []*serveProc) (stop func() int) {
	quit, taken := make(chan struct{}), make(chan int, 1)
	go func() {
		rnd := rand.New(rand.NewPCG(seed, 1))
		n := 0
		for {
			select {
			case <-quit:
				taken <- n
				return
			case <-time.After(20 * time.Millisecond):
			}
			ps := procs()
			for _, id := range ids {
				if approveWaiting(ps[rnd.IntN(len(ps))].base, id) {
					n++
				}
			}
		}
	}()
	var once sync.Once
	var n int
	return func() int {
		once.Do(func() { close(quit); n = <-taken })
		return n
	}
}

// approveWaiting approves the request run id waits on, through the
// process at base, and reports whether the approval was taken.
func approveWaiting(base, id string) bool {
	resp, err := http.Get(base + "/v1/runs/" + id)
	if err != nil {
		return false
	}
	var page struct {
		Waiting []struct {
			RequestID     string `json:"request_id"`
			RequestDigest string `json:"request_digest"`
		} `json:"waiting"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || len(page.Waiting) == 0 {
		return false
	}
	w := page.Waiting[0]
	body := fmt.Sprintf(`{"request_id":%q,"request_digest":%q}`, w.RequestID, w.RequestDigest)
	resp, err = http.Post(base+"/v1/runs/"+id+"/approve", "application/json", strings.NewReader(body))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}
