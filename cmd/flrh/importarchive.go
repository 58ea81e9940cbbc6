package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"flrh.dev/flrh/archive"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/verify"
)

// archiveFilesIn lists the archive files in dir (RUN.flrh-archive.json,
// or .gz), by name.
func archiveFilesIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && (strings.HasSuffix(n, archiveSuffix) || strings.HasSuffix(n, archiveSuffix+".gz")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// archiveFiles expands paths, each an archive file or a directory of
// them, into the archive files they name, a directory's by name. A path
// that is not there is the caller's mistake.
func archiveFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, usagef("--archive %s: %v", p, err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		names, err := archiveFilesIn(p)
		if err != nil {
			return nil, usagef("--archive %s: %v", p, err)
		}
		for _, n := range names {
			files = append(files, filepath.Join(p, n))
		}
	}
	return files, nil
}

// loadedArchive is an archive file read, decoded and verified: the run it
// holds and its document's digest (what a pruning names).
type loadedArchive struct {
	path   string
	a      *archive.Archive
	digest string
	size   int64 // the document's bytes
}

// loadArchive reads and decodes the archive in file path and, with
// check, verifies it as flrh verify --archive does. why says why the file
// is left ("" when it is not): it cannot be read, is not an archive, or
// its record does not verify. An error is one the whole import stops at:
// a sealed archive with no key given.
func loadArchive(ctx context.Context, path string, check bool) (l loadedArchive, why string, err error) {
	doc, err := readArchiveFile(path)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return l, "", err
	case err != nil:
		return l, fmt.Sprintf("it cannot be read: %v", err), nil
	}
	a, err := archive.Decode(doc)
	if err != nil {
		return l, fmt.Sprintf("it is not an archive: %v", err), nil
	}
	l = loadedArchive{path: path, a: a, digest: store.BodyDigest(doc), size: int64(len(doc))}
	if !check {
		return l, "", nil
	}
	rep, _, err := verify.Record(ctx, nil, nil, a.Record)
	if err != nil {
		return l, fmt.Sprintf("it cannot be verified: %v", err), nil
	}
	if !rep.OK() {
		f := rep.Findings[0]
		return l, fmt.Sprintf("its record does not verify (%d findings; the first, %s at %s: %s): flrh verify --archive %s says more",
			len(rep.Findings), f.Check, f.Where, f.Detail, path), nil
	}
	return l, "", nil
}

// importArchives takes the runs the archives at paths hold (files, or
// directories of them) into dst whole, as flrh store import --archive:
// every archive read and verified first, then the runs imported in the
// order they were created. A run dst holds at the archive's head hash is
// imported before, unless dst pruned it into this archive (PrunedHere: it
// keeps the run's header and keys, and the archive, not dst, is where its
// record is read) or into another (left). A run of the archive's id dst
// holds at another head hash, an archive that does not verify, and a
// second archive of one run with other contents are left. With dryRun,
// nothing is written.
func importArchives(ctx context.Context, dst store.Store, paths []string, dryRun bool) (importReport, error) {
	rep := newImportReport(dryRun)
	rep.fromArchives = true
	imp, ok := store.RunImporterOf(dst)
	if !ok {
		return rep, usagef("this store cannot take whole runs in")
	}
	files, err := archiveFiles(paths)
	if err != nil {
		return rep, err
	}
	// The first pass verifies each archive and keeps what orders it, and
	// the archive decoded while their documents' bytes come to no more
	// than keepDecoded, so that a directory of any size is not held in
	// memory; the second reads again each archive not kept as it imports
	// it.
	kept := int64(0)
	var runs []foundArchive
	byRun := map[string]foundArchive{}
	for _, f := range files {
		l, why, err := loadArchive(ctx, f, true)
		if err != nil {
			return rep, err
		}
		if why != "" {
			rep.Left = append(rep.Left, skippedRun{File: f, Reason: why})
			continue
		}
		run := l.a.Record.Run
		if seen, dup := byRun[run.ID]; dup {
			if seen.digest != l.digest {
				rep.Left = append(rep.Left, skippedRun{RunID: run.ID, File: f, Reason: fmt.Sprintf("%s holds run %s too, with other contents", seen.path, run.ID)})
			}
			continue // the same run twice (compressed and not, say): one import
		}
		fd := foundArchive{path: f, run: run.ID, head: run.HeadHash, digest: l.digest, created: run.CreatedAt}
		byRun[run.ID] = fd // without the archive: runs alone holds it, until it is imported
		if kept+l.size <= keepDecoded {
			kept += l.size
			fd.a = l.a
		}
		runs = append(runs, fd)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].created.Equal(runs[j].created) {
			return runs[i].created.Before(runs[j].created)
		}
		return runs[i].run < runs[j].run
	})
	for i := range runs {
		fd := &runs[i]
		left := func(why string) { rep.Left = append(rep.Left, skippedRun{RunID: fd.run, File: fd.path, Reason: why}) }
		got, err := dst.Run(ctx, fd.run)
		switch {
		case store.CodeOf(err) == store.CodeNotFound:
		case err != nil:
			return rep, err
		case got.HeadHash == fd.head:
			p, err := store.PruningOf(ctx, dst, got)
			switch {
			case err != nil:
				return rep, err
			case p != nil && p.Archive == fd.digest:
				rep.PrunedHere = append(rep.PrunedHere, fd.run)
			case p != nil:
				left("this store pruned it, and its pruning names another archive or none")
			default:
				rep.Already = append(rep.Already, fd.run)
			}
			continue
		default:
			left("this store holds another run of this id")
			continue
		}
		if dryRun {
			rep.Archived = append(rep.Archived, fd.run)
			continue
		}
		a := fd.a
		if a == nil {
			// Read again, the document is the one verified when it has
			// the same digest.
			l, why, err := loadArchive(ctx, fd.path, false)
			switch {
			case err != nil:
				return rep, err
			case why != "":
				left(why + " (on reading it again)")
				continue
			case l.digest != fd.digest:
				left("it changed while it was being imported")
				continue
			}
			a = l.a
		}
		imported, err := imp.ImportRun(ctx, a.Whole())
		fd.a = nil // imported: not held to the end
		if err := tally(&rep, &rep.Archived, fd.run, imported, err); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// foundArchive is what importArchives keeps of an archive file between
// its two passes: where it is, the run it holds (id, head hash, creation
// time) and its document's digest.
type foundArchive struct {
	path, run, head, digest string
	created                 time.Time
	a                       *archive.Archive // decoded, when kept
}

// keepDecoded bounds the bytes of the archive documents whose decoded
// archives importArchives keeps between its passes: kept, an archive is
// decoded once instead of twice (0.3 ms of a refund run's 1.8 ms import).
var keepDecoded int64 = 64 << 20
