package storetest

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// diskFullTicks bounds the ticks DiskFull writes before the disk must have
// filled; it grants as many approvals beforehand.
const diskFullTicks = 300

// DiskFullDisk is what a backend's test gives DiskFull: how to make the
// disk under the store small, and how to give it space again.
type DiskFullDisk struct {
	// Cut leaves the store little room. It is called once the run "r" and
	// its approvals exist, so that only ticks remain to be written.
	Cut func()
	// Free gives the store room again.
	Free func()
	// Cause, when set, says whether a commit's error is the backend's own
	// report of a full disk (SQLite's SQLITE_FULL, PostgreSQL's 53100).
	Cause func(error) bool
	// Reopen, when set, closes the store and opens it again on the same
	// database, after the run has gone on; what was committed must be
	// there and nothing else.
	Reopen func() store.Store
}

// DiskFull writes governed ticks to run "r" of s until the disk is full
// and checks that the tick that did not fit fails with CodeUnavailable
// saying the disk is full and nothing was written, that nothing of it is
// left (events, the run's head and state, its intent, trace and
// checkpoint, the approval it would consume), and that once there is room
// again the same tick commits exactly once and the run goes on.
func DiskFull(t *testing.T, s store.Store, disk DiskFullDisk) {
	t.Helper()
	ctx := context.Background()
	must(t, s.CreateRun(ctx, store.Run{ID: "r", WorkflowID: "wf", State: "S"}))
	for i := range diskFullTicks {
		body := []byte(fmt.Sprintf(`{"approval_id":"ap%d"}`, i))
		must(t, s.GrantApproval(ctx, store.Approval{ID: fmt.Sprintf("ap%d", i), RunID: "r", RequestDigest: "sha256:req",
			Nonce: fmt.Sprintf("nonce%d", i), Body: body, Digest: store.BodyDigest(body), ExpiresAt: time.Now().Add(time.Hour)}))
	}
	l, err := s.AcquireLease(ctx, "r", "w", time.Hour)
	must(t, err)
	disk.Cut()

	rng := rand.New(rand.NewPCG(1, 2))
	head := int64(0)
	for i := 0; ; i++ {
		if i == diskFullTicks {
			t.Fatalf("%d ticks fitted; the disk never filled", diskFullTicks)
		}
		tick := fullTick(head, i, rng)
		before := Snapshot(t, s, "r")
		err := s.Commit(ctx, l, tick)
		if err == nil {
			head += int64(len(tick.Events))
			continue
		}
		t.Logf("tick %d did not fit: %v", i, err)
		if store.CodeOf(err) != store.CodeUnavailable {
			t.Fatalf("a full disk gave %s, want %s: %v", store.CodeOf(err), store.CodeUnavailable, err)
		}
		if disk.Cause != nil && !disk.Cause(err) {
			t.Fatalf("the commit failed, but not for the full disk: %v", err)
		}
		if !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("the error does not say the disk is full and nothing was written: %v", err)
		}
		if i == 0 {
			t.Fatal("the first tick did not fit: the disk was cut too small to show a run going on")
		}
		if after := Snapshot(t, s, "r"); after != before {
			t.Fatalf("a tick that did not fit left a trace:\nbefore %s\nafter  %s", before, after)
		}
		ap := tick.Approvals[0].ApprovalID
		if a, err := s.Approval(ctx, ap); err != nil || a.Status != store.ApprovalGranted {
			t.Fatalf("approval %s after the failed tick: %v, %v; want it still granted", ap, a.Status, err)
		}

		// Room again: the same tick commits once, and the next one too.
		disk.Free()
		must(t, s.Commit(ctx, l, tick))
		head += int64(len(tick.Events))
		next := fullTick(head, i+1, rng)
		must(t, s.Commit(ctx, l, next))
		head += int64(len(next.Events))
		if disk.Reopen != nil {
			want := Snapshot(t, s, "r")
			s = disk.Reopen()
			if got := Snapshot(t, s, "r"); got != want {
				t.Fatalf("reopened:\n got %s\nwant %s", got, want)
			}
		}
		r, err := s.Run(ctx, "r")
		must(t, err)
		evs, err := s.Events(ctx, "r", 0)
		must(t, err)
		ins, err := s.Intents(ctx, "r")
		must(t, err)
		if r.Head != head || int64(len(evs)) != head || len(ins) != i+2 {
			t.Fatalf("after the full disk: head %d, %d events, %d intents; want %d, %d, %d", r.Head, len(evs), len(ins), head, head, i+2)
		}
		for j := 1; j < len(evs); j++ {
			if evs[j].PrevHash != evs[j-1].ChainHash {
				t.Fatalf("the hash chain breaks at event %d", evs[j].Seq)
			}
		}
		if a, err := s.Approval(ctx, ap); err != nil || a.Status != store.ApprovalConsumed {
			t.Fatalf("approval %s after the tick committed: %v, %v; want it consumed", ap, a.Status, err)
		}
		return
	}
}

// Snapshot summarises what a failed commit must leave untouched of run:
// its header, and how many events, intents, receipts, trace records,
// pending inbox entries it has, and its checkpoint's position.
func Snapshot(t testing.TB, s store.Store, run string) string {
	t.Helper()
	ctx := context.Background()
	r, err := s.Run(ctx, run)
	must(t, err)
	evs, err := s.Events(ctx, run, 0)
	must(t, err)
	ins, err := s.Intents(ctx, run)
	must(t, err)
	rcs, err := s.Receipts(ctx, run)
	must(t, err)
	tr, err := s.Trace(ctx, run)
	must(t, err)
	in, err := s.Inbox(ctx, run, true)
	must(t, err)
	cp, _ := s.Checkpoint(ctx, run)
	return fmt.Sprintf("head=%d hash=%s state=%s events=%d intents=%d receipts=%d trace=%d pending=%d cp=%d",
		r.Head, r.HeadHash, r.State, len(evs), len(ins), len(rcs), len(tr), len(in), cp.Seq)
}

// fullTick writes to every table a governed tick writes: two events, an
// intent begun in the outbox that consumes approval i, a checkpoint of
// about 6 KB that does not compress, and a trace record.
func fullTick(head int64, i int, rng *rand.Rand) store.Tick {
	ap := fmt.Sprintf("ap%d", i)
	in := In(fmt.Sprintf("i%d", i), fmt.Sprintf("key%d", i), fmt.Sprintf("refund %d", i))
	in.ApprovalID = ap
	noise := make([]byte, 3000)
	for j := range noise {
		noise[j] = byte(rng.Uint32())
	}
	cp := []byte(fmt.Sprintf(`{"n":%d,"noise":%q}`, i, hex.EncodeToString(noise)))
	return store.Tick{ExpectHead: head, State: "EXECUTE",
		Events: []store.Event{
			Ev("AUTH", fmt.Sprintf(`{"i":%d}`, i)),
			Ev("PLAN", fmt.Sprintf(`{"i":%d}`, i)),
		},
		Intents:    []store.Intent{in},
		Approvals:  []store.ApprovalUse{{ApprovalID: ap, IntentID: in.ID}},
		Begin:      []string{in.ID},
		Checkpoint: &store.Checkpoint{FormatVersion: 1, Body: cp, Digest: store.BodyDigest(cp)},
		Trace:      []store.TraceRecord{{Kind: "tick", Body: []byte(fmt.Sprintf(`{"i":%d}`, i))}},
	}
}
