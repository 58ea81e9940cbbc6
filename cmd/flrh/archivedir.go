package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

// archiveDirReport is what verify --archive-dir found: each archive the
// store's prunings name, verified and bound to the store; the ones
// missing from the directory; and the files there no pruning names.
type archiveDirReport struct {
	Reports []*verify.Report `json:"reports"`
	// Missing are pruned runs whose pruning names an archive the
	// directory does not hold.
	Missing []skippedRun `json:"missing"`
	// Unclaimed are archive files of runs the store holds no pruning of
	// with their digest: left by a prune killed before the store removed
	// the record (the next prune finds the same archive), or of another
	// store. Reported, not failures.
	Unclaimed []string `json:"unclaimed"`
	Discarded int      `json:"discarded"` // pruned runs whose record was discarded: nothing to find
}

// OK reports whether every named archive is present and verifies.
func (r *archiveDirReport) OK() bool {
	if len(r.Missing) > 0 {
		return false
	}
	for _, rep := range r.Reports {
		if !rep.OK() {
			return false
		}
	}
	return true
}

func (r *archiveDirReport) print(w io.Writer) {
	for _, rep := range r.Reports {
		printVerify(w, rep)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "run %s: MISSING — %s\n", m.RunID, m.Reason)
	}
	for _, f := range r.Unclaimed {
		fmt.Fprintf(w, "unclaimed %s: no pruning in the store names it\n", f)
	}
	fmt.Fprintf(w, "%d archives checked, %d missing, %d unclaimed files; %d pruned runs were discarded\n",
		len(r.Reports), len(r.Missing), len(r.Unclaimed), r.Discarded)
}

// auditArchiveDir checks dir against every pruning the store holds: each
// run pruned with an archive has its file in dir (RUN.flrh-archive.json,
// or .gz), whose document verifies as flrh verify --archive checks it and
// has the digest the pruning names.
func auditArchiveDir(ctx context.Context, st store.Store, dir string) (archiveDirReport, error) {
	rep := archiveDirReport{Reports: []*verify.Report{}, Missing: []skippedRun{}, Unclaimed: []string{}}
	pr, ok := store.PrunerOf(st)
	if !ok {
		return rep, usagef("this store does not prune runs")
	}
	names, err := archiveFilesIn(dir)
	if err != nil {
		return rep, err
	}
	files := map[string]bool{} // the archive files in dir, by name
	for _, n := range names {
		files[n] = true
	}
	err = walkPrunings(ctx, st, pr, func(r store.Run, p *store.Pruning) error {
		switch {
		case p == nil:
			return nil
		case p.Archive == "":
			rep.Discarded++
			return nil
		}
		var name string
		for _, n := range []string{archiveFileName(r.ID, false), archiveFileName(r.ID, true)} {
			if files[n] {
				delete(files, n)
				if name == "" {
					name = n
				}
			}
		}
		if name == "" {
			base := archiveFileName(r.ID, false)
			rep.Missing = append(rep.Missing, skippedRun{RunID: r.ID, Reason: fmt.Sprintf("its pruning names archive %s; %s holds no %s or %s.gz", p.Archive, dir, base, base)})
			return nil
		}
		vr, err := checkArchiveFile(ctx, st, filepath.Join(dir, name), r.ID)
		if err != nil {
			return err
		}
		rep.Reports = append(rep.Reports, vr)
		return nil
	})
	if err != nil {
		return rep, err
	}
	for n := range files {
		rep.Unclaimed = append(rep.Unclaimed, filepath.Join(dir, n))
	}
	sort.Strings(rep.Unclaimed)
	return rep, nil
}

// verifyArchiveDir is flrh verify --archive-dir.
func verifyArchiveDir(ctx context.Context, w io.Writer, spec, dir string, asJSON bool) error {
	st, err := openStore(ctx, spec, true)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := auditArchiveDir(ctx, st, dir)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(w)
	defer out.Flush()
	if asJSON {
		if err := writeIndented(out, rep); err != nil {
			return err
		}
	} else {
		rep.print(out)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if !rep.OK() {
		return errChecksFailed
	}
	return nil
}
