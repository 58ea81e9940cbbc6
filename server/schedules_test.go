package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"flrh.dev/flrh/schedule"
	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/sqlite"
)

func TestSchedulesAPI(t *testing.T) {
	f := newFixture(t, tokenFileText)
	now := time.Date(2026, 12, 7, 12, 0, 30, 0, time.UTC)
	specs, err := schedule.Parse([]byte(`{"schedules":[{"name":"m","cron":"*/10 * * * *","workflow":"refund-agent","catch_up_seconds":0,
 "input":{"refunds":[{"id":"m-{$local}","amount":10,"payee":"dan","reason":"sweep"}]}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	// The pauses in a store of their own on the schedule's clock: a pause
	// past its end is replaced on the store's clock.
	pst, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "pauses.db"), sqlite.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pst.Close() })
	pauses, _ := store.SchedulePausingOf(pst)
	sc, err := schedule.New(specs, schedule.Config{Runner: f.runner, Workflows: Static{f.server.cfg.Catalog.Workflows()[0]}.Workflows,
		Clock: func() time.Time { return now }, Pauses: pauses})
	if err != nil {
		t.Fatal(err)
	}
	// Without schedules: an empty list, and nothing to trigger.
	if a := f.get("/v1/schedules", tokViewer); a.status != 200 || !strings.Contains(string(a.body), `"schedules":[]`) {
		t.Fatalf("no schedules: %d %s", a.status, a.body)
	}
	if a := f.post("/v1/schedules/m/trigger", tokOperator, ""); a.status != 404 {
		t.Fatalf("trigger without schedules: %d %s", a.status, a.body)
	}
	f.server.SetSchedules(sc)

	steps := []struct {
		name, method, path, token, body string
		status                          int
		words                           string
	}{
		{"listed with its next time", "GET", "/v1/schedules", tokViewer, "", 200, `"next":"2026-12-07T12:10:00Z"`},
		{"triggered now", "POST", "/v1/schedules/m/trigger", tokOperator, "", 201, `"started":["m-2026-12-07T12:00:30Z"]`},
		{"triggered again in the same second", "POST", "/v1/schedules/m/trigger", tokOperator, "", 200, `"existed":["m-2026-12-07T12:00:30Z"]`},
		{"and forced: as one that overlaps its runs, the same", "POST", "/v1/schedules/m/trigger?force=true", tokOperator, "", 200, `"existed":["m-2026-12-07T12:00:30Z"]`},
		{"force that is no boolean", "POST", "/v1/schedules/m/trigger?force=yes", tokOperator, "", 400, `force is true or false, not \"yes\"`},
		{"an unknown query parameter", "POST", "/v1/schedules/m/trigger?dry=1", tokOperator, "", 400, `unknown query parameter \"dry\"`},
		{"an agent may not trigger", "POST", "/v1/schedules/m/trigger", tokAgent, "", 403, ""},
		{"a viewer may not backfill", "POST", "/v1/schedules/m/backfill", tokViewer, `{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T12:00:00Z"}`, 403, ""},
		{"an hour backfilled", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T12:00:00Z"}`, 200,
			`{"started":["m-2026-12-07T11:00:00Z","m-2026-12-07T11:10:00Z","m-2026-12-07T11:20:00Z","m-2026-12-07T11:30:00Z","m-2026-12-07T11:40:00Z","m-2026-12-07T11:50:00Z","m-2026-12-07T12:00:00Z"],"existed":[]}`},
		{"and again: nothing more", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-12-07T11:05:00Z","to":"2026-12-07T12:00:00Z"}`, 200,
			`{"started":[],"existed":["m-2026-12-07T11:10:00Z","m-2026-12-07T11:20:00Z","m-2026-12-07T11:30:00Z","m-2026-12-07T11:40:00Z","m-2026-12-07T11:50:00Z","m-2026-12-07T12:00:00Z"]}`},
		{"into the future", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T13:00:00Z"}`, 422, "is in the future"},
		{"backwards", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T10:00:00Z"}`, 422, "to is before from"},
		{"more than a thousand times", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-11-30T00:00:00Z","to":"2026-12-07T12:00:00Z"}`, 422, "more than 1000 times"},
		{"no such schedule", "POST", "/v1/schedules/nightly/trigger", tokOperator, "", 404, "no schedule nightly"},
		{"a time that is no time", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"yesterday","to":"2026-12-07T10:00:00Z"}`, 422, ""},
		{"a member unknown", "POST", "/v1/schedules/m/backfill", tokOperator, `{"from":"2026-12-07T11:00:00Z","to":"2026-12-07T12:00:00Z","dry":true}`, 422, "dry"},
		{"an agent may not pause", "POST", "/v1/schedules/m/pause", tokAgent, `{}`, 403, ""},
		{"paused", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"the ledger is being migrated"}`, 200, `"paused":{"by":"oscar","reason":"the ledger is being migrated","since":`},
		{"listed paused", "GET", "/v1/schedules", tokViewer, "", 200, `"paused":{"by":"oscar","reason":"the ledger is being migrated"`},
		{"paused again: the first pause stands", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"again"}`, 200, `"reason":"the ledger is being migrated"`},
		{"a reason too long", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"` + strings.Repeat("x", 501) + `"}`, 422, "/reason"},
		{"pausing no such schedule", "POST", "/v1/schedules/nightly/pause", tokOperator, `{}`, 404, "no schedule nightly"},
		{"resumed", "POST", "/v1/schedules/m/resume", tokOperator, "", 200, `"name":"m"`},
		{"resumed again", "POST", "/v1/schedules/m/resume", tokOperator, "", 409, "schedule m is not paused"},
		{"a pause's end already past", "POST", "/v1/schedules/m/pause", tokOperator, `{"until":"2026-12-07T12:00:00Z"}`, 422, `a pause's end is after now (2026-12-07T12:00:30Z), not 2026-12-07T12:00:00Z`},
		{"a pause's end two years away", "POST", "/v1/schedules/m/pause", tokOperator, `{"until":"2028-12-07T12:00:00Z"}`, 422, "at most 366 days past now"},
		{"a pause's end not a time", "POST", "/v1/schedules/m/pause", tokOperator, `{"until":"tomorrow"}`, 422, "/until"},
		{"paused until an hour", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"freeze","until":"2026-12-07T14:00:00+01:00"}`, 200, `"reason":"freeze","since":`},
		{"listed with its end", "GET", "/v1/schedules", tokViewer, "", 200, `"until":"2026-12-07T13:00:00Z"`},
		{"a pause set ahead while a shorter one stands", "POST", "/v1/schedules/m/pause", tokOperator, `{"from":"2026-12-08T00:00:00Z"}`, 409, "schedule m is paused already by oscar until 2026-12-07T13:00:00Z: resume it, then pause it anew"},
		{"resumed to set one ahead", "POST", "/v1/schedules/m/resume", tokOperator, "", 200, `"name":"m"`},
		{"set ahead", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"year-end freeze","from":"2026-12-24T18:00:00+01:00","until":"2027-01-04T07:00:00Z"}`, 200, `"from":"2026-12-24T17:00:00Z","until":"2027-01-04T07:00:00Z"`},
		{"listed with its start", "GET", "/v1/schedules", tokViewer, "", 200, `"reason":"year-end freeze","since":"2026-12-07T12:00:30Z","from":"2026-12-24T17:00:00Z"`},
		{"a pause now while one is set ahead", "POST", "/v1/schedules/m/pause", tokOperator, `{"reason":"incident"}`, 409, "paused already by oscar from 2026-12-24T17:00:00Z until 2027-01-04T07:00:00Z"},
		{"a pause within the one set ahead", "POST", "/v1/schedules/m/pause", tokOperator, `{"from":"2026-12-25T00:00:00Z","until":"2026-12-26T00:00:00Z"}`, 200, `"reason":"year-end freeze"`},
		{"a start already past", "POST", "/v1/schedules/m/pause", tokOperator, `{"from":"2026-12-07T12:00:00Z"}`, 422, `"field":"/from"`},
		{"an end before the start", "POST", "/v1/schedules/m/pause", tokOperator, `{"from":"2026-12-24T17:00:00Z","until":"2026-12-24T16:00:00Z"}`, 422, "a pause's end is after its start (2026-12-24T17:00:00Z)"},
		{"a start not a time", "POST", "/v1/schedules/m/pause", tokOperator, `{"from":"soon"}`, 422, "/from"},
		{"resumed before it began", "POST", "/v1/schedules/m/resume", tokOperator, "", 200, `"name":"m"`},
		{"not paused once lifted", "POST", "/v1/schedules/m/resume", tokOperator, "", 409, "schedule m is not paused"},
	}
	for _, s := range steps {
		a := f.do(s.method, s.path, s.token, map[bool]string{true: "application/json"}[s.body != ""], []byte(s.body))
		if a.status != s.status || !strings.Contains(string(a.body), s.words) {
			t.Fatalf("%s: %d %s; want %d saying %q", s.name, a.status, a.body, s.status, s.words)
		}
	}
	runs, _ := f.store.Runs(context.Background(), "", 100)
	if len(runs) != 8 {
		t.Fatalf("%d runs, want the trigger's and the backfill's 7", len(runs))
	}
	for _, r := range runs {
		in, _ := f.store.Inbox(context.Background(), r.ID, false)
		if len(in) != 1 || in[0].Actor != "schedule:m" || in[0].ActorRole != "agent" {
			t.Fatalf("run %s started as %+v", r.ID, in)
		}
	}
}
