package webui_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"flrh.dev/flrh/bundle"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/server"
	"flrh.dev/flrh/store"
)

// The schedules page: a schedule listed with its next time; run now
// through the page (its run in the store); paused with a reason (the
// store holds the pause, and the page shows who and why); resumed; a
// viewer's buttons disabled.
func TestBrowserSchedules(t *testing.T) {
	w := newWorld(t)
	wf, _, err := bundle.LoadExample("refund-agent")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := schedule.Parse([]byte(`{"schedules":[{"name":"nightly","cron":"30 2 * * *","time_zone":"Europe/Paris","workflow":"refund-agent","overlap":"skip",
 "input":{"type":"refund.requested/1","payload":{"refund_id":"n-{$date}","amount":5,"payee":"alice","reason":"nightly goodwill"}}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	pauses, _ := store.SchedulePausingOf(w.st)
	heads, _ := store.ScheduleHeadsOf(w.st)
	sc, err := schedule.New(specs, schedule.Config{Runner: w.r, Workflows: func() []runner.Workflow { return []runner.Workflow{wf} }, Pauses: pauses, Heads: heads, Runs: w.st})
	if err != nil {
		t.Fatal(err)
	}
	ts := w.serveWith(server.Config{Schedules: sc})
	row := `tr[data-schedule="nightly"]`
	w.run("the schedules page", chromedp.Navigate(ts.URL+"/ui/#/schedules"),
		chromedp.SendKeys(chromedp.CSS("#token-input"), tokLead), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		waitText("#whoami", "finance-lead"), chromedp.WaitVisible(chromedp.CSS(row)),
		waitText(row, "30 2 * * *"), waitText(row, "Europe/Paris · one at a time"), waitText(row+" td.paused", "no"))
	w.checkA11y("schedules")

	w.run("run now", press(row+` button[data-act="trigger"]`), waitText("#status", "nightly: started run nightly-"))
	runs, err := w.st.Runs(context.Background(), "", 100)
	if err != nil || !slices.ContainsFunc(runs, func(r store.Run) bool { return strings.HasPrefix(r.ID, "nightly-") }) {
		t.Fatalf("no nightly run in the store: %v, %v", runs, err)
	}
	// The run triggered is the schedule's latest, which the next time
	// due waits on.
	if h, ok, err := heads.ScheduleHead(context.Background(), "nightly"); err != nil || !ok || !strings.HasPrefix(h.RunID, "nightly-") {
		t.Fatalf("the schedule's head after run now: %+v, %v, %v", h, ok, err)
	}

	// The schedule's runs, by the label every run it starts bears.
	w.run("its runs", chromedp.Click(chromedp.CSS(row+` a.runs-of`)), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr[data-run^="nightly-"]`)))
	listed := value(w, "runs listed", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr')].map(r=>r.dataset.run)`))
	if len(listed) != 1 || !strings.HasPrefix(listed[0], "nightly-") {
		t.Fatalf("the runs of nightly: %v", listed)
	}
	w.run("back", chromedp.Navigate(ts.URL+"/ui/#/schedules"), chromedp.WaitVisible(chromedp.CSS(row)))

	w.run("pause", typeInto(row+` input`, "the ledger is being migrated"), press(row+` button[data-act="pause"]`),
		waitText("#status", "Paused nightly on every server."),
		waitText(row+" td.paused", "Paused by finance-lead since "), waitText(row+" td.paused", ": the ledger is being migrated"))
	list, err := pauses.PausedSchedules(context.Background())
	if err != nil || len(list) != 1 || list[0].By != "finance-lead" || list[0].Reason != "the ledger is being migrated" || time.Since(list[0].Since) > time.Minute {
		t.Fatalf("the store's pauses: %+v, %v", list, err)
	}
	w.shot("14-schedules-paused")
	w.run("resume", press(row+` button[data-act="resume"]`), waitText("#status", "Resumed nightly."), waitText(row+" td.paused", "no"))
	if list, err := pauses.PausedSchedules(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("paused after the resume: %+v, %v", list, err)
	}

	// Paused for a day: the store holds its end, the page shows it.
	w.run("pause for a day", chromedp.SetValue(chromedp.CSS(row+` select`), "24"), press(row+` button[data-act="pause"]`),
		waitText("#status", "Paused nightly on every server."), waitText(row+" td.paused", " until "))
	list, err = pauses.PausedSchedules(context.Background())
	if err != nil || len(list) != 1 || list[0].Until.IsZero() || time.Until(list[0].Until) < 23*time.Hour || time.Until(list[0].Until) > 25*time.Hour {
		t.Fatalf("the store's pause for a day: %+v, %v", list, err)
	}
	w.run("resume again", press(row+` button[data-act="resume"]`), waitText("#status", "Resumed nightly."), waitText(row+" td.paused", "no"))

	// A pause set ahead (by the command line, say): shown with its start,
	// and lifted before it begins.
	from := time.Now().Add(48 * time.Hour)
	if err := pauses.PauseSchedule(context.Background(), store.PausedSchedule{Name: "nightly", By: "olga", Reason: "year-end freeze", From: from, Until: from.Add(72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	w.run("a pause set ahead", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(row+`[data-paused="ahead"]`)),
		waitText(row+" td.paused", "Pause set by olga from "), waitText(row+" td.paused", ": year-end freeze"), waitText(row+` button[data-act="resume"]`, "Lift"))
	w.run("lifted", press(row+` button[data-act="resume"]`), waitText("#status", "Resumed nightly."), waitText(row+" td.paused", "no"))
	if list, err := pauses.PausedSchedules(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("a pause set ahead, lifted: %+v, %v", list, err)
	}

	w.run("viewer", chromedp.Click(chromedp.CSS("#token-clear")), chromedp.SendKeys(chromedp.CSS("#token-input"), tokViewer),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)), waitText("#whoami", "vera (viewer)"), chromedp.WaitVisible(chromedp.CSS(row)))
	disabled := value(w, "disabled", chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-schedule="nightly"] button')].filter(b=>b.disabled).map(b=>b.dataset.act+': '+b.title)`))
	if !slices.Equal(disabled, []string{"trigger: needs the operator role", "pause: needs the operator role"}) {
		t.Fatalf("a viewer's buttons: %v", disabled)
	}

	w.noPageErrors(t)
}
