package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

// archiveSuffix ends the name of an archive file; the name before it is
// the run id, escaped as a URL path segment (so a run id is never a path).
const archiveSuffix = ".flrh-archive.json"

// archiveFileName is the name of run runID's archive file in an archive
// directory, compressed (archive.Compress) or not.
func archiveFileName(runID string, compressed bool) string {
	name := url.PathEscape(runID) + archiveSuffix
	if compressed {
		name += ".gz"
	}
	return name
}

func init() {
	prune := &cobra.Command{Use: "prune --ended-before AGE|TIME (--archive DIR | --discard)",
		Short: "Archive the records of runs that ended long ago, then remove them from the store",
		Long: `prune takes the runs that ended (and are not quarantined) before a time, and for
each one (--parallel at once, reported in the order the runs were created):
  1. reads its whole record (events, checkpoint, intents, attempts, receipts,
     grants, inbox and trace) and verifies it as flrh verify does;
  2. writes it to DIR/RUN` + archiveSuffix + ` as one canonical document (written to a
     temporary file, synced, renamed, the directory synced), and reads the file
     back to check it holds exactly what was read;
  3. removes the record from the store in one transaction, which refuses if
     the run holds anything other than what was archived.
The run's header stays: its id is never reused, and it is still listed and
counted with its outcome; flrh verify reports it pruned, with its archive's
digest. flrh verify --archive FILE checks an archive on its own, or against
the store's header with --store.

A run whose record fails verification, or whose archive file exists with
other content, is left as it is and reported; prune then exits 1. A run
that ended with an effect still open (a person abandoned it, its outcome
unknown) is kept, and reported, without failing (flrh store check lists the
effect), unless --abandoned is given: then it is pruned too, the archive
holding the effect open as it was, and its idempotency key stays taken in
the store like every pruned intent's, so no later run can do it again.
A run another prune removes meanwhile is reported pruned elsewhere. --discard
removes records without archiving them (still verified first). --dry-run
reports what would be pruned and writes nothing.`,
		Args: cobra.NoArgs}
	pStore := addStoreFlag(prune)
	pBefore := prune.Flags().String("ended-before", "", "prune runs that ended before this: an age (720h) or an RFC 3339 time")
	pDir := prune.Flags().String("archive", "", "write each run's archive into this directory first")
	pDiscard := prune.Flags().Bool("discard", false, "remove the records without archiving them")
	pLimit := prune.Flags().Int("limit", 0, "prune at most this many runs (0: all that qualify)")
	pParallel := prune.Flags().Int("parallel", runtime.GOMAXPROCS(0), "prune this many runs at once")
	pDry := prune.Flags().Bool("dry-run", false, "report what would be pruned; write nothing")
	pCompress := prune.Flags().Bool("compress", false, "write each archive gzip-compressed (RUN"+archiveSuffix+".gz); flrh verify and replay --archive read either")
	pAbandoned := prune.Flags().Bool("abandoned", false, "also prune runs that ended with an effect open (abandoned by a person), keeping it open in the archive")
	pJSON := prune.Flags().Bool("json", false, "print JSON")
	prune.RunE = func(cmd *cobra.Command, _ []string) error {
		cutoff, err := endedBefore(*pBefore, time.Now())
		switch {
		case err != nil:
			return err
		case (*pDir == "") == !*pDiscard:
			return usagef("give exactly one of --archive DIR and --discard")
		case *pCompress && *pDiscard:
			return usagef("--compress compresses archives; --discard writes none")
		case *pLimit < 0:
			return usagef("--limit must not be negative")
		case *pParallel < 1:
			return usagef("--parallel must be at least 1")
		}
		st, err := openStore(cmd.Context(), *pStore, *pDry)
		if err != nil {
			return err
		}
		defer st.Close()
		if *pDir != "" && !*pDry {
			if err := os.MkdirAll(*pDir, 0o750); err != nil {
				return err
			}
		}
		sealer, err := storeSealer()
		if err != nil {
			return err
		}
		rep, err := pruneRuns(cmd.Context(), st, pruneOptions{Before: cutoff, Dir: *pDir, Limit: *pLimit, DryRun: *pDry, Parallel: *pParallel, Sealer: sealer, Abandoned: *pAbandoned, Compress: *pCompress, Cut: faultCut()})
		return finishReport(cmd.OutOrStdout(), *pJSON, &rep, err, len(rep.Skipped) > 0)
	}
	storeCmd.AddCommand(prune)
}

// endedBefore reads --ended-before: an age before now, or a time.
func endedBefore(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, usagef("--ended-before is required (an age such as 720h, or an RFC 3339 time)")
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("--ended-before %s: an age must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("--ended-before %q is neither an age (720h) nor an RFC 3339 time", s)
	}
	return t, nil
}

type pruneOptions struct {
	Before time.Time // runs whose header was last written before this
	Dir    string    // the archive directory; "" discards
	Limit  int       // at most this many runs; 0 for all
	DryRun bool
	// Abandoned prunes runs that ended with effects open too (their
	// outcome unknown: a person abandoned them), kept open in the archive;
	// without it such runs are held.
	Abandoned bool
	// Compress writes each archive gzip-compressed (archive.Compress),
	// named RUN.flrh-archive.json.gz.
	Compress bool
	// Parallel is how many runs are pruned at once (below 1: one). Runs
	// are reported in creation order whatever the order they finish in.
	Parallel int
	// Sealer, when not nil, encrypts each archive file whole (the store's
	// keyring: a store encrypted at rest gives encrypted archives).
	Sealer store.Sealer
	// Between, when not nil, is asked before each batch of runs whether
	// to go on; false ends prune there, with the report Stopped. The
	// scheduled pruning renews its duty in it (store.Duties).
	Between func() bool
	// Cut, when not nil, is called at prune's cut points for the crash
	// tests (faultCut): "prune-archive-temp" once a run's archive is in
	// its temporary file, "prune-archive-written" once it is durable under
	// its name and the store has not yet removed the record.
	Cut func(point string)
}

func (o pruneOptions) cut(point string) {
	if o.Cut != nil {
		o.Cut(point)
	}
}

// pruneReport is what prune did, run by run.
type pruneReport struct {
	DryRun  bool         `json:"dry_run"`
	Pruned  []prunedRun  `json:"pruned"`
	Skipped []skippedRun `json:"skipped"`
	// Held are runs that ended with an effect whose outbox is not done
	// (its outcome unknown, say): the store keeps them, and prune leaves
	// them without counting it a failure; flrh store check lists their
	// open entries.
	Held []skippedRun `json:"held"`
	// Elsewhere are runs another prune removed while this one had them
	// in hand (another flrh store prune, or a server's scheduled
	// pruning): nothing is left to do for them, and it is no failure.
	Elsewhere []skippedRun       `json:"pruned_elsewhere"`
	Kept      store.RecordCounts `json:"records"`
	// Stopped says prune ended before it had gone through every run that
	// qualifies (pruneOptions.Between said so).
	Stopped bool `json:"stopped,omitempty"`
	// Log is what emptying the store's log after pruning did (SQLite;
	// omitted for a store that keeps none, a dry run, or nothing pruned).
	Log *logEmptied `json:"log,omitempty"`
}

type prunedRun struct {
	RunID     string             `json:"run_id"`
	Outcome   string             `json:"outcome"`
	File      string             `json:"file,omitempty"`
	Archive   string             `json:"archive,omitempty"`    // the document's digest
	Bytes     int                `json:"bytes"`                // the document's
	FileBytes int                `json:"file_bytes,omitempty"` // the file's, compressed or sealed
	Kept      store.RecordCounts `json:"records"`
	// Open counts the run's effects taken with their outbox not done
	// (abandoned, outcome unknown), kept open in the archive.
	Open int64 `json:"open_effects,omitempty"`
}

type skippedRun struct {
	RunID string `json:"run_id"`
	// File is the archive file the run was read from, when it was
	// (flrh store import --archive); a file left before its run was known
	// has no RunID.
	File   string `json:"file,omitempty"`
	Reason string `json:"reason"`
}

func (r *pruneReport) print(w io.Writer) {
	verb, archived, discarded := "pruned", "archived to", "discarded"
	if r.DryRun {
		verb, archived, discarded = "would prune", "to be archived to", "to be discarded"
	}
	for _, p := range r.Pruned {
		where := discarded
		if p.File != "" {
			where = fmt.Sprintf("%s %s (%s, %d bytes)", archived, p.File, p.Archive, p.Bytes)
			if p.FileBytes != p.Bytes && p.FileBytes > 0 {
				where = fmt.Sprintf("%s %s (%s, %d bytes, %d in the file)", archived, p.File, p.Archive, p.Bytes, p.FileBytes)
			}
		}
		open := ""
		if p.Open > 0 {
			open = fmt.Sprintf(", %d effects abandoned open", p.Open)
		}
		fmt.Fprintf(w, "%s %s (%s): %d events, %d intents, %d receipts, %d trace records%s; %s\n",
			verb, p.RunID, p.Outcome, p.Kept.Events, p.Kept.Intents, p.Kept.Receipts, p.Kept.Trace, open, where)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "left %s: %s\n", s.RunID, s.Reason)
	}
	for _, s := range r.Held {
		fmt.Fprintf(w, "kept %s: %s\n", s.RunID, s.Reason)
	}
	for _, s := range r.Elsewhere {
		fmt.Fprintf(w, "pruned elsewhere %s: %s\n", s.RunID, s.Reason)
	}
	elsewhere := ""
	if len(r.Elsewhere) > 0 {
		elsewhere = fmt.Sprintf("; %d pruned by another prune meanwhile", len(r.Elsewhere))
	}
	fmt.Fprintf(w, "%s %d runs (%d events, %d intents, %d receipts, %d grants, %d inbox entries, %d trace records); left %d, kept %d with an effect open%s\n",
		verb, len(r.Pruned), r.Kept.Events, r.Kept.Intents, r.Kept.Receipts, r.Kept.Grants, r.Kept.Inbox, r.Kept.Trace, len(r.Skipped), len(r.Held), elsewhere)
	r.Log.print(w, "pruned runs")
}

// pruneRuns prunes the runs that qualify, as prune's help says.
func pruneRuns(ctx context.Context, st store.Store, o pruneOptions) (pruneReport, error) {
	rep, err := pruneEach(ctx, st, o)
	if !o.DryRun && len(rep.Pruned) > 0 {
		rep.Log = emptyStoreLog(ctx, st)
	}
	return rep, err
}

// pruneEach prunes the runs that qualify, as pruneRuns.
func pruneEach(ctx context.Context, st store.Store, o pruneOptions) (pruneReport, error) {
	rep := pruneReport{DryRun: o.DryRun, Pruned: []prunedRun{}, Skipped: []skippedRun{}, Held: []skippedRun{}, Elsewhere: []skippedRun{}}
	pr, ok := store.PrunerOf(st)
	if !ok {
		return rep, fmt.Errorf("this store cannot prune runs")
	}
	workers := max(o.Parallel, 1)
	var batch []string // candidates, in creation order, taken a batch at a time
	flush := func() error {
		for len(batch) > 0 {
			n := min(len(batch), workers)
			if o.Limit > 0 {
				n = min(n, o.Limit-len(rep.Pruned))
			}
			if n <= 0 {
				batch = nil
				return nil
			}
			if o.Between != nil && !o.Between() {
				batch = nil
				rep.Stopped = true
				return nil
			}
			outs := make([]pruneOutcome, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { outs[i] = pruneRun(ctx, st, pr, batch[i], o) })
			}
			wg.Wait()
			// Reported in creation order; the first error stops prune,
			// after the runs before it.
			for i, out := range outs {
				if out.err != nil {
					return fmt.Errorf("run %s: %w", batch[i], out.err)
				}
				rep.add(batch[i], out)
			}
			batch = batch[n:]
		}
		return nil
	}
	// The runs that qualify, a page at a time, found by the store where
	// it can (store.PrunableRuns).
	const page = 500
	after := ""
	for {
		runs, err := store.PrunableRuns(ctx, st, o.Before, after, page)
		if err != nil {
			return rep, err
		}
		for _, r := range runs {
			if (o.Limit > 0 && len(rep.Pruned) >= o.Limit) || rep.Stopped {
				return rep, nil
			}
			if batch = append(batch, r.ID); len(batch) == workers {
				if err := flush(); err != nil {
					return rep, err
				}
			}
		}
		if len(runs) < page {
			return rep, flush()
		}
		after = runs[len(runs)-1].ID
	}
}

// pruneOutcome is what pruneRun did with one run: pruned it (p), left it
// (reason), kept it (held, with a reason), or found it pruned by another
// prune (elsewhere, with a reason); err stops prune (the store or the
// disk failed).
type pruneOutcome struct {
	p         prunedRun
	reason    string
	held      bool
	elsewhere bool
	err       error
}

// add files one run's outcome into the report.
func (r *pruneReport) add(runID string, out pruneOutcome) {
	switch {
	case out.held:
		r.Held = append(r.Held, skippedRun{RunID: runID, Reason: out.reason})
	case out.elsewhere:
		r.Elsewhere = append(r.Elsewhere, skippedRun{RunID: runID, Reason: out.reason})
	case out.reason != "":
		r.Skipped = append(r.Skipped, skippedRun{RunID: runID, Reason: out.reason})
	default:
		p := out.p
		r.Pruned = append(r.Pruned, p)
		k := &r.Kept
		k.Events += p.Kept.Events
		k.Intents += p.Kept.Intents
		k.Attempts += p.Kept.Attempts
		k.Receipts += p.Kept.Receipts
		k.Grants += p.Kept.Grants
		k.Inbox += p.Kept.Inbox
		k.Trace += p.Kept.Trace
	}
}

// pruneRun archives and prunes one run.
func pruneRun(ctx context.Context, st store.Store, pr store.Pruner, runID string, o pruneOptions) pruneOutcome {
	a, err := archive.Read(ctx, st, runID)
	// The record is read a part at a time, and another prune may remove
	// it meanwhile (in one transaction). Asked afterwards: not pruned now
	// means not pruned before any part was read, so the record read is
	// whole; pruned means there is nothing left to do.
	if out, gone := prunedMeanwhile(ctx, pr, runID, ""); gone {
		return out
	}
	if err != nil {
		return pruneOutcome{err: err}
	}
	for _, in := range a.Record.Intents {
		if in.Outbox != store.OutboxDone && !o.Abandoned {
			return pruneOutcome{reason: fmt.Sprintf("effect %s is %s (%s): the store keeps a run until each of its effects is closed, or prune --abandoned takes it open", in.ID, in.Outbox, in.Route), held: true}
		}
	}
	rep, _, err := verify.Record(ctx, nil, nil, a.Record)
	if err != nil {
		return pruneOutcome{err: err}
	}
	if !rep.OK() {
		f := rep.Findings[0]
		return pruneOutcome{reason: fmt.Sprintf("its record fails verification (%d findings; first: %s at %s: %s)", len(rep.Findings), f.Check, f.Where, f.Detail)}
	}
	doc, err := archive.Encode(a)
	if err != nil {
		return pruneOutcome{err: err}
	}
	p := prunedRun{RunID: runID, Outcome: a.Record.Run.Outcome, Bytes: len(doc), Kept: a.Counts(), Open: a.Open()}
	if o.Dir != "" {
		p.Archive = store.BodyDigest(doc)
		p.File = filepath.Join(o.Dir, archiveFileName(runID, o.Compress))
	}
	if o.DryRun {
		return pruneOutcome{p: p}
	}
	if p.File != "" {
		file := doc
		if o.Compress {
			file = archive.Compress(doc)
		}
		// An archive written before (by a prune interrupted before the
		// store removed the record) is the same when it holds doc: a
		// sealed file is new bytes each time (a fresh nonce), so it is
		// compared opened and decompressed.
		same := func(old []byte) bool { return bytes.Equal(old, file) }
		if o.Sealer != nil {
			plain := file
			if file, err = o.Sealer.Seal(archiveSealRef, plain); err != nil {
				return pruneOutcome{err: err}
			}
			same = func(old []byte) bool {
				opened, err := o.Sealer.Open(archiveSealRef, old)
				return err == nil && bytes.Equal(opened, plain)
			}
		}
		p.FileBytes = len(file)
		if why, err := writeArchive(p.File, file, same, o.cut); err != nil || why != "" {
			return pruneOutcome{reason: why, err: err}
		}
		o.cut("prune-archive-written")
	}
	err = pr.Prune(ctx, a.Pruning(p.Archive))
	if store.CodeOf(err) == store.CodeInvalidTransition {
		if out, gone := prunedMeanwhile(ctx, pr, runID, p.Archive); gone {
			return out
		}
	}
	if c := store.CodeOf(err); c == store.CodeHeadMismatch || c == store.CodeInvalidTransition {
		// The run changed since it was read, or was pruned meanwhile: the
		// archive written is left for the next prune to find the same.
		return pruneOutcome{reason: fmt.Sprintf("the store refused: %v", err)}
	}
	return pruneOutcome{p: p, err: err}
}

// prunedMeanwhile reports whether the store holds a pruning of runID (one
// another prune made while this one had the run in hand), and the outcome
// to report for it. ours is the digest of the archive this prune wrote,
// if it got so far, reported beside the other's when they differ.
func prunedMeanwhile(ctx context.Context, pr store.Pruner, runID, ours string) (pruneOutcome, bool) {
	p, err := pr.Pruning(ctx, runID)
	switch {
	case store.CodeOf(err) == store.CodeNotFound:
		return pruneOutcome{}, false
	case err != nil:
		return pruneOutcome{err: err}, true
	}
	why := "another prune removed the record meanwhile"
	switch {
	case p.Archive == "":
		why += ", discarding it"
	case ours != "" && p.Archive != ours:
		why += fmt.Sprintf(", archived as %s (this prune wrote %s)", p.Archive, ours)
	default:
		why += ", archived as " + p.Archive
	}
	return pruneOutcome{reason: why, elsewhere: true}, true
}

// archiveSealRef is what a sealed archive file is bound to.
var archiveSealRef = store.SealRef{Kind: store.SealArchive}

// writeArchive writes doc to path durably: a temporary file in the same
// directory, synced, renamed over path, and the directory synced. An
// existing file that holds the same archive (same says so: from a prune
// interrupted before the store removed the record) is kept; one with
// another is never overwritten, and the reason says so. The file is read
// back to check it holds the bytes written (Encode's, which decode to the
// archive: its tests hold it to that).
func writeArchive(path string, doc []byte, same func(old []byte) bool, cut func(string)) (reason string, err error) {
	switch old, err := os.ReadFile(path); {
	case err == nil && same(old):
		return "", nil
	case err == nil:
		return fmt.Sprintf("%s exists with other content", path), nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".prune-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(doc); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	cut("prune-archive-temp")
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	if err := syncDir(dir); err != nil {
		return "", err
	}
	back, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(back, doc) {
		return "", fmt.Errorf("%s reads back other bytes than were written", path)
	}
	return "", nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
