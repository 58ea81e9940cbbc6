package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
)

func init() {
	imp := &cobra.Command{Use: "import (--from STORE | --archive FILE|DIR...)",
		Short: "Take runs in: another store's (pruned runs by their keys, with --ended and --live whole runs), or archived runs whole",
		Long: `import moves runs from another store into this one, in that store's creation
order: how a deployment moves from the embedded store to PostgreSQL
(docs/postgres.md).

A run the other store pruned (flrh store prune) moves as what it keeps of it:
the run's header, its pruning (the archive's digest) and each of its effects'
idempotency keys, bound to the content they were committed with. Its id is then
taken in this store too, flrh verify --archive FILE --store ties each archive
to it, and no run of this store can commit an effect it committed.

With --ended, a run that ended and was not pruned moves whole: every event,
its checkpoint, intents, attempts, receipts, grants, inbox and trace, as
flrh verify and flrh replay read them in either store.

With --live, a run that has not ended moves whole too, and goes on in this
store where it stood: waiting for a person, with input pending, or with an
effect in flight (this store's runners ask the destination what became of it
before anything else, as after any runner's crash). The other store is then
written: each such run is first fenced out of it (quarantined as moved to
another store, its runners' commits refused), so that it never runs in both.
A run a runner of the other store holds a live lease on is left: stop that
store's runners first. A run this store refuses is let back into the other
store as it was. An import interrupted half-way is taken up by running it
again: a run fenced out and not yet imported is imported then.

With --dry-run, nothing is written to either store: the report says what
would move and what would be left (a key or grant this store holds for
something else shows only when the import is made).

With --archive instead of --from, the runs archives hold (files flrh store
prune wrote, or directories of them) are taken in whole, in the order they
were created: how ended runs are read again in a store (the run page, why,
flrh run show), and how a store restored from a backup, or lost with no
backup, takes its pruned runs in again, each run's ids and effects' keys
taken again so that no run commits an effect an archived run did. Every
archive is read and verified first (flrh verify --archive); one that does
not verify is left. A run this store pruned into the archive stays pruned
and is counted apart, not left: the store keeps its header and keys, the
archive its record (import it into another store to hold it whole).

Any other run is left and reported, and so is a run whose id, one of whose
keys or grants, this store holds already for something else. A run imported
before is counted as such and not written again. Exit status 1 when any run
is left.`,
		Args: cobra.NoArgs}
	iStore := addStoreFlag(imp)
	iFrom := imp.Flags().String("from", "", "the store to take the runs from (opened read-only unless --live)")
	iArchives := imp.Flags().StringArray("archive", nil, "an archive file (flrh store prune), or a directory of them, whose runs to take in whole instead (repeatable)")
	iEnded := imp.Flags().Bool("ended", false, "also move the ended runs the other store has not pruned, whole")
	iLive := imp.Flags().Bool("live", false, "also move the runs that have not ended, whole, fencing each out of the other store")
	iDry := imp.Flags().Bool("dry-run", false, "say what would move and what would be left, writing nothing to either store")
	iJSON := imp.Flags().Bool("json", false, "print JSON")
	imp.RunE = func(cmd *cobra.Command, _ []string) error {
		if len(*iArchives) > 0 {
			if *iFrom != "" || *iEnded || *iLive {
				return usagef("--archive takes archived runs in: give no --from, --ended or --live with it")
			}
			ctx := cmd.Context()
			dst, err := openStore(ctx, *iStore, *iDry)
			if err != nil {
				return err
			}
			defer dst.Close()
			rep, err := importArchives(ctx, dst, *iArchives, *iDry)
			return finishReport(cmd.OutOrStdout(), *iJSON, rep, err, len(rep.Left) > 0)
		}
		if *iFrom == "" {
			return usagef("--from STORE or --archive FILE|DIR is required")
		}
		if *iFrom == *iStore {
			return usagef("--from and --store name the same store")
		}
		ctx := cmd.Context()
		src, err := openStoreThere(ctx, *iFrom, !*iLive || *iDry, true)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := openStore(ctx, *iStore, *iDry)
		if err != nil {
			return err
		}
		defer dst.Close()
		rep, err := importRuns(ctx, src, dst, importWhat{ended: *iEnded, live: *iLive, dryRun: *iDry, to: storeDescription(*iStore), cut: faultCut()})
		return finishReport(cmd.OutOrStdout(), *iJSON, rep, err, len(rep.Left) > 0)
	}
	storeCmd.AddCommand(imp)
}

// importReport is what flrh store import did, run by run.
type importReport struct {
	Imported []string `json:"imported"` // pruned runs
	Keys     int      `json:"keys"`     // their idempotency keys
	Ended    []string `json:"ended"`    // ended runs moved whole
	Live     []string `json:"live"`     // live runs moved whole, fenced out of the other store
	Archived []string `json:"archived"` // runs taken in whole from their archives
	// PrunedHere are runs of archives this store pruned into them: it
	// keeps their headers and keys, the archives their records. Not left:
	// nothing is missing.
	PrunedHere []string     `json:"pruned_here,omitempty"`
	Already    []string     `json:"already"` // imported before
	Left       []skippedRun `json:"left"`
	DryRun     bool         `json:"dry_run,omitempty"` // what would be imported; nothing was written
	// fromArchives: the runs came from archives (--archive), not another store.
	fromArchives bool
}

// finishReport prints rep for people, or as JSON, then returns err, or
// errChecksFailed when failed: how the store commands that report run by
// run end.
func finishReport(w io.Writer, asJSON bool, rep interface{ print(io.Writer) }, err error, failed bool) error {
	if asJSON {
		if jerr := json.NewEncoder(w).Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		rep.print(w)
	}
	if err != nil {
		return err
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

// newImportReport is an import's report with nothing in it yet.
func newImportReport(dryRun bool) importReport {
	return importReport{Imported: []string{}, Ended: []string{}, Live: []string{}, Archived: []string{}, Already: []string{}, Left: []skippedRun{}, DryRun: dryRun}
}

func (r importReport) print(w io.Writer) {
	for _, l := range r.Left {
		switch {
		case l.File == "":
			fmt.Fprintf(w, "left %s: %s\n", l.RunID, l.Reason)
		case l.RunID == "":
			fmt.Fprintf(w, "left %s: %s\n", l.File, l.Reason)
		default:
			fmt.Fprintf(w, "left %s (%s): %s\n", l.RunID, l.File, l.Reason)
		}
	}
	verb := "imported"
	if r.DryRun {
		verb = "would import"
	}
	if r.fromArchives {
		fmt.Fprintf(w, "%s %d runs whole from archives; %d imported before; %d pruned here into their archives; left %d\n",
			verb, len(r.Archived), len(r.Already), len(r.PrunedHere), len(r.Left))
		return
	}
	fmt.Fprintf(w, "%s %d pruned runs (%d idempotency keys), %d ended runs whole, %d live runs whole; %d imported before; left %d\n",
		verb, len(r.Imported), r.Keys, len(r.Ended), len(r.Live), len(r.Already), len(r.Left))
}

// importWhat says which runs besides the pruned ones flrh store import
// moves, and to describes the store they move to (storeDescription), as
// the store they move from records it of a live run.
type importWhat struct {
	ended, live bool
	// dryRun writes nothing: a run is counted as it would be moved when
	// the store it would move to does not hold its id (or holds it at its
	// head hash: imported before), and, live, no runner's lease on it is
	// live and it did not move elsewhere. A key or grant the store holds
	// for something else shows only when the import is made.
	dryRun bool
	to     string
	// cut, when not nil, is called at the crash tests' cut points
	// "import-fenced" (a live run fenced out of the store it moves from
	// and read, not yet written into the other) and "import-written" (a
	// live run written into the store it moves to).
	cut func(string)
}

// storeDescription names the store spec names for the record of where a
// run went: an embedded store by its absolute path, another by its URL
// without a password.
func storeDescription(spec string) string {
	if strings.Contains(spec, "://") {
		return redactURL(spec)
	}
	path := strings.TrimPrefix(spec, "sqlite:")
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "sqlite:" + path
}

// sameStore reports whether store descriptions a and b (storeDescription,
// as a run fenced out records where it went) name one store however they
// are spelled: an embedded store by its file's path with symbolic links
// resolved; a PostgreSQL store by its host (in lower case), port (5432
// when not given), database and flrh's schema parameter, whatever user,
// password or other connection parameters reach it. So an import taken up
// again with the store named another way finishes the move.
func sameStore(a, b string) bool { return a == b || canonicalStore(a) == canonicalStore(b) }

// canonicalStore is the spelling of store description d that sameStore
// compares.
func canonicalStore(d string) string {
	if !strings.Contains(d, "://") {
		path := strings.TrimPrefix(d, "sqlite:")
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			path = filepath.Join(dir, filepath.Base(path))
		}
		return "sqlite:" + path
	}
	u, err := url.Parse(d)
	if err != nil {
		return d
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	c := url.URL{Scheme: "postgres", Host: strings.ToLower(u.Hostname()) + ":" + port, Path: u.Path}
	if schema := u.Query().Get("schema"); schema != "" {
		c.RawQuery = url.Values{"schema": {schema}}.Encode()
	}
	return c.String()
}

// importRuns takes src's runs into dst, in src's creation order: the
// pruned ones by their keys, and as what says the ended and live ones
// whole. A run that cannot be taken is left; a failure of either store
// stops it (a live run fenced out of src and not yet imported then stays
// fenced out, and the next import takes it).
func importRuns(ctx context.Context, src, dst store.Store, what importWhat) (importReport, error) {
	rep := newImportReport(what.dryRun)
	from, ok := store.PrunedMoverOf(src)
	pr, ok2 := store.PrunerOf(src)
	to, ok3 := store.PrunedMoverOf(dst)
	if !ok || !ok2 || !ok3 {
		return rep, usagef("these stores cannot move pruned runs")
	}
	var imp store.RunImporter
	var fence store.MoveFencer
	if what.ended || what.live {
		if imp, ok = store.RunImporterOf(dst); !ok {
			return rep, usagef("this store cannot take whole runs in")
		}
	}
	if what.live && !what.dryRun {
		if fence, ok = store.MoveFencerOf(src); !ok {
			return rep, usagef("live runs cannot move out of the other store")
		}
	}
	err := walkPrunings(ctx, src, pr, func(r store.Run, p *store.Pruning) error {
		left := func(why string) { rep.Left = append(rep.Left, skippedRun{RunID: r.ID, Reason: why}) }
		way, why := what.way(r, p)
		switch {
		case why != "":
			left(why)
			return nil
		case what.dryRun:
			return wouldImport(ctx, dst, from, what, way, r, &rep)
		case way == wayLive:
			return importLive(ctx, src, dst, what, fence, imp, r, &rep)
		case way == wayEnded:
			w, err := readWhole(ctx, src, r.ID)
			if refused(err) {
				left(fmt.Sprintf("it cannot be read: %v", err))
				return nil
			} else if err != nil {
				return err
			}
			imported, err := imp.ImportRun(ctx, w)
			return tally(&rep, &rep.Ended, r.ID, imported, err)
		}
		keys, err := from.PrunedKeys(ctx, r.ID)
		if err != nil {
			return err
		}
		imported, err := to.ImportPruned(ctx, store.PrunedRun{Run: r, Pruning: *p, Keys: keys})
		if err == nil && imported {
			rep.Keys += len(keys)
		}
		return tally(&rep, &rep.Imported, r.ID, imported, err)
	})
	return rep, err
}

// runWay is how a run moves: as a pruned run, by its keys, or whole,
// ended or live.
type runWay int

const (
	wayPruned runWay = iota
	wayEnded
	wayLive
)

// list is the list of rep that counts the runs moved way.
func (way runWay) list(rep *importReport) *[]string {
	switch way {
	case wayEnded:
		return &rep.Ended
	case wayLive:
		return &rep.Live
	}
	return &rep.Imported
}

// way says how run r (pruned as p, nil for none) moves, or why it is left
// instead, as far as its header and the flags tell: the import itself and
// the dry run ask it alike.
func (what importWhat) way(r store.Run, p *store.Pruning) (runWay, string) {
	switch {
	case r.Outcome == "" && !what.live:
		return 0, fmt.Sprintf("it has not ended (state %s): --live moves it", r.State)
	case r.Outcome == "":
		return wayLive, ""
	case p == nil && !what.ended:
		return 0, "it is not pruned (flrh store prune it first, or --ended moves it whole)"
	case p == nil:
		return wayEnded, ""
	}
	return wayPruned, ""
}

// leaseHeld is why a live run a runner of the other store holds is left.
func leaseHeld(err error) string {
	return fmt.Sprintf("%v: stop the other store's runners, or wait for the lease to run out", err)
}

// movedElsewhere is why live run r, fenced out of the other store as
// moving to a store other than to, is left; "" when it is not.
func movedElsewhere(r store.Run, to string) string {
	if went, _, moved := store.MovedFrom(r.Quarantine); moved && !sameStore(went, to) {
		return fmt.Sprintf("it moved to %s already", went)
	}
	return ""
}

// wouldImport counts run r of the store moving out, which moves way,
// where flrh store import --dry-run says it would go (importWhat.dryRun).
func wouldImport(ctx context.Context, dst store.Store, from store.PrunedMover, what importWhat, way runWay, r store.Run, rep *importReport) error {
	left := func(why string) { rep.Left = append(rep.Left, skippedRun{RunID: r.ID, Reason: why}) }
	if way == wayLive {
		if why := movedElsewhere(r, what.to); why != "" {
			left(why)
			return nil
		}
		if _, err := store.MoveOutOf("move out", r, what.to, time.Now()); store.CodeOf(err) == store.CodeLeaseHeld {
			left(leaseHeld(err))
			return nil
		}
	}
	got, err := dst.Run(ctx, r.ID)
	switch {
	case err == nil && got.HeadHash == r.HeadHash, err == nil && r.Outcome == "" && movedBefore(ctx, dst, r):
		rep.Already = append(rep.Already, r.ID)
	case err == nil:
		left("this store holds another run of this id")
	case store.CodeOf(err) != store.CodeNotFound:
		return err
	default:
		l := way.list(rep)
		*l = append(*l, r.ID)
		if way == wayPruned {
			keys, err := from.PrunedKeys(ctx, r.ID)
			if err != nil {
				return err
			}
			rep.Keys += len(keys)
		}
	}
	return nil
}

// importLive moves live run r: fenced out of src as moving to dst (which
// to describes), or found fenced out so by an import before, read,
// imported into dst. A run fenced out as moving to another store is
// left. A run dst refuses, or that cannot be read, is let back into src,
// unless dst holds it already, moved before and gone on since.
func importLive(ctx context.Context, src, dst store.Store, what importWhat, fence store.MoveFencer, imp store.RunImporter, r store.Run, rep *importReport) error {
	left := func(why string) { rep.Left = append(rep.Left, skippedRun{RunID: r.ID, Reason: why}) }
	cut := func(point string) {
		if what.cut != nil {
			what.cut(point)
		}
	}
	to := what.to
	out, err := fence.MoveOut(ctx, r.ID, to)
	switch c := store.CodeOf(err); {
	case c == store.CodeLeaseHeld:
		left(leaseHeld(err))
		return nil
	case c == store.CodeInvalidTransition:
		left(fmt.Sprintf("it changed while it was being moved: %v", err)) // it ended meanwhile: import it again
		return nil
	case err != nil:
		return err
	}
	if why := movedElsewhere(out, to); why != "" {
		left(why)
		return nil
	}
	_, prev, _ := store.MovedFrom(out.Quarantine)
	letBack := func(why string) error {
		if err := fence.CancelMove(ctx, r.ID); err != nil {
			return fmt.Errorf("run %s: %s, and letting it back into the other store failed: %w", r.ID, why, err)
		}
		left(why + "; it stays in the other store")
		return nil
	}
	w, err := readWhole(ctx, src, r.ID)
	if refused(err) {
		return letBack(fmt.Sprintf("it cannot be read: %v", err))
	} else if err != nil {
		return err
	}
	cut("import-fenced")
	w.Record.Run.Quarantine = prev
	imported, err := imp.ImportRun(ctx, w)
	if refused(err) {
		if movedBefore(ctx, dst, w.Record.Run) {
			rep.Already = append(rep.Already, r.ID)
			return nil
		}
		return letBack(fmt.Sprintf("this store refused it: %v", err))
	}
	if imported {
		cut("import-written")
	}
	return tally(rep, &rep.Live, r.ID, imported, err)
}

// readWhole reads runID's whole record from st as an archive holds it,
// with its notices not yet delivered, which move with it.
func readWhole(ctx context.Context, st store.Store, runID string) (store.WholeRun, error) {
	a, err := archive.Read(ctx, st, runID)
	if err != nil {
		return store.WholeRun{}, err
	}
	w := a.Whole()
	if nb, ok := store.NoticeboardOf(st); ok {
		if w.Notices, err = nb.RunNotices(ctx, runID); err != nil {
			return store.WholeRun{}, err
		}
	}
	return w, nil
}

// refused reports whether err is a store's refusal of one run (what the
// import leaves and goes on), not a failure of the store.
func refused(err error) bool {
	switch store.CodeOf(err) {
	case store.CodeExists, store.CodeIdempotencyConflict, store.CodeInvalidInput, store.CodeCorrupt, store.CodeSealed:
		return true
	}
	return false
}

// tally counts run id into imported, or as imported before, or left when
// this store refused it.
func tally(rep *importReport, imported *[]string, id string, written bool, err error) error {
	switch {
	case refused(err):
		rep.Left = append(rep.Left, skippedRun{RunID: id, Reason: fmt.Sprintf("this store refused it: %v", err)})
	case err != nil:
		return fmt.Errorf("run %s: %w", id, err)
	case written:
		*imported = append(*imported, id)
	default:
		rep.Already = append(rep.Already, id)
	}
	return nil
}

// movedBefore reports whether dst holds run (as the store it moves from
// holds it) moved into it before, and gone on since: the same workflow,
// created at the same time, at or past its head, its events (when dst
// still keeps them) chained through its head hash.
func movedBefore(ctx context.Context, dst store.Store, run store.Run) bool {
	got, err := dst.Run(ctx, run.ID)
	if err != nil || got.WorkflowID != run.WorkflowID || !got.CreatedAt.Equal(run.CreatedAt) || got.Head < run.Head {
		return false
	}
	if run.Head == 0 {
		return true
	}
	evs, err := dst.Events(ctx, run.ID, run.Head-1)
	if err != nil {
		return false
	}
	if len(evs) == 0 {
		p, ok := store.PrunerOf(dst)
		if !ok {
			return false
		}
		_, err := p.Pruning(ctx, run.ID)
		return err == nil // pruned since: its events are in its archive
	}
	return evs[0].Seq == run.Head && evs[0].ChainHash == run.HeadHash
}

// walkPrunings calls fn with each run of st in creation order and, for an
// ended run pr pruned, its pruning (nil for any other); an error from fn
// or the store stops the walk.
func walkPrunings(ctx context.Context, st store.Store, pr store.Pruner, fn func(r store.Run, p *store.Pruning) error) error {
	const page = 500
	after := ""
	for {
		runs, err := st.Runs(ctx, after, page)
		if err != nil {
			return err
		}
		for _, r := range runs {
			var p *store.Pruning
			if r.Outcome != "" {
				got, err := pr.Pruning(ctx, r.ID)
				switch {
				case err == nil:
					p = &got
				case store.CodeOf(err) != store.CodeNotFound:
					return err
				}
			}
			if err := fn(r, p); err != nil {
				return err
			}
		}
		if len(runs) < page {
			return nil
		}
		after = runs[len(runs)-1].ID
	}
}
