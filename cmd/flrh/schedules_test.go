package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listRuns is the ids of the runs a serve process holds.
func listRuns(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/v1/runs?limit=500")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// A schedule due every two seconds, over a real serve process: runs start
// on time; the process killed (SIGKILL) and restarted five seconds later
// starts the times it missed, late, within the catch-up window, so that
// every time due from the first has exactly one run; SIGHUP with a
// schedule the workflow would refuse keeps it out, and with the schedule
// dropped starts nothing more.
func TestSchedulesOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := buildFlrh(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "schedules.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`schedules:
  - name: sweep
    cron: "*/2 * * * * *"
    catch_up_seconds: 15
    workflow: refund-agent
    input: {refunds: [{id: "r-{$local}", amount: 5, payee: carol, reason: "sweep of {$date}"}]}
`)
	out, err := exec.Command(bin, "schedule", "check", "--schedules", file, "--count", "2").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `schedule sweep: "*/2 * * * * *" in UTC, starting refund-agent`) || strings.Count(string(out), " UTC)\n") != 2 {
		t.Fatalf("check: %v\n%s", err, out)
	}
	// Put to the workflows (the built-in refund-agent, with an example
	// beside it): taken; one without its input, or naming a workflow not
	// loaded, refused before any server runs it.
	if out, code := flrhCode(t, bin, nil, "schedule", "check", "--schedules", file, "--workflows", "example:ops-agent"); code != 0 || !strings.Contains(out, "1 schedules, each one's next run taken by its workflow") {
		t.Fatalf("check with the workflows: %d\n%s", code, out)
	}
	for _, bad := range []struct{ text, words string }{
		{"schedules:\n  - {name: bare, cron: \"@hourly\", workflow: refund-agent}\n", "schedule bare: its run of "},
		{"schedules:\n  - {name: lost, cron: \"@hourly\", workflow: nope, input: {}}\n", "schedule lost: no workflow nope is loaded"},
	} {
		badFile := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(badFile, []byte(bad.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, code := flrhCode(t, bin, nil, "schedule", "check", "--schedules", badFile, "--workflows", "example:ops-agent"); code != 2 || !strings.Contains(out, bad.words) {
			t.Fatalf("check %q: %d\n%s", bad.text, code, out)
		}
	}
	sandbox := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	serve := func() *serveProc {
		return startServe(t, bin, nil, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", sandbox+"/v1/effects",
			"--schedules", file, "--lease-ttl", crashLeaseTTL)
	}
	startedAt := time.Now()
	p := serve()
	// The kill waits until the process has caught up (a run due after it
	// started exists): a kill in the middle of its first catch-up pass
	// could leave a time that the successor, six seconds later, finds
	// past its 15 s window — missed, as it should be, but not what this
	// test is about.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ids := listRuns(t, p.base)
		if len(ids) > 0 {
			if last, err := time.Parse(time.RFC3339, strings.TrimPrefix(ids[len(ids)-1], "sweep-")); err == nil && !last.Before(startedAt) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs after 30 s: %v", ids)
		}
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	killedAt := time.Now()
	time.Sleep(5 * time.Second)
	p = serve()
	time.Sleep(3 * time.Second)
	// Backfilled through the CLI: the three times before the first run
	// (which the first start's 15 s window did not reach) start once.
	first := listRuns(t, p.base)[0]
	firstAt, err := time.Parse(time.RFC3339, strings.TrimPrefix(first, "sweep-"))
	if err != nil {
		t.Fatal(err)
	}
	fill := func() string {
		t.Helper()
		out, err := exec.Command(bin, "schedule", "backfill", "sweep", "--url", p.base,
			"--from", firstAt.Add(-6*time.Second).Format(time.RFC3339), "--to", firstAt.Add(-1*time.Second).Format(time.RFC3339)).CombinedOutput()
		if err != nil {
			t.Fatalf("backfill: %v\n%s", err, out)
		}
		return string(out)
	}
	want := []string{"sweep-" + firstAt.Add(-6*time.Second).Format(time.RFC3339), "sweep-" + firstAt.Add(-4*time.Second).Format(time.RFC3339), "sweep-" + firstAt.Add(-2*time.Second).Format(time.RFC3339)}
	if out := fill(); !strings.HasPrefix(out, "200 OK") || !strings.Contains(out, `"started": [
    "`+strings.Join(want, `",
    "`)+`"
  ]`) {
		t.Fatalf("backfill started:\n%s", out)
	}
	if out := fill(); !strings.Contains(out, `"started": []`) || strings.Count(out, `"sweep-`) != 3 {
		t.Fatalf("backfilled again:\n%s", out)
	}
	if out, err := exec.Command(bin, "schedule", "backfill", "sweep", "--url", p.base, "--from", "yesterday", "--to", "now").CombinedOutput(); err == nil || !strings.Contains(string(out), `--from "yesterday" is not an RFC 3339 time`) {
		t.Fatalf("a bad --from: %v\n%s", err, out)
	}
	// A schedule whose runs the workflow would refuse is kept out.
	write(`schedules:
  - name: other
    cron: "@yearly"
    workflow: refund-agent
`)
	p.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), "schedules kept as they were"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a refused schedule not kept out:\n%s", p.stderr)
		}
	}
	if !strings.Contains(p.stderr.String(), "would be refused") {
		t.Fatalf("the log does not say why:\n%s", p.stderr)
	}
	// Dropped: nothing more starts after the reload.
	write(`schedules:
  - name: other
    cron: "@yearly"
    workflow: refund-agent
    input: {refunds: [{id: "y-{$date}", amount: 5, payee: carol, reason: yearly}]}
`)
	p.cmd.Process.Signal(syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), "schedules reloaded"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged:\n%s", p.stderr)
		}
	}
	ids := listRuns(t, p.base)
	time.Sleep(3 * time.Second)
	if after := listRuns(t, p.base); len(after) != len(ids) {
		t.Fatalf("runs started after the schedule was dropped: %v then %v", ids, after)
	}
	// Every two-second time from the first run to the last has one run,
	// those the killed process missed included.
	var times []time.Time
	for _, id := range ids {
		at, err := time.Parse(time.RFC3339, strings.TrimPrefix(id, "sweep-"))
		if err != nil {
			t.Fatalf("run id %s: %v", id, err)
		}
		times = append(times, at)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap != 2*time.Second {
			t.Fatalf("runs %s and %s are %s apart:\n%v", ids[i-1], ids[i], gap, ids)
		}
	}
	var missed int
	for _, at := range times {
		if at.After(killedAt) && at.Before(killedAt.Add(5*time.Second)) {
			missed++
		}
	}
	if missed < 2 || !strings.Contains(p.stderr.String(), `"msg":"scheduled run started"`) {
		t.Fatalf("%d runs due while no process ran: %v", missed, ids)
	}
	for _, id := range ids {
		if got := awaitOutcome(t, p.base, id); got != "success" {
			t.Fatalf("%s ended %q", id, got)
		}
	}
	if n := len(mutations(t, sandbox)); n != len(ids) {
		t.Fatalf("%d payments for %d runs", n, len(ids))
	}
	// Triggered through the CLI: the dropped schedule is no more; the one
	// in its place starts its run for now.
	out, err = exec.Command(bin, "schedule", "trigger", "sweep", "--url", p.base).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "no schedule sweep") {
		t.Fatalf("trigger a dropped schedule: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "schedule", "trigger", "other", "--url", p.base).CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "201 Created") || !strings.Contains(string(out), `"other-`) {
		t.Fatalf("trigger: %v\n%s", err, out)
	}
}

// serveSchedules writes a schedules file and answers the binary and how
// to start a serve process with it (over one store and sandbox however
// often it is started); the first start returns once a run is listed.
func serveSchedules(t *testing.T, yaml string) (string, func() *serveProc) {
	t.Helper()
	bin := buildFlrh(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "schedules.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	sandbox := startSandbox(t, bin, filepath.Join(dir, "sandbox.json"))
	started := false
	return bin, func() *serveProc {
		p := startServe(t, bin, nil, "--store", "sqlite:"+filepath.Join(dir, "flrh.db"), "--destination", sandbox+"/v1/effects", "--schedules", file)
		for deadline := time.Now().Add(30 * time.Second); !started && len(listRuns(t, p.base)) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no run after 30 s")
			}
		}
		started = true
		return p
	}
}

// A schedule paused through the CLI starts nothing, across a SIGKILL
// and a restart (the pause is the store's), until it is resumed; the
// times due meanwhile are not started late.
func TestSchedulePauseOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin, serve := serveSchedules(t, `schedules:
  - name: tick
    cron: "* * * * * *"
    catch_up_seconds: 30
    workflow: refund-agent
    input: {refunds: [{id: "t-{$local}", amount: 5, payee: carol, reason: tick}]}
`)
	cli := func(args ...string) (string, int) { return flrhCode(t, bin, nil, args...) }
	p := serve()
	if out, code := cli("schedule", "pause", "tick", "--reason", "the ledger is being migrated", "--url", p.base); code != 0 || !strings.Contains(out, `"reason": "the ledger is being migrated"`) {
		t.Fatalf("pause: %d\n%s", code, out)
	}
	pausedAt := time.Now()
	time.Sleep(1500 * time.Millisecond) // a time due as the pause was written may still start
	before := listRuns(t, p.base)
	time.Sleep(2 * time.Second)
	if after := listRuns(t, p.base); len(after) != len(before) {
		t.Fatalf("runs started while paused: %v then %v", before, after)
	}
	// Killed and restarted within the catch-up window: still paused.
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p = serve()
	time.Sleep(2 * time.Second)
	if after := listRuns(t, p.base); len(after) != len(before) {
		t.Fatalf("runs started while paused, after a restart: %v then %v", before, after)
	}
	if out, code := cli("schedule", "resume", "tick", "--url", p.base); code != 0 || strings.Contains(out, `"paused"`) {
		t.Fatalf("resume: %d\n%s", code, out)
	}
	resumedAt := time.Now()
	if out, code := cli("schedule", "resume", "tick", "--url", p.base); code != 1 || !strings.Contains(out, "schedule tick is not paused") {
		t.Fatalf("resume again: %d\n%s", code, out)
	}
	for deadline := time.Now().Add(10 * time.Second); len(listRuns(t, p.base)) <= len(before); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no run after the resume")
		}
	}
	// No run of a time between the pause (and the one in flight) and the
	// resume.
	for _, id := range listRuns(t, p.base) {
		at, err := time.Parse(time.RFC3339, strings.TrimPrefix(id, "tick-"))
		if err != nil {
			t.Fatalf("run id %s: %v", id, err)
		}
		if at.After(pausedAt.Add(time.Second)) && at.Before(resumedAt.Add(-time.Second)) {
			t.Fatalf("run %s of a time while paused (%s to %s)", id, pausedAt.Format(time.RFC3339), resumedAt.Format(time.RFC3339))
		}
	}
	if !strings.Contains(p.stderr.String(), "the schedule is paused") {
		t.Fatalf("the restarted process does not log the pause:\n%s", p.stderr)
	}

	// A pause for a while ends by itself: runs start again, no one
	// resuming it. --until and --for together, or an --until that is no
	// time, are usage errors.
	for _, bad := range [][]string{{"--for", "3s", "--until", "2026-12-28T08:00:00Z"}, {"--until", "tomorrow"}, {"--for", "-1s"}} {
		if out, code := cli(append([]string{"schedule", "pause", "tick", "--url", p.base}, bad...)...); code != 2 {
			t.Fatalf("pause %v: %d\n%s", bad, code, out)
		}
	}
	out, code := cli("schedule", "pause", "tick", "--reason", "a short freeze", "--for", "4s", "--url", p.base)
	if code != 0 || !strings.Contains(out, `"until": "`) {
		t.Fatalf("pause for 4s: %d\n%s", code, out)
	}
	frozenAt := time.Now()
	time.Sleep(1500 * time.Millisecond)
	frozen := listRuns(t, p.base)
	for deadline := time.Now().Add(15 * time.Second); len(listRuns(t, p.base)) <= len(frozen); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no run after the pause's end")
		}
	}
	if waited := time.Since(frozenAt); waited < 3*time.Second {
		t.Fatalf("a run started %s into a pause of 4 s", waited)
	}

	// A pause set ahead: the times due before its start and from its end
	// start runs, none between. A --from that is no time is a usage error;
	// one already past is refused by the server.
	if out, code := cli("schedule", "pause", "tick", "--from", "soon", "--url", p.base); code != 2 {
		t.Fatalf("pause --from soon: %d\n%s", code, out)
	}
	if out, code := cli("schedule", "pause", "tick", "--from", "2026-01-01T00:00:00Z", "--url", p.base); code != 1 || !strings.Contains(out, "a pause set ahead starts after now") {
		t.Fatalf("pause from a time past: %d\n%s", code, out)
	}
	from := time.Now().Add(3 * time.Second).Truncate(time.Second)
	out, code = cli("schedule", "pause", "tick", "--reason", "set ahead", "--from", from.Format(time.RFC3339), "--for", "3s", "--url", p.base)
	if code != 0 || !strings.Contains(out, `"from": "`+from.UTC().Format(time.RFC3339)+`"`) {
		t.Fatalf("pause set ahead: %d\n%s", code, out)
	}
	if out, code := cli("schedule", "list", "--url", p.base); code != 0 || !strings.Contains(out, "  paused by local from "+from.UTC().Format(time.RFC3339)+" until "+from.Add(3*time.Second).UTC().Format(time.RFC3339)+": set ahead\n") {
		t.Fatalf("schedule list while a pause is set ahead: %d\n%s", code, out)
	}
	until := from.Add(3 * time.Second)
	var ahead, within, past int
	for deadline := time.Now().Add(20 * time.Second); past == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no run after the pause set ahead ended (%d before it, %d within)", ahead, within)
		}
		ahead, within, past = 0, 0, 0
		for _, id := range listRuns(t, p.base) {
			at, _ := time.Parse(time.RFC3339, strings.TrimPrefix(id, "tick-"))
			switch {
			case at.Before(from) && at.After(from.Add(-3*time.Second)):
				ahead++
			case at.Before(until) && !at.Before(from):
				within++
			case !at.Before(until):
				past++
			}
		}
	}
	if ahead == 0 || within != 0 {
		t.Fatalf("a pause from %s to %s: %d runs due in the seconds before it, %d within it", from.Format(time.RFC3339), until.Format(time.RFC3339), ahead, within)
	}
}

// TestScheduleOverlapOverTheCLI: a schedule due every second with
// overlap skip, whose run waits for an approval, starts no second run
// while the first is going, across a SIGKILL and a restart (the latest
// run is in the store); once the first is cancelled, the next time due
// starts one.
func TestScheduleOverlapOverTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin, serve := serveSchedules(t, `schedules:
  - name: sweep
    cron: "* * * * * *"
    overlap: skip
    workflow: refund-agent
    input: {refunds: [{id: "s-{$local}", amount: 900, payee: carol, reason: sweep}]}
`)
	p := serve()
	time.Sleep(3 * time.Second)
	first := listRuns(t, p.base)
	if len(first) != 1 {
		t.Fatalf("runs while the first waits for its approval: %v", first)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p = serve()
	time.Sleep(2500 * time.Millisecond)
	if runs := listRuns(t, p.base); len(runs) != 1 {
		t.Fatalf("runs after a restart while the first waits: %v", runs)
	}
	if !strings.Contains(p.stderr.String(), "the schedule's latest run is still going") {
		t.Fatalf("the restarted process does not log the skip:\n%s", p.stderr)
	}
	if out, code := flrhCode(t, bin, nil, "schedule", "list", "--url", p.base, "--json"); code != 0 || !strings.Contains(out, `"overlap": "skip"`) || !strings.Contains(out, `"name": "sweep"`) {
		t.Fatalf("schedule list --json: %d\n%s", code, out)
	}
	if out, code := flrhCode(t, bin, nil, "schedule", "list", "--url", p.base); code != 0 ||
		!regexp.MustCompile(`(?m)^sweep +"\* \* \* \* \* \*" UTC +refund-agent +next 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ  one at a time\n1 schedules\n$`).MatchString(out) {
		t.Fatalf("schedule list: %d\n%s", code, out)
	}
	resp, err := http.Post(p.base+"/v1/runs/"+first[0]+"/cancel", "application/json", strings.NewReader(`{"reason":"enough"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(15 * time.Second); len(listRuns(t, p.base)) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no second run after the first was cancelled")
		}
	}
	time.Sleep(2 * time.Second)
	if runs := listRuns(t, p.base); len(runs) != 2 {
		t.Fatalf("runs once the second waits for its approval: %v", runs)
	}
	// A trigger waits on the latest run too, unless forced.
	if out, code := flrhCode(t, bin, nil, "schedule", "trigger", "sweep", "--url", p.base); code != 1 || !strings.Contains(out, "schedule sweep runs one at a time") {
		t.Fatalf("a trigger while a run is going: %d\n%s", code, out)
	}
	if runs := listRuns(t, p.base); len(runs) != 2 {
		t.Fatalf("runs after a trigger refused: %v", runs)
	}
	if out, code := flrhCode(t, bin, nil, "schedule", "trigger", "sweep", "--force", "--url", p.base); code != 0 || !strings.Contains(out, `"started": [`) {
		t.Fatalf("a forced trigger: %d\n%s", code, out)
	}
	if runs := listRuns(t, p.base); len(runs) != 3 {
		t.Fatalf("runs after a forced trigger: %v", runs)
	}
}
