package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

// backupLayout names scheduled backups: flrh-TIME.db, TIME in UTC, so that
// names sort as times do and the newest is the last.
const (
	backupPrefix = "flrh-"
	backupLayout = "20060102T150405Z"
	backupExt    = ".db"
)

// backupSchedule backs an embedded store up into dir every interval, for
// flrh serve, keeping the newest keep backups. The next backup is due
// every after the newest one in dir (at once when there is none, or when
// it is overdue), so a process that restarts more often than every still
// backs up on time. A backup that fails is tried again after retry.
type backupSchedule struct {
	st    *sqlite.Store
	dir   string
	every time.Duration
	retry time.Duration
	keep  int
	log   *slog.Logger
	now   func() time.Time

	taken  *prometheus.CounterVec // by outcome: ok, failed
	lastOK prometheus.Gauge       // when the last backup that succeeded finished
}

func newBackupSchedule(st *sqlite.Store, dir string, every time.Duration, keep int, log *slog.Logger) *backupSchedule {
	return &backupSchedule{st: st, dir: dir, every: every, retry: min(every, 5*time.Minute), keep: keep, log: log, now: time.Now,
		taken: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flrh_backups_total",
			Help: "Scheduled backups of the embedded store (flrh serve --backup-dir), by outcome: ok or failed."}, []string{"outcome"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "flrh_backup_last_success_timestamp_seconds",
			Help: "When the last scheduled backup that succeeded finished, in seconds since the epoch; 0 before one has."}),
	}
}

// register adds the schedule's metrics to reg.
func (b *backupSchedule) register(reg *prometheus.Registry) error {
	for _, c := range []prometheus.Collector{b.taken, b.lastOK} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	b.taken.WithLabelValues("ok")
	b.taken.WithLabelValues("failed")
	return nil
}

// backupTime reads the time in a scheduled backup's file name.
func backupTime(name string) (time.Time, bool) {
	if !strings.HasPrefix(name, backupPrefix) || !strings.HasSuffix(name, backupExt) {
		return time.Time{}, false
	}
	t, err := time.Parse(backupLayout, strings.TrimSuffix(strings.TrimPrefix(name, backupPrefix), backupExt))
	return t, err == nil
}

// backups lists the scheduled backups in dir, oldest first, and the
// partial files of scheduled backups that never finished.
func (b *backupSchedule) backups() (names, partial []string, err error) {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		n := e.Name()
		if _, ok := backupTime(strings.TrimSuffix(n, sqlite.PartialSuffix)); !ok || !e.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(n, sqlite.PartialSuffix) {
			partial = append(partial, n)
		} else {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, partial, nil
}

// due says when the next backup is due: every after the newest in dir, or
// now when there is none.
func (b *backupSchedule) due() (time.Time, error) {
	names, _, err := b.backups()
	if err != nil || len(names) == 0 {
		return b.now(), err
	}
	t, _ := backupTime(names[len(names)-1])
	return t.Add(b.every), nil
}

// run takes backups until ctx ends. Partial files left by a process killed
// mid-backup are removed first.
func (b *backupSchedule) run(ctx context.Context) {
	if _, partial, err := b.backups(); err == nil {
		for _, n := range partial {
			os.Remove(filepath.Join(b.dir, n))
		}
	}
	for {
		next, err := b.due()
		if err != nil {
			b.log.Error("scheduled backup: reading the backup directory", "dir", b.dir, "err", err.Error())
			next = b.now().Add(b.retry)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(0, next.Sub(b.now()))):
		}
		if err := b.once(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			b.taken.WithLabelValues("failed").Inc()
			b.log.Error("scheduled backup failed; trying again", "after", b.retry.String(), "err", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(b.retry):
			}
		}
	}
}

// once takes one backup, named for the time it starts, then removes all
// but the newest keep.
func (b *backupSchedule) once(ctx context.Context) error {
	start := b.now().UTC().Truncate(time.Second)
	name := backupPrefix + start.Format(backupLayout) + backupExt
	bk, err := b.st.Backup(ctx, filepath.Join(b.dir, name), sqlite.BackupOptions{})
	if store.CodeOf(err) == store.CodeExists {
		// Two in one second (a restart): the one there is this one.
		return nil
	}
	if err != nil {
		return err
	}
	b.taken.WithLabelValues("ok").Inc()
	b.lastOK.Set(float64(b.now().UnixNano()) / 1e9)
	b.log.Info("scheduled backup written", "path", bk.Path, "bytes", bk.Bytes, "runs", bk.Runs, "took", b.now().Sub(start).String())
	if err := b.rotate(); err != nil {
		// The backup is written; the older ones stay until the next.
		b.log.Warn("scheduled backup: removing older backups", "keep", b.keep, "err", err.Error())
	}
	return nil
}

// rotate removes all but the newest keep scheduled backups.
func (b *backupSchedule) rotate() error {
	names, _, err := b.backups()
	if err != nil {
		return err
	}
	var errs []error
	for len(names) > b.keep {
		if err := os.Remove(filepath.Join(b.dir, names[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		names = names[1:]
	}
	return errors.Join(errs...)
}
