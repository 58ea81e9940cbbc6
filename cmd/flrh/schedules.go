package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/schedule"
)

// readSchedules parses a schedules file.
func readSchedules(file string) ([]schedule.Spec, error) {
	return readConfig(file, schedule.Parse)
}

// scheduleReload reads flrh serve's schedules file again and puts it in
// place (Scheduler.Replace): on SIGHUP, and when the file changes.
type scheduleReload struct {
	file string
	s    *schedule.Scheduler
}

func (r scheduleReload) reload(log *slog.Logger) {
	specs, err := readSchedules(r.file)
	if err == nil {
		err = r.s.Replace(specs)
	}
	if err != nil {
		log.Warn("schedules kept as they were", "file", r.file, "err", err.Error())
		return
	}
	log.Info("schedules reloaded", "file", r.file, "schedules", len(specs))
}

func (r scheduleReload) fingerprint() [sha256.Size]byte {
	b, err := os.ReadFile(r.file)
	if err != nil {
		return sha256.Sum256([]byte(err.Error()))
	}
	return sha256.Sum256(b)
}

func (r scheduleReload) watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	watchChanges(ctx, every, r.fingerprint, func() { r.reload(log) })
}

func init() {
	var file string
	var count int
	check := &cobra.Command{Use: "check",
		Short: "Check a schedules file and show when each schedule is next due",
		Long: `check reads the schedules file as flrh serve --schedules would and lists
each schedule with its next times due, in its own time zone and in UTC, and
the id of the run each would start. No store is opened and nothing is
started. Exit status 2 when the file is wrong. (Whether the workflows it
names are loaded is checked by flrh serve.)`,
		Example: `  flrh schedule check --schedules schedules.yaml --count 5`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			specs, err := readSchedules(file)
			if err != nil {
				return usagef("--schedules %s: %v", file, err)
			}
			w := cmd.OutOrStdout()
			now := time.Now()
			for _, s := range specs {
				fmt.Fprintf(w, "schedule %s: %q in %s, starting %s\n", s.Name, s.Cron, zoneName(s.TimeZone), s.Workflow)
				at := now
				for range count {
					next, err := s.Next(at)
					if err != nil {
						return usagef("schedule %s: %v", s.Name, err)
					}
					if next.IsZero() {
						fmt.Fprintln(w, "  never again")
						break
					}
					fmt.Fprintf(w, "  %s (%s UTC)\n", next.Format("2006-01-02 15:04:05 MST"), next.UTC().Format(time.DateTime))
					at = next
				}
			}
			fmt.Fprintf(w, "flrh schedule check: %d schedules\n", len(specs))
			return nil
		}}
	check.Flags().StringVar(&file, "schedules", "", "the schedules file (JSON or YAML), as flrh serve --schedules takes")
	check.Flags().IntVar(&count, "count", 3, "how many times due to show for each schedule")
	check.MarkFlagRequired("schedules")
	group := &cobra.Command{Use: "schedule", Short: "Check the schedules that start runs on a calendar (see flrh serve --schedules)"}
	group.AddCommand(check)
	rootCmd.AddCommand(group)
}

func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}
