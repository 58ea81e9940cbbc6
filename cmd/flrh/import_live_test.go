package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/effect/sandbox"
	"flrh.dev/flrh/internal/refundruns"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
)

func TestImportLiveRunsIntoSQLite(t *testing.T) {
	a, b := twoSQLiteSpecs(t)
	testImportLive(t, a, b)
}

func TestImportLiveRunsIntoPostgres(t *testing.T) {
	to, taken := twoPostgresSpecs(t, "flrh_move_", "move live runs into PostgreSQL")
	testImportLive(t, to, taken)
}

// flrh store import --ended --live, through the binary, moves every run of
// an embedded store into another store whole: ended runs as they are, and
// live ones (one waiting for an approval, one waiting for a person to say
// what became of a payment whose answer was lost) fenced out of the old
// store first. They read back alike, verify and replay in the new store,
// and go on there to their end, the payment made once. A run an old
// runner holds is left until it lets go; a run the new store refuses is
// let back into the old one; a run moved is not moved to a second store.
func testImportLive(t *testing.T, to, taken string) {
	bin := buildFlrh(t)
	ctx := context.Background()
	from := "sqlite:" + filepath.Join(t.TempDir(), "from.db")
	recordRuns(t, from, true, 800, 30)
	src, err := openStore(ctx, from, false)
	if err != nil {
		t.Fatal(err)
	}
	lost := refundruns.Lost(t, src, "")
	// A runner of the old store still holds the run waiting for approval.
	held, err := src.AcquireLease(ctx, "agent-0", "old-runner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	for _, spec := range []string{to, taken} {
		if out, err := flrh(bin, nil, "store", "migrate", "--store", spec); err != nil {
			t.Fatalf("migrate %s: %v\n%s", spec, err, out)
		}
	}
	// The other store holds a run of its own under the lost run's id.
	tk, err := openStore(ctx, taken, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.CreateRun(ctx, store.Run{ID: lost, WorkflowID: "other", WorkflowVersion: "1", State: "CREATED"}); err != nil {
		t.Fatal(err)
	}
	tk.Close()

	imp := func(spec string, flags ...string) (importReport, int) {
		t.Helper()
		out, err := flrh(bin, nil, append([]string{"store", "import", "--from", from, "--store", spec, "--json"}, flags...)...)
		code := exitStatus(t, err)
		var rep importReport
		if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
			t.Fatalf("import %v: exit %d, %q: %v", flags, code, out, jerr)
		}
		return rep, code
	}
	leftFor := func(rep importReport) map[string]string {
		m := map[string]string{}
		for _, l := range rep.Left {
			m[l.RunID] = l.Reason
		}
		return m
	}
	all := []string{"small", "large", "agent-0", "agent-1", lost}
	ended := "small,large,agent-1"

	// A store that is not there is named, and not made.
	missing := filepath.Join(t.TempDir(), "typo.db")
	if out, err := flrh(bin, nil, "store", "import", "--live", "--from", "sqlite:"+missing, "--store", to); exitStatus(t, err) != exitUsage || !strings.Contains(out, "no store at "+missing) {
		t.Fatalf("import --live from a store that is not there: %v\n%s", err, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("import --live made the store it was to move from: %v", err)
	}

	// Without --ended and --live nothing but pruned runs moves.
	rep, code := imp(to)
	if left := leftFor(rep); code != 1 || len(left) != 5 || !strings.Contains(left["small"], "--ended moves it whole") ||
		!strings.Contains(left["agent-0"], "--live moves it") || len(rep.Ended)+len(rep.Live)+len(rep.Imported) != 0 {
		t.Fatalf("import without --ended and --live: exit %d, %+v", code, rep)
	}

	// A dry run says what would move, and writes nothing.
	rep, code = imp(taken, "--ended", "--live", "--dry-run")
	if left := leftFor(rep); code != 1 || !rep.DryRun || strings.Join(rep.Ended, ",") != ended || len(rep.Live) != 0 || len(left) != 2 ||
		!strings.Contains(left["agent-0"], "old-runner") || !strings.Contains(left[lost], "holds another run of this id") {
		t.Fatalf("dry run into the store holding the lost run's id: exit %d, %+v", code, rep)
	}
	if tk, err := openStore(ctx, taken, true); err != nil {
		t.Fatal(err)
	} else if got := listedIDs(t, tk); strings.Join(got, ",") != lost {
		t.Fatalf("a dry run wrote runs: %v", got)
	} else {
		tk.Close()
	}

	// Into the other store: the ended runs move; the held run is left,
	// and so is the lost run, refused there and let back into the old
	// store as it was.
	rep, code = imp(taken, "--ended", "--live")
	left := leftFor(rep)
	if code != 1 || strings.Join(rep.Ended, ",") != ended || len(rep.Live) != 0 || len(left) != 2 ||
		!strings.Contains(left["agent-0"], "old-runner") || !strings.Contains(left[lost], "stays in the other store") {
		t.Fatalf("import into the store holding the lost run's id: exit %d, %+v", code, rep)
	}
	src, err = openStore(ctx, from, false)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, id := range []string{"agent-0", lost} {
		r, err := src.Run(ctx, id)
		if err != nil || r.Quarantine != "" {
			t.Fatalf("run %s, left, reads %+v, %v in the old store", id, r, err)
		}
	}
	before := map[string]store.WholeRun{}
	for _, id := range all {
		before[id] = wholeRun(t, src, id)
	}

	// The old runner lets go: everything moves.
	if err := src.ReleaseLease(ctx, held); err != nil {
		t.Fatal(err)
	}
	released := map[string]store.WholeRun{}
	for _, id := range all {
		released[id] = wholeRun(t, src, id)
	}
	rep, code = imp(to, "--ended", "--live", "--dry-run")
	if code != 0 || strings.Join(rep.Ended, ",") != ended || strings.Join(rep.Live, ",") != "agent-0,"+lost || len(rep.Already)+len(rep.Left) != 0 {
		t.Fatalf("dry run: exit %d, %+v", code, rep)
	}
	for _, id := range all {
		if w := wholeRun(t, src, id); !reflect.DeepEqual(w, released[id]) {
			t.Fatalf("a dry run changed run %s in the old store", id)
		}
	}
	rep, code = imp(to, "--ended", "--live")
	if code != 0 || strings.Join(rep.Ended, ",") != ended || strings.Join(rep.Live, ",") != "agent-0,"+lost || len(rep.Already)+len(rep.Left) != 0 {
		t.Fatalf("import: exit %d, %+v", code, rep)
	}
	rep, code = imp(to, "--ended", "--live")
	if code != 0 || len(rep.Already) != 5 || len(rep.Ended)+len(rep.Live)+len(rep.Left) != 0 {
		t.Fatalf("import again: exit %d, %+v", code, rep)
	}
	rep, _ = imp(taken, "--ended", "--live")
	if left := leftFor(rep); !strings.Contains(left["agent-0"], "moved to "+storeDescription(to)+" already") || len(rep.Live) != 0 {
		t.Fatalf("the moved runs into a second store: %+v", rep)
	}

	// The old store keeps them fenced out.
	for _, id := range []string{"agent-0", lost} {
		r, err := src.Run(ctx, id)
		if where, prev, moved := store.MovedFrom(r.Quarantine); err != nil || !moved || where != storeDescription(to) || prev != "" {
			t.Fatalf("run %s in the old store: %+v, %v", id, r, err)
		}
		if _, err := src.AcquireLease(ctx, id, "old-runner", time.Minute); err == nil {
			t.Fatalf("a runner of the old store took up %s after it moved", id)
		}
	}
	// flrh store check on the old store lists them moved, not as
	// problems: the payment whose answer was lost is the new store's to
	// settle.
	out, err := flrh(bin, nil, "store", "check", "--store", from, "--json")
	var chk storeReport
	if err != nil || json.Unmarshal([]byte(out), &chk) != nil {
		t.Fatalf("store check on the old store: %v\n%s", err, out)
	}
	if chk.Problems != 0 || len(chk.Quarantined) != 0 || len(chk.Moved) != 2 || chk.Moved[1] != (movedRun{RunID: lost, To: storeDescription(to)}) ||
		len(chk.OpenOutbox) != 1 || !chk.OpenOutbox[0].RunMoved {
		t.Fatalf("store check on the old store:\n%s", out)
	}
	if out, _ := flrh(bin, nil, "store", "check", "--store", from); !strings.Contains(out, "runs moved to another store: 2") {
		t.Fatalf("store check on the old store:\n%s", out)
	}

	dst, err := openStore(ctx, to, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for _, id := range all {
		want, got := storetest.NilEmpty(before[id]), storetest.NilEmpty(wholeRun(t, dst, id))
		want.Record.Run.Lease = store.Lease{RunID: id, Generation: want.Record.Run.Lease.Generation}
		got.Record.Run.UpdatedAt = want.Record.Run.UpdatedAt // the fence moved it
		if !reflect.DeepEqual(got, want) {
			t.Errorf("run %s reads otherwise in the new store:\n got %+v\nwant %+v", id, got.Record.Run, want.Record.Run)
		}
	}
	verified := func() {
		t.Helper()
		out, err := flrh(bin, nil, "verify", "--all", "--store", to)
		if err != nil || strings.Count(out, ": verified") != len(all) {
			t.Fatalf("verify --all in the new store: %v\n%s", err, out)
		}
	}
	verified()
	if out, err := flrh(bin, nil, "replay", "--store", to, "agent-0", lost); err != nil || strings.Count(out, ": identical") != 2 {
		t.Fatalf("replay in the new store: %v\n%s", err, out)
	}

	// The moved runs go on in the new store to their end: the approval
	// granted, the lost payment confirmed, the waiting refund paid once.
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	for _, id := range []string{"agent-0", lost} {
		if r := refundruns.Finish(t, dst, id, sb.Adapter()); r.Outcome == "" {
			t.Fatalf("run %s did not end in the new store: %+v", id, r)
		}
	}
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("the destination saw %d payments, want the waiting refund's one", n)
	}
	verified()
}

func listedIDs(t *testing.T, st store.Store) []string {
	t.Helper()
	runs, err := st.Runs(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func wholeRun(t *testing.T, st store.Store, id string) store.WholeRun {
	t.Helper()
	w, err := readWhole(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// flrh store import --live killed (SIGKILL) with a run fenced out of the
// old store and not yet in the new one, then, the new store named another
// way, with a run written into the new one: each run is in exactly one
// store that may run it, and the next import finishes the move, even after
// the moved run went on in the new store.
func TestImportLiveCrashes(t *testing.T) {
	bin := buildFlrh(t)
	ctx := context.Background()
	from := "sqlite:" + filepath.Join(t.TempDir(), "from.db")
	to := "sqlite:" + filepath.Join(t.TempDir(), "to.db")
	recordRuns(t, from, false, 800)
	src, err := openStore(ctx, from, false)
	if err != nil {
		t.Fatal(err)
	}
	lost := refundruns.Lost(t, src, "")
	src.Close()
	// The new store named another way: through a link to its directory,
	// as a plain path. An import taken up again so still finishes the move.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Dir(strings.TrimPrefix(to, "sqlite:")), link); err != nil {
		t.Fatal(err)
	}
	toLinked := filepath.Join(link, "to.db")
	importKilledAt := func(point, to string) {
		t.Helper()
		out, err := flrh(bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + point}, "store", "import", "--live", "--from", from, "--store", to)
		if exitStatus(t, err) != -1 || !strings.Contains(out, "SIGKILL at "+point) {
			t.Fatalf("import killed at %s: %v\n%s", point, err, out)
		}
	}
	// where tells, for run id, whether the old store may run it (not
	// fenced out) and whether the new one holds it.
	where := func(id string) (old, moved bool) {
		t.Helper()
		s, err := openStore(ctx, from, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		_, _, fenced := store.MovedFrom(r.Quarantine)
		d, err := openStore(ctx, to, false)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		_, err = d.Run(ctx, id)
		if err != nil && store.CodeOf(err) != store.CodeNotFound {
			t.Fatal(err)
		}
		return !fenced, err == nil
	}

	importKilledAt("import-fenced", to)
	if old, moved := where("agent-0"); old || moved {
		t.Fatalf("killed fenced: agent-0 runs in the old store %v, is in the new %v; want neither", old, moved)
	}
	importKilledAt("import-written", toLinked)
	if old, moved := where("agent-0"); old || !moved {
		t.Fatalf("killed written: agent-0 runs in the old store %v, is in the new %v; want the new only", old, moved)
	}
	if old, moved := where(lost); !old || moved {
		t.Fatalf("killed written: %s runs in the old store %v, is in the new %v; want the old only", lost, old, moved)
	}

	// The moved run goes on in the new store before the move is finished.
	dst, err := openStore(ctx, to, false)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if r := refundruns.Finish(t, dst, "agent-0", sb.Adapter()); r.Outcome == "" {
		t.Fatalf("agent-0 did not end in the new store: %+v", r)
	}
	dst.Close()
	out, err := flrh(bin, nil, "store", "import", "--live", "--from", from, "--store", to, "--json")
	var rep importReport
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || strings.Join(rep.Already, ",") != "agent-0" || strings.Join(rep.Live, ",") != lost {
		t.Fatalf("import after the crashes: %v\n%s", err, out)
	}
	if old, moved := where(lost); old || !moved {
		t.Fatalf("%s runs in the old store %v, is in the new %v; want the new only", lost, old, moved)
	}
	if out, err := flrh(bin, nil, "verify", "--all", "--store", to); err != nil || strings.Count(out, ": verified") != 2 {
		t.Fatalf("verify --all in the new store: %v\n%s", err, out)
	}
	if n := len(sb.Mutations()); n != 1 {
		t.Fatalf("the destination saw %d payments, want 1", n)
	}
}

// A run killed mid-effect (SIGKILL at a runner cut point: the intent
// committed and not sent; the payment applied at the destination and its
// receipt not written) moves to another store once the dead runner's
// lease lapses, and a runner there finishes it: one payment at the
// destination, the record verifying and replaying. The old store's
// runner, started again, does not touch it.
func TestMoveARunKilledMidEffect(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	for _, cut := range []string{"after-intent-commit", "after-apply-before-receipt"} {
		for _, target := range storeBackends() {
			t.Run(cut+"/"+target.name, func(t *testing.T) {
				base, oldStore, dest := crashRig(t, bin, "")
				from := strings.TrimPrefix(oldStore, "--store=")
				to := "sqlite:" + filepath.Join(t.TempDir(), "to.db")
				if target.dsn != "" {
					_, to = freshSchema(t, target.dsn, "flrh_move_killed_")
				}
				out, err := flrh(bin, []string{"FLRH_FAULT_INJECTION=1", "FLRH_FAULT_CUT=" + cut},
					"run", "start", "builtin:refund-agent", "--id", "r", "--input-json", `{"refunds":[{"id":"m1","amount":10,"payee":"alice","reason":"r"}]}`,
					oldStore, dest, "--lease-ttl", crashLeaseTTL)
				if !strings.Contains(out, "SIGKILL at "+cut) {
					t.Fatalf("runner not killed at %s: %v\n%s", cut, err, out)
				}
				before := len(mutations(t, base))
				// The dead runner's lease holds the run in the old store
				// until it lapses.
				deadline := time.Now().Add(30 * time.Second)
				for {
					out, err = flrh(bin, nil, "store", "import", "--live", "--from", from, "--store", to, "--json")
					var rep importReport
					if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
						t.Fatalf("import: %v\n%s", err, out)
					}
					if strings.Join(rep.Live, ",") == "r" {
						break
					}
					if len(rep.Left) != 1 || !strings.Contains(rep.Left[0].Reason, "holds the run") || time.Now().After(deadline) {
						t.Fatalf("import: %v\n%s", err, out)
					}
					time.Sleep(300 * time.Millisecond)
				}
				// The run moved as it stood: with the payment in flight
				// (its attempt begun, no outcome) after the cut past the
				// destination.
				ctx := context.Background()
				oldSt, err := openStore(ctx, from, true)
				if err != nil {
					t.Fatal(err)
				}
				newSt, err := openStore(ctx, to, true)
				if err != nil {
					t.Fatal(err)
				}
				was, is := storetest.NilEmpty(wholeRun(t, oldSt, "r")), storetest.NilEmpty(wholeRun(t, newSt, "r"))
				oldSt.Close()
				newSt.Close()
				was.Record.Run.Lease, is.Record.Run.Lease = store.Lease{}, store.Lease{}
				was.Record.Run.Quarantine, was.Record.Run.UpdatedAt = "", is.Record.Run.UpdatedAt
				if !reflect.DeepEqual(was, is) {
					t.Fatalf("the run moved otherwise:\nwas %+v\n is %+v", was.Record, is.Record)
				}
				inFlight := len(is.Record.Intents) == 1 && is.Record.Intents[0].Outbox == store.OutboxInFlight && len(is.Record.Attempts) == 1
				if cut == "after-apply-before-receipt" && !inFlight {
					t.Fatalf("the payment moved as %+v with attempts %+v, want in flight", is.Record.Intents, is.Record.Attempts)
				}
				out, err = flrh(bin, nil, "run", "resume", "r", "--store="+to, dest, "--wait", resumeWait)
				if err != nil || !strings.Contains(out, "run r: SUCCEEDED") {
					t.Fatalf("resume in the new store: %v\n%s", err, out)
				}
				if n := len(mutations(t, base)); n != 1 {
					t.Fatalf("the destination has %d payments (%d before the move), want 1", n, before)
				}
				verifyAndReplay(t, bin, "r", "--store="+to)
				out, _ = flrh(bin, nil, "run", "resume", "r", oldStore, dest, "--wait", "1s")
				if n := len(mutations(t, base)); n != 1 || strings.Contains(out, "SUCCEEDED") {
					t.Fatalf("the old store's runner went on with the moved run (%d payments):\n%s", n, out)
				}
			})
		}
	}
}

// TestImportCarriesNotices moves, with flrh store import, runs whose
// notices were written and not yet delivered (the old store was delivered
// from, its receiver down): the notices move with their runs, under their
// ids, and a server on the new store delivers them, one approval waiting
// and one end, as the next attempt of each.
func TestImportCarriesNotices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	ctx := context.Background()
	from, to := twoSQLiteSpecs(t)
	src, err := openStore(ctx, from, false)
	if err != nil {
		t.Fatal(err)
	}
	duties, _ := store.DutiesOf(src)
	if _, err := duties.HoldDuty(ctx, store.NotifyDuty, "a server gone", store.NotifyDutyTTL); err != nil {
		t.Fatal(err)
	}
	refundruns.Record(t, src, "", false, 800, 30)
	board, _ := store.NoticeboardOf(src)
	// One delivery was tried and failed.
	claimed, err := board.ClaimNotices(ctx, "a server gone", time.Minute, 10)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claimed %+v (%v)", claimed, err)
	}
	for _, n := range claimed {
		if err := board.NoticeRetry(ctx, n.ID, "a server gone", "the receiver answered 503 Service Unavailable", nil, []store.RouteWait{{Route: "default", After: time.Hour, Failures: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	src.Close()
	if out, err := flrh(bin, nil, "store", "migrate", "--store", to); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := flrh(bin, nil, "store", "import", "--ended", "--live", "--from", from, "--store", to); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	secret := "whsec-moved-2f8e6c1a9d03"
	h, hook := newHookReceiver(t, secret)
	sb := startQuietSandbox(t, bin)
	startServe(t, bin, []string{"FLRH_NOTIFY_SECRET=" + secret, "FLRH_NOTIFY_URL=" + hook}, "--store", to, "--destination", sb+"/v1/effects")
	approval := h.await(store.NoticeApproval, "agent-0", "2")
	ended := h.await(store.NoticeEnded, "agent-1", "2")
	byKind := map[string]string{}
	for _, n := range claimed {
		byKind[n.Kind] = n.ID
	}
	if approval.ID != byKind[store.NoticeApproval] || ended.ID != byKind[store.NoticeEnded] || len(approval.Notice.Requests) != 1 {
		t.Fatalf("delivered %+v and %+v; written as %v", approval, ended, byKind)
	}
	h.deliveredOnce(2, "")
}
