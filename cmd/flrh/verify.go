package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

func init() {
	vc := &cobra.Command{
		Use:   "verify RUN... | --all",
		Short: "Check a run's durable record independently of the runner that wrote it",
		Long: `verify opens the store read-only and checks, for each run: canonical bytes,
digests and the event hash chain; every control record re-stepped through the
FSM table; intents as valid protocol objects bound to their idempotency keys and
to the exact grants they consumed; receipts bound to their intents; attempts,
outbox and receipts coherent; fencing generations; and, for an ended run, that
every effect it owes is closed. With --all it checks every run in the store.
Several runs are checked at once, one per CPU; reports come in the order the
runs were named (with --all, the order they were created). Exit status 1 if
any check fails.

--archive FILE checks a pruned run's archive instead (with --store, also that
the store names it). --archive-dir DIR audits a directory of archives against
the store: every run the store pruned with an archive must have its file there
(RUN` + archiveSuffix + `, or .gz), verify, and have the digest the pruning
names; a missing or failing archive fails the audit, and files no pruning
names are listed.`,
	}
	vStore := addStoreFlag(vc)
	vJSON := vc.Flags().Bool("json", false, "print the reports as JSON")
	vAll := vc.Flags().Bool("all", false, "verify every run in the store")
	vArchives := vc.Flags().StringArray("archive", nil, "verify a run's archive (flrh store prune) instead of a stored run; with --store, also that the store's header and pruning name it (repeatable)")
	vArchiveDir := vc.Flags().String("archive-dir", "", "audit a directory of archives against the store's prunings: none missing, each verified and named by its pruning")
	vc.Args = func(cmd *cobra.Command, args []string) error {
		if *vArchiveDir != "" {
			if *vAll || len(args) > 0 || len(*vArchives) > 0 {
				return usagef("--archive-dir audits a directory alone: give no runs, --all or --archive")
			}
			return nil
		}
		if len(*vArchives) > 0 {
			if *vAll || len(args) > 0 {
				return usagef("give archives or runs, not both")
			}
			return nil
		}
		return runsArgs(vAll)(cmd, args)
	}
	vc.RunE = func(cmd *cobra.Command, args []string) error {
		defer collectorTarget(checkGCPercent)()
		if *vArchiveDir != "" {
			return verifyArchiveDir(cmd.Context(), cmd.OutOrStdout(), *vStore, *vArchiveDir, *vJSON)
		}
		if len(*vArchives) > 0 {
			spec := ""
			if cmd.Flags().Changed("store") {
				spec = *vStore
			}
			return verifyArchives(cmd.Context(), cmd.OutOrStdout(), *vArchives, spec, *vJSON)
		}
		st, err := openStore(cmd.Context(), *vStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		ids, _, err := runIDs(cmd.Context(), st, args, *vAll)
		if err != nil {
			return err
		}
		for _, id := range args {
			if _, err := readRun(cmd.Context(), st, id); err != nil {
				return err
			}
		}
		reports, verr := verify.Many(cmd.Context(), st, nil, ids)
		// One write for all the reports, not one or more per run.
		out := bufio.NewWriter(cmd.OutOrStdout())
		defer out.Flush()
		failed := false
		for _, rep := range reports {
			failed = failed || !rep.OK()
			if !*vJSON {
				printVerify(out, rep)
			}
		}
		if verr != nil {
			return verr
		}
		if *vJSON {
			if reports == nil {
				reports = []*verify.Report{}
			}
			if err := writeIndented(out, reports); err != nil {
				return err
			}
		}
		if failed {
			return errChecksFailed
		}
		return nil
	}
	rootCmd.AddCommand(vc)

	rc := &cobra.Command{
		Use:   "replay RUN... | --all",
		Short: "Re-execute a run's pure steps from its accepted inputs and compare every result",
		Long: `replay verifies each run as verify does, then feeds its accepted inputs to
the workflow's pure Decide again and compares every planned effect and the
final state with the record. Several runs are checked at once, one per CPU;
results come in the order the runs were named (with --all, the order they
were created). Exit status 1 if anything differs.`,
	}
	rStore := addStoreFlag(rc)
	rWorkflows := addWorkflowsFlag(rc)
	rAll := rc.Flags().Bool("all", false, "replay every run in the store")
	rJSON := rc.Flags().Bool("json", false, "print the reports as JSON")
	rArchives := rc.Flags().StringArray("archive", nil, "replay a run's archive (flrh store prune) instead of a stored run (repeatable)")
	rc.Args = func(cmd *cobra.Command, args []string) error {
		if len(*rArchives) > 0 {
			if *rAll || len(args) > 0 {
				return usagef("give archives or runs, not both")
			}
			return nil
		}
		return runsArgs(rAll)(cmd, args)
	}
	rc.RunE = func(cmd *cobra.Command, args []string) error {
		defer collectorTarget(checkGCPercent)()
		ctx := cmd.Context()
		c, err := loadCatalog(*rWorkflows, len(*rWorkflows) > 0, "")
		if err != nil {
			return err
		}
		var results []verify.Checked
		var resolveErr error
		if len(*rArchives) > 0 {
			results, resolveErr, err = replayArchives(ctx, c, *rArchives)
			return printReplays(cmd.OutOrStdout(), results, err, resolveErr, *rJSON)
		}
		st, err := openStore(ctx, *rStore, true)
		if err != nil {
			return err
		}
		defer st.Close()
		ids, listed, err := runIDs(ctx, st, args, *rAll)
		if err != nil {
			return err
		}
		// Workflows are resolved first, in order; a run whose workflow is
		// not loaded stops there, after the runs before it are reported.
		var jobs []verify.Job
		for i, id := range ids {
			var run store.Run
			if listed != nil {
				run = listed[i] // --all: the header the listing read
			} else if run, err = readRun(ctx, st, id); err != nil {
				resolveErr = err
				break
			}
			cd, ok := c.forRun(ctx, st, run, false)
			if !ok {
				resolveErr = notLoaded(run)
				break
			}
			jobs = append(jobs, verify.Job{RunID: id, Workflow: cd.wf})
		}
		results, err = verify.CheckMany(ctx, st, nil, jobs)
		return printReplays(cmd.OutOrStdout(), results, err, resolveErr, *rJSON)
	}
	rootCmd.AddCommand(rc)
}

// checkGCPercent is the collector's target while verify or replay checks
// runs. What a check keeps live is small (a run's record and the state it
// replays, a few megabytes per worker), while it allocates tens of
// megabytes a second as it reads and re-decides: at the default target
// the heap doubles past that small live set many times a second and the
// collector's cycles and assists take about a quarter of the CPU. At 400
// the heap may grow to five times the live set before a cycle, which
// stays small next to the store's pages (BenchmarkVerifyMany: +30 % or
// more events per CPU-second; see docs/performance/runner.md).
const checkGCPercent = 400

// notLoaded says a recorded run's workflow is not among those loaded.
func notLoaded(run store.Run) error {
	return fmt.Errorf("run %s uses workflow %s@%s, which is not loaded (give the same --workflows it was started with)", run.ID, run.WorkflowID, run.WorkflowVersion)
}

func printVerify(w io.Writer, rep *verify.Report) {
	if p := rep.Pruned; p != nil {
		kept := "discarded"
		if p.Archive != "" {
			kept = "archived as " + p.Archive + " (check it with flrh verify --archive FILE)"
		}
		fmt.Fprintf(w, "run %s: pruned at %s — %s, outcome %s; its record was %s\n",
			rep.RunID, p.At.Format(time.RFC3339), rep.State, rep.Outcome, kept)
		return
	}
	verdict := "verified"
	if !rep.OK() {
		verdict = fmt.Sprintf("FAILED (%d findings)", len(rep.Findings))
	}
	outcome := "no outcome yet"
	if rep.Outcome != "" {
		outcome = "outcome " + rep.Outcome
	}
	concurring := ""
	if rep.Concurring > 0 {
		concurring = fmt.Sprintf(" and %d more for a quorum", rep.Concurring)
	}
	fmt.Fprintf(w, "run %s: %s — %s, %s; %d events, %d control records, %d intents, %d receipts, %d approvals consumed%s\n",
		rep.RunID, verdict, rep.State, outcome, rep.Events, rep.Controls, rep.Intents, rep.Receipts, rep.Approvals, concurring)
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %s at %s: %s\n", f.Check, f.Where, f.Detail)
	}
}

// runsArgs accepts run ids, or none with --all.
func runsArgs(all *bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case *all && len(args) > 0:
			return usagef("give run ids or --all, not both")
		case !*all && len(args) == 0:
			return usagef("give at least one run id, or --all")
		}
		return nil
	}
}

// runIDs returns the runs named, or with all every run in the store in the
// order they were created, with the headers the listing read (which name
// each run's workflow, for replay to resolve without reading each run's
// header again).
func runIDs(ctx context.Context, st store.Store, args []string, all bool) ([]string, []store.Run, error) {
	if !all {
		return args, nil, nil
	}
	var ids []string
	runs := []store.Run{} // not nil: the headers were listed
	after := ""
	for {
		page, err := st.Runs(ctx, after, 1000)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range page {
			ids = append(ids, r.ID)
		}
		runs = append(runs, page...)
		if len(page) < 1000 {
			return ids, runs, nil
		}
		after = page[len(page)-1].ID
	}
}

// verifyArchives verifies each archive file as verify does a stored run,
// and, with a store (spec not ""), that the store holds the run's header
// at the archive's head hash and, if it pruned the run, names this
// archive's digest.
func verifyArchives(ctx context.Context, w io.Writer, files []string, spec string, asJSON bool) error {
	var st store.Store
	if spec != "" {
		var err error
		if st, err = openStore(ctx, spec, true); err != nil {
			return err
		}
		defer st.Close()
	}
	out := bufio.NewWriter(w)
	defer out.Flush()
	reports := []*verify.Report{}
	failed := false
	for _, f := range files {
		rep, err := checkArchiveFile(ctx, st, f, "")
		if err != nil {
			return err
		}
		failed = failed || !rep.OK()
		if asJSON {
			reports = append(reports, rep)
		} else {
			printVerify(out, rep)
		}
	}
	if asJSON {
		if err := writeIndented(out, reports); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

// checkArchiveFile reads the archive in file f, decodes it and verifies
// its record as verify does a stored run. With a store (st not nil) it
// also checks what ties the archive to the store's run
// (checkArchiveBinding), unless want names a run and the file holds
// another, which is the finding instead.
func checkArchiveFile(ctx context.Context, st store.Store, f, want string) (*verify.Report, error) {
	doc, err := readArchiveFile(f)
	if err != nil {
		return nil, err
	}
	a, err := archive.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	rep, _, err := verify.Record(ctx, nil, nil, a.Record)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f, err)
	}
	switch {
	case want != "" && a.Record.Run.ID != want:
		rep.Findings = append(rep.Findings, verify.Finding{Check: "archive-binding", Where: f, Detail: fmt.Sprintf("the file holds run %s, not %s", a.Record.Run.ID, want)})
	case st != nil:
		if err := checkArchiveBinding(ctx, st, rep, a, store.BodyDigest(doc)); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return rep, nil
}

// checkArchiveBinding adds to rep what ties the archive (its document's
// digest) to the store's run, or fails to.
func checkArchiveBinding(ctx context.Context, st store.Store, rep *verify.Report, a *archive.Archive, digest string) error {
	const check = "archive-binding"
	id := a.Record.Run.ID
	run, err := st.Run(ctx, id)
	switch {
	case store.CodeOf(err) == store.CodeNotFound:
		rep.Findings = append(rep.Findings, verify.Finding{Check: check, Where: "run " + id, Detail: "the store holds no such run"})
		return nil
	case err != nil:
		return err
	}
	if run.HeadHash != a.Record.Run.HeadHash {
		rep.Findings = append(rep.Findings, verify.Finding{Check: check, Where: "run " + id,
			Detail: fmt.Sprintf("the store's run is at head hash %s, the archive's %s", run.HeadHash, a.Record.Run.HeadHash)})
	}
	pr, ok := store.PrunerOf(st)
	if !ok {
		return nil
	}
	switch p, err := pr.Pruning(ctx, id); {
	case store.CodeOf(err) == store.CodeNotFound:
	case err != nil:
		return err
	case p.Archive != digest:
		kept := "discarded its record"
		if p.Archive != "" {
			kept = "names archive " + p.Archive
		}
		rep.Findings = append(rep.Findings, verify.Finding{Check: check, Where: "run " + id,
			Detail: fmt.Sprintf("the store's pruning %s, not this one (%s)", kept, digest)})
	case p.Kept != a.Counts():
		rep.Findings = append(rep.Findings, verify.Finding{Check: check, Where: "run " + id,
			Detail: fmt.Sprintf("the store pruned %+v, the archive holds %+v", p.Kept, a.Counts())})
	}
	return nil
}

// printReplays prints replay's results (checking, then resolving, failed
// with err and resolveErr after them) and says how replay exits.
func printReplays(w io.Writer, results []verify.Checked, err, resolveErr error, asJSON bool) error {
	out := bufio.NewWriter(w) // as verify's
	defer out.Flush()
	failed := false
	type replayJSON struct {
		RunID     string               `json:"run_id"`
		Identical bool                 `json:"identical"`
		Verify    *verify.Report       `json:"verify"`
		Replay    *verify.ReplayReport `json:"replay"`
	}
	reports := []replayJSON{}
	for _, r := range results {
		ver, rep := r.Report, r.Replay
		ok := rep.OK() && ver.OK()
		failed = failed || !ok
		if asJSON {
			reports = append(reports, replayJSON{RunID: rep.RunID, Identical: ok, Verify: ver, Replay: rep})
			continue
		}
		if rep.Pruned {
			fmt.Fprintf(out, "run %s: pruned — its record is no longer in the store; nothing replayed\n", rep.RunID)
			continue
		}
		verdict := "identical"
		if !ok {
			verdict = "DIFFERS"
		}
		fmt.Fprintf(out, "run %s: %s — %d inputs, %d effects, %d control records re-stepped; state %s\n",
			rep.RunID, verdict, rep.Inputs, rep.Effects, ver.Controls, rep.State)
		for _, f := range append(ver.Findings, rep.Findings...) {
			fmt.Fprintf(out, "  %s at %s: %s\n", f.Check, f.Where, f.Detail)
		}
	}
	if asJSON && err == nil && resolveErr == nil {
		if err := writeIndented(out, reports); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if resolveErr != nil {
		return resolveErr
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

// replayArchives replays each archive file with the workflow its run was
// started with, as replay does a stored run; a run whose workflow is not
// loaded stops there (resolveErr), after the archives before it.
func replayArchives(ctx context.Context, c *catalog, files []string) (results []verify.Checked, resolveErr, err error) {
	for _, f := range files {
		doc, err := readArchiveFile(f)
		if err != nil {
			return results, nil, err
		}
		a, err := archive.Decode(doc)
		if err != nil {
			return results, nil, fmt.Errorf("%s: %w", f, err)
		}
		run := a.Record.Run
		if run.WorkflowDigest == "" && a.Record.HasCheckpoint {
			run.WorkflowDigest = checkpointDigest(a.Record.Checkpoint.Body)
		}
		cd, ok := c.forRun(ctx, nil, run, false)
		if !ok {
			return results, fmt.Errorf("%s: %w", f, notLoaded(run)), nil
		}
		rep, rp, err := verify.Record(ctx, nil, cd.wf, a.Record)
		if err != nil {
			return results, nil, fmt.Errorf("%s: %w", f, err)
		}
		results = append(results, verify.Checked{Report: rep, Replay: rp})
	}
	return results, nil, nil
}

// readArchiveFile reads the archive document in the file at path: as it
// is, opened with the store's keyring (--encryption-key-file or
// FLRH_ENCRYPTION_KEY) when prune sealed it, and decompressed when prune
// compressed it (--compress).
func readArchiveFile(path string) ([]byte, error) {
	b, err := openArchiveFile(path)
	if err != nil || !archive.IsCompressed(b) {
		return b, err
	}
	doc, err := archive.Decompress(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// openArchiveFile reads the file at path, opened with the store's keyring
// when sealed: the document, or the document compressed.
func openArchiveFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || !store.IsSealed(b) {
		return b, err
	}
	sealer, err := storeSealer()
	if err != nil {
		return nil, err
	}
	if sealer == nil {
		return nil, usagef("%s is encrypted (pruned from a store encrypted at rest); give the store's key: --encryption-key-file FILE or %s", path, encryptionKeyEnv)
	}
	doc, err := sealer.Open(archiveSealRef, b)
	if err != nil {
		return nil, fmt.Errorf("%s: the encrypted archive does not open: %w", path, err)
	}
	return doc, nil
}

// writeIndented writes v to out as indented JSON and flushes it.
func writeIndented(out *bufio.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return out.Flush()
}
