package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/postgres"
	"flrh.dev/flrh/store/sqlite"
)

// storeCmd groups the operator's commands on the store itself.
var storeCmd = &cobra.Command{Use: "store", Short: "Migrate and check the run store (SQLite or PostgreSQL)"}

func init() {
	migrate := &cobra.Command{Use: "migrate", Short: "Bring the store's schema up to this build's version", Args: cobra.NoArgs}
	mStore := addStoreFlag(migrate)
	mJSON := migrate.Flags().Bool("json", false, "print JSON")
	migrate.RunE = func(cmd *cobra.Command, _ []string) error {
		// Opening read-write migrates; a newer schema is refused.
		st, err := openStore(cmd.Context(), *mStore, false)
		if err != nil {
			return err
		}
		defer st.Close()
		have, build, backend, err := schemaVersions(cmd.Context(), st)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *mJSON {
			return json.NewEncoder(out).Encode(map[string]any{"backend": backend, "schema_version": have, "build_schema_version": build})
		}
		fmt.Fprintf(out, "%s store at schema version %d (this build writes %d)\n", backend, have, build)
		return nil
	}

	check := &cobra.Command{Use: "check", Short: "Report schema version, stuck leases, quarantined runs and open outbox entries",
		Long: "check reads the store without writing to it and reports its schema version, leases that\n" +
			"expired on a live run (a runner that died or stalled), quarantined runs, and effect intents\n" +
			"whose outbox is still open. It exits 1 when a run needs a person: a quarantined run,\n" +
			"an outbox entry of a live run routed to a human, or a lease stuck longer than --stuck-after.\n" +
			"An effect a person abandoned (its run ended EFFECT_OUTCOME_UNKNOWN) is listed, not a problem.\n" +
			"It names the server that holds each upkeep duty (scheduled pruning), or says it lapsed.\n" +
			"With --integrity (an embedded store) it also runs SQLite's integrity check over every page,\n" +
			"beside the runners, and counts each fault it finds as a problem.",
		Args: cobra.NoArgs}
	cStore := addStoreFlag(check)
	cJSON := check.Flags().Bool("json", false, "print JSON")
	cStuck := check.Flags().Duration("stuck-after", time.Minute, "report an expired lease on a live run once it has been expired this long")
	cIntegrity := check.Flags().Bool("integrity", false, "also check every page of an embedded store (SQLite's integrity check)")
	check.RunE = func(cmd *cobra.Command, _ []string) error {
		if *cStuck < 0 {
			return usagef("--stuck-after must not be negative")
		}
		if *cIntegrity && strings.Contains(*cStore, "://") {
			return usagef("--integrity checks an embedded store's pages; PostgreSQL checks its own (data checksums, amcheck)")
		}
		st, err := openStore(cmd.Context(), *cStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		rep, err := checkStore(cmd.Context(), st, time.Now(), *cStuck)
		if err != nil {
			return err
		}
		if *cIntegrity {
			if err := rep.checkIntegrity(cmd.Context(), st); err != nil {
				return err
			}
		}
		out := cmd.OutOrStdout()
		if *cJSON {
			if err := json.NewEncoder(out).Encode(rep); err != nil {
				return err
			}
		} else {
			rep.print(out)
		}
		if rep.Problems > 0 {
			return errChecksFailed
		}
		return nil
	}

	storeCmd.AddCommand(migrate, check)
	rootCmd.AddCommand(storeCmd)
}

// schemaVersions reads the schema version the database holds and the one
// this build writes.
func schemaVersions(ctx context.Context, st store.Store) (have, build int64, backend string, err error) {
	switch s := st.(type) {
	case *sqlite.Store:
		err = s.DB().QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have)
		return have, sqlite.SchemaVersion, "sqlite", err
	case *postgres.Store:
		have, err = s.SchemaVersionIn(ctx)
		return have, postgres.SchemaVersion, "postgres", err
	}
	return 0, 0, "", fmt.Errorf("store %T has no schema version", st)
}

type storeReport struct {
	Backend            string        `json:"backend"`
	SchemaVersion      int64         `json:"schema_version"`
	BuildSchemaVersion int64         `json:"build_schema_version"`
	Runs               int           `json:"runs"`
	Live               int           `json:"live"`
	Ended              int           `json:"ended"`
	Pruned             int           `json:"pruned"` // ended runs whose record was pruned (flrh store prune)
	StuckLeases        []stuckLease  `json:"stuck_leases"`
	Quarantined        []quarantined `json:"quarantined"`
	// Moved are the live runs that moved to another store (flrh store
	// import --live), fenced out of this one: where each went. None is
	// a problem here; the store each went to runs it.
	Moved      []movedRun   `json:"moved"`
	OpenOutbox []openOutbox `json:"open_outbox"`
	// Duties are the upkeep leases of the store (store.Duties) someone
	// ever held: which server prunes on a schedule, say. None is a
	// problem: a lapsed one is taken at another server's next pass.
	Duties []dutyState `json:"duties"`
	// NoticesPending counts the notices written and not yet delivered
	// (flrh serve --notify), OldestNotice shows the oldest not held:
	// why it waits. NoticesHeld counts those of them delivered to every
	// route due and held for escalation routes alone. None is a
	// problem: a receiver that is down is retried.
	NoticesPending int64         `json:"notices_pending"`
	NoticesHeld    int64         `json:"notices_held"`
	OldestNotice   *oldestNotice `json:"oldest_notice,omitempty"`
	// SharedLimits are the adapters' shared limits in use (a slot held, a
	// rate booked past now): why a limited adapter's requests wait. None
	// is a problem: a slot a stopped process held frees itself.
	SharedLimits []sharedLimit `json:"shared_limits"`
	// ParkedDeliveries are the webhooks with deliveries parked: verified,
	// not taken, waiting for an operator (flrh webhook parked). None is
	// a problem for the store.
	ParkedDeliveries []parkedHook `json:"parked_deliveries"`
	// Integrity is what SQLite's integrity check found wrong, with
	// --integrity (omitted when it found nothing).
	Integrity []string `json:"integrity,omitempty"`
	// IntegrityChecked says the check ran.
	IntegrityChecked bool `json:"integrity_checked,omitempty"`
	Problems         int  `json:"problems"`
}

// parkedHook is a webhook's parked deliveries: how many, and when the
// longest parked was first refused.
type parkedHook struct {
	Webhook string    `json:"webhook"`
	Count   int       `json:"count"`
	Oldest  time.Time `json:"oldest"`
}

// sharedLimit is one shared limit in use.
type sharedLimit struct {
	Name        string     `json:"name"`
	Held        []heldSlot `json:"held"`
	BookedUntil *time.Time `json:"booked_until,omitempty"`
	PerSecond   int        `json:"per_second,omitempty"` // the rate booked under, with booked_until
	Waiting     int        `json:"waiting"`
	// Bounds are the bounds declared by the requests holding or waiting,
	// ascending: more than one, and processes disagree (the first holds).
	Bounds []int `json:"bounds,omitempty"`
}

type heldSlot struct {
	Slot   int       `json:"slot"`
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
	Bound  int       `json:"bound,omitempty"` // the limit's max as its holder declared it
}

// oldestNotice is the oldest notice not yet delivered.
type oldestNotice struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	RunID     string    `json:"run_id"`
	WrittenAt time.Time `json:"written_at"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	// Reached are the routes that took it; Failed those that failed,
	// each with its failures and the wait left before it is tried again;
	// Escalations the routes told later if the run still waits then,
	// each with the wait left.
	Reached     []string      `json:"reached,omitempty"`
	Failed      []routeFailed `json:"failed_routes,omitempty"`
	Escalations []escalation  `json:"escalations,omitempty"`
}

type escalation struct {
	Route string  `json:"route"`
	Left  float64 `json:"in_seconds"`
}

type routeFailed struct {
	Route    string  `json:"route"`
	Failures int     `json:"failures"`
	Left     float64 `json:"retry_in_seconds"`
}

// checkIntegrity runs the embedded store's integrity check and adds what
// it finds to the report, each fault a problem. A store too damaged for
// the check to run is one problem, reported as such.
func (r *storeReport) checkIntegrity(ctx context.Context, st store.Store) error {
	sq, ok := store.As[*sqlite.Store](st)
	if !ok {
		return usagef("--integrity checks an embedded store's pages; this store is not one")
	}
	problems, err := sq.Integrity(ctx)
	switch {
	case store.CodeOf(err) == store.CodeCorrupt:
		problems = []string{err.Error()}
	case err != nil:
		return err
	}
	r.IntegrityChecked, r.Integrity = true, problems
	r.Problems += len(problems)
	return nil
}

type dutyState struct {
	Name       string    `json:"name"`
	Holder     string    `json:"holder"` // "" once given up
	Generation int64     `json:"generation"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Lapsed     bool      `json:"lapsed,omitempty"` // its holder stopped renewing it
}

// storeDuties are the duties flrh's commands hold: scheduled pruning,
// and delivering notices (whose holder tells runners to write them).
var storeDuties = []string{pruneDuty, store.NotifyDuty}

// readDuties adds the store's duties to the report.
func (r *storeReport) readDuties(ctx context.Context, st store.Store, now time.Time) error {
	duties, ok := store.DutiesOf(st)
	if !ok {
		return nil
	}
	for _, name := range storeDuties {
		d, err := duties.Duty(ctx, name)
		switch {
		case store.CodeOf(err) == store.CodeNotFound:
			continue
		case err != nil:
			return err
		}
		r.Duties = append(r.Duties, dutyState{Name: d.Name, Holder: d.Holder, Generation: d.Generation, ExpiresAt: d.ExpiresAt,
			Lapsed: d.Holder != "" && !d.ExpiresAt.After(now)})
	}
	return nil
}

type stuckLease struct {
	RunID      string    `json:"run_id"`
	Owner      string    `json:"owner"`
	Generation int64     `json:"generation"`
	ExpiredAt  time.Time `json:"expired_at"`
}

type quarantined struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

type movedRun struct {
	RunID string `json:"run_id"`
	To    string `json:"to"`
}

type openOutbox struct {
	RunID    string `json:"run_id"`
	IntentID string `json:"intent_id"`
	Effect   string `json:"effect_type"`
	Status   string `json:"status"`
	Route    string `json:"route,omitempty"`
	Attempts int64  `json:"attempts"`
	// RunEnded says the run ended with the effect still open: a person
	// abandoned it (the run's outcome is EFFECT_OUTCOME_UNKNOWN), and
	// nothing will ever ask the destination again. It is listed, as an
	// effect that may have reached the world, but it is no longer a
	// problem: the person it was routed to has decided.
	RunEnded bool `json:"run_ended,omitempty"`
	// RunMoved says the run moved to another store (Moved), the effect
	// with it: the store it went to settles it, not this one.
	RunMoved bool `json:"run_moved,omitempty"`
}

// checkStore reports the same way on every backend. A store that takes a
// census and lists its open outbox (store.CensusTaker and
// store.OutboxLister: both of flrh's) answers in a few reads, counted and
// filtered inside the database; any other is walked through the store
// interface, every run's header and intents.
func checkStore(ctx context.Context, st store.Store, now time.Time, stuckAfter time.Duration) (storeReport, error) {
	var rep storeReport
	var err error
	rep.SchemaVersion, rep.BuildSchemaVersion, rep.Backend, err = schemaVersions(ctx, st)
	if err != nil {
		return rep, err
	}
	if err := walkStore(ctx, st, now, stuckAfter, &rep); err != nil {
		return rep, err
	}
	rep.Duties = []dutyState{}
	rep.SharedLimits = []sharedLimit{}
	rep.ParkedDeliveries = []parkedHook{}
	rep.Problems = len(rep.StuckLeases) + len(rep.Quarantined)
	if rep.SchemaVersion != rep.BuildSchemaVersion {
		rep.Problems++
	} else if err := rep.readDuties(ctx, st, now); err != nil {
		return rep, err
	} else if nb, ok := store.NoticeboardOf(st); ok {
		b, err := nb.NoticeBacklog(ctx)
		if err != nil {
			return rep, err
		}
		rep.NoticesPending, rep.NoticesHeld = b.Count, b.Held
		if o := b.Oldest; o.ID != "" {
			rep.OldestNotice = &oldestNotice{ID: o.ID, Kind: o.Kind, RunID: o.RunID, WrittenAt: o.CreatedAt, Attempts: o.Attempts, LastError: o.LastError, Reached: o.Sent}
			for _, w := range o.Waits {
				if w.Failures == 0 {
					rep.OldestNotice.Escalations = append(rep.OldestNotice.Escalations, escalation{Route: w.Route, Left: w.After.Seconds()})
					continue
				}
				rep.OldestNotice.Failed = append(rep.OldestNotice.Failed, routeFailed{Route: w.Route, Failures: w.Failures, Left: w.After.Seconds()})
			}
		}
	}
	if rep.SchemaVersion == rep.BuildSchemaVersion {
		if err := rep.readSharedLimits(ctx, st); err != nil {
			return rep, err
		}
		if p, ok := store.DeliveryParkingOf(st); ok {
			counts, err := p.ParkedCounts(ctx)
			if err != nil {
				return rep, err
			}
			for _, c := range counts {
				rep.ParkedDeliveries = append(rep.ParkedDeliveries, parkedHook{Webhook: c.Hook, Count: c.Count, Oldest: c.Oldest})
			}
		}
	}
	type where struct{ ended, moved bool }
	runs := map[string]where{}
	for i, o := range rep.OpenOutbox {
		w, ok := runs[o.RunID]
		if !ok {
			r, err := st.Run(ctx, o.RunID)
			if err != nil {
				return rep, err
			}
			_, _, moved := store.MovedFrom(r.Quarantine)
			w = where{ended: r.Outcome != "", moved: moved}
			runs[o.RunID] = w
		}
		rep.OpenOutbox[i].RunEnded, rep.OpenOutbox[i].RunMoved = w.ended, w.moved
		if o.Status == string(store.OutboxHuman) && !w.ended && !w.moved {
			rep.Problems++
		}
	}
	return rep, nil
}

// walkStore fills rep's counts of runs, its stuck leases, quarantined runs
// and open outbox entries: from the store's census (store.TakeCensus) and
// open outbox when it has them, otherwise by paging through every run.
func walkStore(ctx context.Context, st store.Store, now time.Time, stuckAfter time.Duration, rep *storeReport) error {
	rep.StuckLeases, rep.Quarantined, rep.Moved, rep.OpenOutbox = []stuckLease{}, []quarantined{}, []movedRun{}, []openOutbox{}
	c, err := store.TakeCensus(ctx, st, store.CensusQuery{ExpiredBy: now.Add(-stuckAfter)})
	if err != nil {
		return err
	}
	rep.Runs, rep.Live, rep.Ended, rep.Pruned = int(c.Runs), int(c.Live), int(c.Ended), int(c.Pruned)
	for _, r := range c.Quarantined {
		rep.addQuarantined(r)
	}
	for _, r := range c.Moved {
		to, _, _ := store.MovedFrom(r.Quarantine)
		rep.Moved = append(rep.Moved, movedRun{RunID: r.ID, To: to})
	}
	for _, r := range c.Expired {
		rep.addStuck(r)
	}
	if ol, ok := store.OutboxListerOf(st); ok {
		open, err := ol.OpenOutbox(ctx)
		if err != nil {
			return err
		}
		for _, e := range open {
			rep.addOpen(e)
		}
		return nil
	}
	after := ""
	for {
		runs, err := st.Runs(ctx, after, 500)
		if err != nil || len(runs) == 0 {
			return err
		}
		for _, r := range runs {
			ins, err := st.Intents(ctx, r.ID)
			if err != nil {
				return err
			}
			for _, in := range ins {
				if in.Outbox != store.OutboxDone {
					rep.addOpen(store.OutboxEntry{RunID: r.ID, IntentID: in.ID, EffectType: in.EffectType,
						Status: in.Outbox, Route: in.Route, Attempts: in.Attempts})
				}
			}
		}
		after = runs[len(runs)-1].ID
	}
}

// readSharedLimits adds the shared limits in use, when the store holds
// any.
func (r *storeReport) readSharedLimits(ctx context.Context, st store.Store) error {
	l, ok := store.SharedLimitsOf(st)
	if !ok {
		return nil
	}
	uses, err := l.LimitsInUse(ctx)
	if err != nil {
		return err
	}
	for _, u := range uses {
		sl := sharedLimit{Name: u.Name, Held: []heldSlot{}, Waiting: u.Waiting, Bounds: u.Bounds}
		for _, h := range u.Held {
			sl.Held = append(sl.Held, heldSlot{Slot: h.Slot, Holder: h.Holder, Until: h.Until, Bound: h.Bound})
		}
		if !u.BookedUntil.IsZero() {
			b := u.BookedUntil
			sl.BookedUntil, sl.PerSecond = &b, u.PerSecond
		}
		r.SharedLimits = append(r.SharedLimits, sl)
	}
	return nil
}

// addQuarantined reports a run quarantined before it ended.
func (r *storeReport) addQuarantined(run store.Run) {
	r.Quarantined = append(r.Quarantined, quarantined{RunID: run.ID, Reason: run.Quarantine})
}

// addStuck reports a live run whose lease expired more than the check's
// grace ago, its owner still named.
func (r *storeReport) addStuck(run store.Run) {
	r.StuckLeases = append(r.StuckLeases, stuckLease{RunID: run.ID, Owner: run.Lease.Owner, Generation: run.Lease.Generation, ExpiredAt: run.Lease.ExpiresAt})
}

// addOpen reports an outbox entry not yet done.
func (r *storeReport) addOpen(e store.OutboxEntry) {
	r.OpenOutbox = append(r.OpenOutbox, openOutbox{RunID: e.RunID, IntentID: e.IntentID, Effect: e.EffectType,
		Status: string(e.Status), Route: e.Route, Attempts: e.Attempts})
}

func (r storeReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s store, schema version %d (this build writes %d)\n", r.Backend, r.SchemaVersion, r.BuildSchemaVersion)
	fmt.Fprintf(w, "runs: %d (%d live, %d ended, %d quarantined)\n", r.Runs, r.Live, r.Ended, len(r.Quarantined))
	if r.Pruned > 0 {
		fmt.Fprintf(w, "pruned runs: %d (the store keeps their headers; flrh store prune)\n", r.Pruned)
	}
	fmt.Fprintf(w, "stuck leases: %d\n", len(r.StuckLeases))
	for _, l := range r.StuckLeases {
		fmt.Fprintf(w, "  %s held by %s (generation %d), expired %s\n", l.RunID, l.Owner, l.Generation, l.ExpiredAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "quarantined runs: %d\n", len(r.Quarantined))
	for _, q := range r.Quarantined {
		fmt.Fprintf(w, "  %s: %s\n", q.RunID, q.Reason)
	}
	held := ""
	if r.NoticesHeld > 0 {
		held = fmt.Sprintf(", %d held for escalation routes alone", r.NoticesHeld)
	}
	if o := r.OldestNotice; o == nil && r.NoticesPending > 0 {
		fmt.Fprintf(w, "notices not yet delivered: %d (flrh serve --notify)%s\n", r.NoticesPending, held)
	}
	if o := r.OldestNotice; o != nil {
		fmt.Fprintf(w, "notices not yet delivered: %d (flrh serve --notify)%s; the oldest, %s, written %s, %d attempts", r.NoticesPending,
			held, o.ID, o.WrittenAt.UTC().Format(time.RFC3339), o.Attempts)
		if o.LastError != "" {
			fmt.Fprintf(w, ", the last: %s", o.LastError)
		}
		if len(o.Reached) > 0 {
			fmt.Fprintf(w, "; reached %s", strings.Join(o.Reached, ", "))
		}
		for i, f := range o.Failed {
			sep := "; failed at "
			if i > 0 {
				sep = ", "
			}
			left := "due now"
			if f.Left > 0 {
				left = "again in " + time.Duration(f.Left*float64(time.Second)).Round(time.Second).String()
			}
			times := "once"
			if f.Failures != 1 {
				times = strconv.Itoa(f.Failures) + " times"
			}
			fmt.Fprintf(w, "%s%s (%s, %s)", sep, f.Route, times, left)
		}
		for i, e := range o.Escalations {
			sep := "; escalates to "
			if i > 0 {
				sep = ", "
			}
			fmt.Fprintf(w, "%s%s (if the run still waits, in %s)", sep, e.Route, time.Duration(e.Left*float64(time.Second)).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	for _, p := range r.ParkedDeliveries {
		what := "deliveries parked, the first"
		if p.Count == 1 {
			what = "delivery parked,"
		}
		fmt.Fprintf(w, "webhook %s: %d %s refused at %s (flrh webhook parked %s)\n", p.Webhook, p.Count, what, p.Oldest.UTC().Format(time.RFC3339), p.Webhook)
	}
	if len(r.SharedLimits) > 0 {
		fmt.Fprintf(w, "shared limits in use: %d\n", len(r.SharedLimits))
		for _, l := range r.SharedLimits {
			fmt.Fprintf(w, "  %s:", l.Name)
			if len(l.Held) > 0 {
				fmt.Fprintf(w, " %d slots held", len(l.Held))
				for i, h := range l.Held {
					sep := " ("
					if i > 0 {
						sep = ", "
					}
					fmt.Fprintf(w, "%s%d by %s until %s", sep, h.Slot, h.Holder, h.Until.UTC().Format(time.RFC3339))
				}
				fmt.Fprint(w, ")")
			}
			if l.Waiting > 0 {
				fmt.Fprintf(w, "; %d waiting for a slot", l.Waiting)
			}
			if l.BookedUntil != nil {
				if len(l.Held) > 0 || l.Waiting > 0 {
					fmt.Fprint(w, ";")
				}
				fmt.Fprintf(w, " rate booked until %s", l.BookedUntil.UTC().Format(time.RFC3339Nano))
				if l.PerSecond > 0 {
					fmt.Fprintf(w, " at %d a second", l.PerSecond)
				}
			}
			fmt.Fprintln(w)
			if len(l.Bounds) > 1 {
				fmt.Fprintf(w, "    declared with bounds %s by the requests using it: the strictest, %d, holds for all\n", joinInts(l.Bounds), l.Bounds[0])
			}
		}
	}
	if len(r.Moved) > 0 {
		to := map[string]int{}
		for _, m := range r.Moved {
			to[m.To]++
		}
		fmt.Fprintf(w, "runs moved to another store: %d (flrh store import --live)\n", len(r.Moved))
		for _, dest := range slices.Sorted(maps.Keys(to)) {
			fmt.Fprintf(w, "  %d to %s\n", to[dest], dest)
		}
	}
	byStatus := map[string]int{}
	for _, o := range r.OpenOutbox {
		byStatus[o.Status]++
	}
	statuses := make([]string, 0, len(byStatus))
	for s := range byStatus {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	fmt.Fprintf(w, "open outbox entries: %d", len(r.OpenOutbox))
	for i, s := range statuses {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(w, "%s%d %s", sep, byStatus[s], s)
	}
	if len(statuses) > 0 {
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
	for _, o := range r.OpenOutbox {
		ended := ""
		if o.RunEnded {
			ended = " (the run ended with it open: abandoned by a person, not a problem)"
		}
		fmt.Fprintf(w, "  %s %s %s: %s after %d attempts %s%s\n", o.RunID, o.IntentID, o.Effect, o.Status, o.Attempts, o.Route, ended)
	}
	for _, d := range r.Duties {
		switch {
		case d.Holder == "":
			fmt.Fprintf(w, "duty %s: given up (generation %d); the next server to pass takes it\n", d.Name, d.Generation)
		case d.Lapsed:
			fmt.Fprintf(w, "duty %s: lapsed, last held by %s (generation %d) until %s; the next server to pass takes it\n",
				d.Name, d.Holder, d.Generation, d.ExpiresAt.Format(time.RFC3339))
		default:
			fmt.Fprintf(w, "duty %s: held by %s (generation %d) until %s\n", d.Name, d.Holder, d.Generation, d.ExpiresAt.Format(time.RFC3339))
		}
	}
	if r.IntegrityChecked {
		if len(r.Integrity) == 0 {
			fmt.Fprintln(w, "integrity: every page checked, no fault")
		} else {
			fmt.Fprintf(w, "integrity: %d fault(s) (restore the latest backup: flrh store restore)\n", len(r.Integrity))
			for _, p := range r.Integrity {
				fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(p, "\n", "\n  "))
			}
		}
	}
	if r.Problems == 0 {
		fmt.Fprintln(w, "ok")
	} else {
		fmt.Fprintf(w, "%d problem(s) need attention\n", r.Problems)
	}
}

// joinInts writes ns as "2, 3 and 4".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
