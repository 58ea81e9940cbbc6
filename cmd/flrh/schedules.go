package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/store/sqlite"
)

// readSchedules parses a schedules file.
func readSchedules(file string) ([]schedule.Spec, error) {
	return readConfig(file, schedule.Parse)
}

// scheduleReload reads flrh serve's schedules file again and puts it in
// place (Scheduler.Replace): on SIGHUP, and when the file changes.
func scheduleReload(file string, sc *schedule.Scheduler) fileReload {
	return fileReload{what: "schedules", file: file, apply: func() (int, error) {
		specs, err := readSchedules(file)
		if err == nil {
			err = sc.Replace(specs)
		}
		return len(specs), err
	}}
}

func init() {
	var file string
	var count int
	var workflows *[]string // --workflows, added below
	check := &cobra.Command{Use: "check",
		Short: "Check a schedules file and show when each schedule is next due",
		Long: `check reads the schedules file as flrh serve --schedules would and lists
each schedule with its next times due, in its own time zone and in UTC, and
the id of the run each would start. Nothing is started. With --workflows,
each schedule's run id and input for its next time due are also put to the
workflow it names, as flrh serve does at start (a store in a temporary
directory, written nothing): a workflow not loaded, or an input it would
refuse, is named. Exit status 2 when the file is wrong or a schedule's runs
would be refused.`,
		Example: `  flrh schedule check --schedules schedules.yaml --count 5
  flrh schedule check --schedules schedules.yaml --workflows ./workflows`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			specs, err := readSchedules(file)
			if err != nil {
				return usagef("--schedules %s: %v", file, err)
			}
			if cmd.Flags().Changed("workflows") {
				if err := checkSchedulesStart(cmd.Context(), specs, *workflows); err != nil {
					return usagef("--schedules %s: %v", file, err)
				}
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
			verdict := ""
			if cmd.Flags().Changed("workflows") {
				verdict = ", each one's next run taken by its workflow"
			}
			fmt.Fprintf(w, "flrh schedule check: %d schedules%s\n", len(specs), verdict)
			return nil
		}}
	workflows = addWorkflowsFlag(check)
	check.Flags().StringVar(&file, "schedules", "", "the schedules file (JSON or YAML), as flrh serve --schedules takes")
	check.Flags().IntVar(&count, "count", 3, "how many times due to show for each schedule")
	check.MarkFlagRequired("schedules")
	var url, tokenEnv, from, to string
	var force bool
	trigger := &cobra.Command{Use: "trigger NAME",
		Short: "Start a schedule's run for now, through a server (POST /v1/schedules/NAME/trigger)",
		Long: `trigger asks the server at --url to start the schedule's run for now, outside
its calendar, and prints what it did. The bearer token is read from the
variable --token-env names (FLRH_TOKEN), never from the command line; a
loopback server without tokens needs none. A schedule that runs one at a
time (overlap: skip) is not triggered while its latest run is going, unless
--force. Exit status 1 when the server refuses.`,
		Example: `  FLRH_TOKEN=... flrh schedule trigger nightly --url https://flrh.example.com`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/schedules/" + args[0] + "/trigger"
			if force {
				path += "?force=true"
			}
			return apiCall(cmd, "POST", url, tokenEnv, path, "")
		}}
	trigger.Flags().BoolVar(&force, "force", false, "start the run even while the schedule's latest is going, when it runs one at a time")
	backfill := &cobra.Command{Use: "backfill NAME --from TIME --to TIME",
		Short: "Start the runs a schedule missed in a range, through a server (POST /v1/schedules/NAME/backfill)",
		Long: `backfill asks the server at --url to start the run of every time the schedule
was due from --from to --to (RFC 3339, both included, --to not in the
future, at most 1,000 times) that has none — after an outage longer than
the schedule's catch-up window — and prints the runs started and those that
existed. Filling a range again starts nothing more. The bearer token is read
as trigger reads it.`,
		Example: `  flrh schedule backfill nightly --from 2026-12-01T00:00:00Z --to 2026-12-07T00:00:00Z --url http://127.0.0.1:7700`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range []struct{ flag, v string }{{"--from", from}, {"--to", to}} {
				if _, err := time.Parse(time.RFC3339, f.v); err != nil {
					return usagef("%s %q is not an RFC 3339 time (2026-12-07T02:00:00Z)", f.flag, f.v)
				}
			}
			body, _ := json.Marshal(map[string]string{"from": from, "to": to})
			return apiCall(cmd, "POST", url, tokenEnv, "/v1/schedules/"+args[0]+"/backfill", string(body))
		}}
	var reason, pauseFrom, until string
	var pauseFor time.Duration
	pause := &cobra.Command{Use: "pause NAME",
		Short: "Pause a schedule for every server sharing the store (POST /v1/schedules/NAME/pause)",
		Long: `pause asks the server at --url to pause the schedule: no server sharing the
store starts its runs until it is resumed, and the times due meanwhile are
not started late then (backfill them if they are wanted). A trigger or a
backfill still starts runs. The pause names who paused it (the token's
actor), --reason, and since when; GET /v1/schedules shows it. With --until
or --for the pause ends by itself then, and the schedule's times due from
then on start runs again (a change freeze over a weekend, say). With --from
the pause is set ahead: it begins then (--for counts from it), and is
listed meanwhile; a pause asked while another stands that does not hold
for every time it would is refused (resume the other first). The bearer
token is read as trigger reads it.`,
		Example: `  flrh schedule pause nightly --reason "the ledger is being migrated" --url http://127.0.0.1:7700
  flrh schedule pause nightly --reason "change freeze" --until 2026-12-28T08:00:00+01:00
  flrh schedule pause nightly --reason "year-end freeze" --from 2026-12-24T18:00:00+01:00 --for 240h
  flrh schedule pause hourly --for 3h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := map[string]string{"reason": reason}
			start := time.Now()
			if pauseFrom != "" {
				t, err := time.Parse(time.RFC3339, pauseFrom)
				if err != nil {
					return usagef("--from: %q is not an RFC 3339 time (2026-12-24T18:00:00+01:00)", pauseFrom)
				}
				req["from"], start = t.Format(time.RFC3339Nano), t
			}
			switch {
			case until != "" && pauseFor != 0:
				return usagef("give --until or --for, not both")
			case pauseFor < 0:
				return usagef("--for must not be negative, not %s", pauseFor)
			case pauseFor > 0:
				req["until"] = start.Add(pauseFor).UTC().Format(time.RFC3339Nano)
			case until != "":
				t, err := time.Parse(time.RFC3339, until)
				if err != nil {
					return usagef("--until: %q is not an RFC 3339 time (2026-12-28T08:00:00+01:00)", until)
				}
				req["until"] = t.Format(time.RFC3339Nano)
			}
			body, _ := json.Marshal(req)
			return apiCall(cmd, "POST", url, tokenEnv, "/v1/schedules/"+args[0]+"/pause", string(body))
		}}
	pause.Flags().StringVar(&reason, "reason", "", "why, shown beside the pause")
	pause.Flags().StringVar(&until, "until", "", "when the pause ends by itself (RFC 3339); without it or --for it lasts until resumed")
	pause.Flags().DurationVar(&pauseFor, "for", 0, "how long the pause lasts (until its start, now or --from, plus this)")
	pause.Flags().StringVar(&pauseFrom, "from", "", "set the pause ahead: it begins at this time (RFC 3339), and the times due before start runs")
	resume := &cobra.Command{Use: "resume NAME",
		Short: "Resume a paused schedule (POST /v1/schedules/NAME/resume)",
		Long:  `resume lifts the schedule's pause: its next time due starts a run. Exit status 1 when it was not paused.`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return apiCall(cmd, "POST", url, tokenEnv, "/v1/schedules/"+args[0]+"/resume", "")
		}}
	var listJSON bool
	list := &cobra.Command{Use: "list",
		Short: "List the schedules a server runs: next times due, pauses (set ahead too) and overlap (GET /v1/schedules)",
		Long: `list asks the server at --url for its schedules and prints each with its
calendar and zone, the workflow it starts, its next time due, whether it
runs one at a time, and its pause (who, why, from and until when); --json
prints the server's answer. The bearer token is read as trigger reads it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := apiRequest(cmd, "GET", url, tokenEnv, "/v1/schedules", "")
			if err != nil {
				return err
			}
			a, err := send(req)
			if err != nil {
				return err
			}
			if listJSON || a.code >= 300 {
				return a.print(cmd)
			}
			var page struct {
				Schedules []schedule.Info `json:"schedules"`
			}
			if err := json.Unmarshal(a.body, &page); err != nil {
				return fmt.Errorf("the server's schedules: %w", err)
			}
			printSchedules(cmd.OutOrStdout(), page.Schedules)
			return nil
		}}
	list.Flags().BoolVar(&listJSON, "json", false, "print the server's answer as JSON")
	addServerFlags(&url, &tokenEnv, list, trigger, backfill, pause, resume)
	backfill.Flags().StringVar(&from, "from", "", "the first time to fill (RFC 3339)")
	backfill.Flags().StringVar(&to, "to", "", "the last time to fill (RFC 3339)")
	backfill.MarkFlagRequired("from")
	backfill.MarkFlagRequired("to")
	group := &cobra.Command{Use: "schedule", Short: "Check, list, trigger, backfill, pause and resume the schedules that start runs on a calendar (see flrh serve --schedules)"}
	group.AddCommand(check, list, trigger, backfill, pause, resume)
	rootCmd.AddCommand(group)
}

// printSchedules writes a server's schedules, one to a line, with what
// holds each back.
func printSchedules(w io.Writer, list []schedule.Info) {
	for _, s := range list {
		next := "never again"
		if !s.Next.IsZero() {
			next = "next " + s.Next.UTC().Format(time.RFC3339)
		}
		line := fmt.Sprintf("%-20s %-24s %-16s %s", s.Name, fmt.Sprintf("%q %s", s.Cron, s.TimeZone), s.Workflow, next)
		if s.Overlap == schedule.OverlapSkip {
			line += "  one at a time"
		}
		if p := s.Paused; p != nil {
			line += "  paused by " + p.By
			if p.From != nil {
				line += " from " + p.From.UTC().Format(time.RFC3339)
			}
			if p.Until != nil {
				line += " until " + p.Until.UTC().Format(time.RFC3339)
			}
			if p.Reason != "" {
				line += ": " + p.Reason
			}
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d schedules\n", len(list))
}

func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// checkSchedulesStart puts each schedule's run for its next time due to
// the workflow it names, loaded from refs, as flrh serve does at start
// (schedule.New with the runner's CheckStart): a runner over a store in
// a temporary directory, to which nothing is written.
func checkSchedulesStart(ctx context.Context, specs []schedule.Spec, refs []string) error {
	c, err := loadCatalog(refs, true, "")
	if err != nil {
		return err
	}
	wfs, reg, err := c.pick()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "flrh-schedule-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "check.db"), sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := runner.New(runner.Config{Store: st, Workflows: wfs, Adapters: reg})
	if err != nil {
		return err
	}
	_, err = schedule.New(specs, schedule.Config{Runner: r, Workflows: func() []runner.Workflow { return wfs }, Heads: st, Runs: st})
	return err
}
