package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"flrh.dev/flrh/store"
	"flrh.dev/flrh/store/storetest"
	"flrh.dev/flrh/yamljson"
)

// route starts another receiver, verifying with key, answering with
// script, and returns it with a route to it named name.
func (f *fixture) route(name string, key []byte, script ...int) (*receiver, Route) {
	f.t.Helper()
	rc := &receiver{script: script, clock: f.clock.Now, secret: key}
	srv := httptest.NewServer(rc)
	f.t.Cleanup(srv.Close)
	return rc, Route{Name: name, URL: srv.URL + "/hooks/" + name, Secret: key}
}

// routed is a notifier of holder's delivering to routes, on f's store
// and clock, its configuration changed by mods.
func (f *fixture) routed(holder string, routes []Route, mods ...func(*Config)) *Notifier {
	f.t.Helper()
	return f.notifier(holder, func(c *Config) {
		c.URL, c.Secret, c.Routes = "", nil, routes
		for _, m := range mods {
			m(c)
		}
	})
}

// commit commits run id of workflow wf, ending it or leaving it waiting,
// with the notice of kind, and returns the notice's id.
func (f *fixture) commit(id, wf, kind string) string {
	f.t.Helper()
	return f.commitLabelled(id, wf, kind, nil)
}

// commitLabelled is commit of a run bearing labels, which its notice
// carries.
func (f *fixture) commitLabelled(id, wf, kind string, labels map[string]string) string {
	f.t.Helper()
	if err := f.store.CreateRun(ctx, store.Run{ID: id, WorkflowID: wf, WorkflowVersion: "1", State: "CREATED", Labels: labels}); err != nil {
		f.t.Fatal(err)
	}
	l, err := f.store.AcquireLease(ctx, id, "w", time.Hour)
	if err != nil {
		f.t.Fatal(err)
	}
	body, _ := json.Marshal(store.NoticeBody{Kind: kind, RunID: id, WorkflowID: wf, WorkflowVersion: "1", Labels: labels})
	tick := store.Tick{Events: []store.Event{storetest.Ev("E", `{}`)}, State: "WAIT_APPROVAL", Notices: []store.Notice{{Kind: kind, Body: body}}}
	if kind == store.NoticeEnded {
		tick.State, tick.Outcome = "SUCCEEDED", "success"
	}
	if err := f.store.Commit(ctx, l, tick); err != nil {
		f.t.Fatal(err)
	}
	return store.NoticeID(id, 1, 0, kind)
}

func ids(ds []delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.id)
	}
	slices.Sort(out)
	return out
}

// Each route takes the kinds and workflows it names, signed with its own
// secret and in its own format; a notice no route takes is deleted
// unsent and counted skipped by each.
func TestRoutesTakeTheirKindsAndWorkflows(t *testing.T) {
	f := newFixture(t)
	chat, chatRoute := f.route("chat", []byte("the chat's secret, 24 b."))
	pager, pagerRoute := f.route("pager", []byte("the pager's secret of 27 b."))
	audit, auditRoute := f.route("audit", secret)
	chatRoute.Format, chatRoute.Kinds, chatRoute.Workflows = FormatSlack, []string{store.NoticeApproval, store.NoticeChoice}, []string{"refunds"}
	pagerRoute.Kinds = []string{store.NoticeReconciliation, store.NoticeTripped}
	auditRoute.Kinds = []string{store.NoticeApproval, store.NoticeReconciliation, store.NoticeTripped, store.NoticeEnded}

	approval := f.commit("r-approve", "refunds", store.NoticeApproval)
	opsApproval := f.commit("o-approve", "ops", store.NoticeApproval)
	unknown := f.commit("r-unknown", "refunds", store.NoticeReconciliation)
	f.commit("o-choice", "ops", store.NoticeChoice) // nobody's: the chat takes choices of refunds alone
	ended := f.commit("r-ended", "refunds", store.NoticeEnded)

	n := f.notifier("a", func(c *Config) {
		c.URL, c.Secret = "", nil
		c.Routes = []Route{chatRoute, pagerRoute, auditRoute}
	})
	f.pass(n, 5)
	for _, c := range []struct {
		name string
		rc   *receiver
		want []string
	}{
		{"chat", chat, []string{approval}},
		{"pager", pager, []string{unknown}},
		{"audit", audit, []string{opsApproval, approval, ended, unknown}},
	} {
		got := c.rc.deliveries()
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%s took %v, want %v", c.name, ids(got), c.want)
		}
		for _, d := range got {
			if d.verified != nil || d.attempt != "1" {
				t.Errorf("%s: %s not verified with its own secret (%v) or attempt %s", c.name, d.id, d.verified, d.attempt)
			}
		}
	}
	if got := chat.deliveries(); len(got) == 1 && !strings.HasPrefix(string(got[0].raw), `{"text":"flrh: Run *r-approve* (refunds@1) waits for an approval`) {
		t.Errorf("the chat got %s", got[0].raw)
	}
	if f.backlog() != 0 {
		t.Fatalf("backlog %d", f.backlog())
	}
	// Delivered 1 + 1 + 4; skipped where a route does not take a notice:
	// chat 4, pager 4, audit 1 (the choice).
	want := map[string]int{"delivered": 6, "skipped": 9, "chat/delivered": 1, "chat/skipped": 4, "pager/delivered": 1, "pager/skipped": 4,
		"audit/delivered": 4, "audit/skipped": 1}
	for k, v := range want {
		if f.seen[k] != v {
			t.Errorf("%s counted %d, want %d (all: %v)", k, f.seen[k], v, f.seen)
		}
	}
}

// A route with labels takes the notices of runs bearing every one of
// them, flrh's own among them, and no other run's; the chat's sentence
// names the labels the run was given, not flrh's.
func TestRoutesTakeTheirLabels(t *testing.T) {
	f := newFixture(t)
	payments, paymentsRoute := f.route("payments", []byte("the payments channel's key"))
	eu, euRoute := f.route("eu", []byte("the eu region's key, 24 b"))
	nightly, nightlyRoute := f.route("nightly", []byte("the nightly watcher's key"))
	paymentsRoute.Format, paymentsRoute.Labels = FormatSlack, map[string]string{"team": "payments"}
	euRoute.Labels = map[string]string{"team": "payments", "region": "eu"}
	nightlyRoute.Labels = map[string]string{"flrh.schedule": "nightly"}

	paysEU := f.commitLabelled("r-1", "refunds", store.NoticeApproval, map[string]string{"team": "payments", "region": "eu", "order": "A-1"})
	paysUS := f.commitLabelled("r-2", "refunds", store.NoticeApproval, map[string]string{"team": "payments", "region": "us"})
	f.commitLabelled("r-3", "refunds", store.NoticeApproval, map[string]string{"team": "ops", "region": "eu"})
	f.commit("r-4", "refunds", store.NoticeApproval)
	scheduled := f.commitLabelled("r-5", "refunds", store.NoticeEnded, map[string]string{"flrh.schedule": "nightly", "team": "payments"})

	n := f.notifier("a", func(c *Config) {
		c.URL, c.Secret = "", nil
		c.Routes = []Route{paymentsRoute, euRoute, nightlyRoute}
	})
	f.pass(n, 5)
	for _, c := range []struct {
		name string
		rc   *receiver
		want []string
	}{
		{"payments", payments, []string{paysEU, paysUS, scheduled}},
		{"eu", eu, []string{paysEU}},
		{"nightly", nightly, []string{scheduled}},
	} {
		got := ids(c.rc.deliveries())
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s took %v, want %v", c.name, got, c.want)
		}
	}
	var texts []string
	for _, d := range payments.deliveries() {
		texts = append(texts, string(d.raw))
	}
	slices.Sort(texts)
	for i, want := range []string{
		`{"text":"flrh: Run *r-1* (refunds@1, order=A-1, region=eu, team=payments) waits for an approval (0 requests)."}`,
		`{"text":"flrh: Run *r-2* (refunds@1, region=us, team=payments) waits for an approval (0 requests)."}`,
		`{"text":"flrh: Run *r-5* (refunds@1, team=payments) ended: ."}`,
	} {
		if i >= len(texts) || texts[i] != want {
			t.Errorf("the chat got %q, want %q", texts, want)
			break
		}
	}
	if f.backlog() != 0 {
		t.Fatalf("backlog %d", f.backlog())
	}
}

// A route that fails is tried again alone: the routes that took the
// notice are kept with it in the store and not sent it again, even by
// another notifier once the first is gone; each failed route waits as
// long as it asked, and one that asked for long holds back no other.
func TestFailedRouteTriedAgainAlone(t *testing.T) {
	f := newFixture(t)
	chat, chatRoute := f.route("chat", secret)
	pager, pagerRoute := f.route("pager", secret, 503, 502)
	slow, slowRoute := f.route("slow", secret, 429)
	slow.retry = "120"
	id := f.ended("r1")
	routes := []Route{chatRoute, pagerRoute, slowRoute}
	second := func(c *Config) { c.MinDelay = time.Second }
	n := f.routed("a", routes, second)
	f.pass(n, 1) // chat takes it; the pager waits 1 s, the slow one 120 s
	claimed, err := f.store.ClaimNotices(ctx, "peek", time.Millisecond, 1)
	if err != nil || len(claimed) != 0 {
		t.Fatalf("claimed %v (%v) while waiting", claimed, err)
	}
	f.clock.Advance(time.Second - time.Millisecond)
	f.pass(n, 0)
	f.clock.Advance(time.Millisecond)
	// Another notifier (the first one gone) sends to the pager alone,
	// twice (it waits 2 s after its second failure); the slow one is not
	// asked before its 120 s.
	other := f.routed("b", routes, second)
	f.pass(other, 1)
	f.clock.Advance(2 * time.Second)
	f.pass(other, 1)
	if got := len(pager.deliveries()); got != 3 || len(slow.deliveries()) != 1 {
		t.Fatalf("after 3 s the pager took %d attempts, the slow route %d", got, len(slow.deliveries()))
	}
	f.clock.Advance(117*time.Second - time.Millisecond)
	f.pass(other, 0)
	f.clock.Advance(time.Millisecond)
	f.pass(other, 1)
	if f.backlog() != 0 {
		t.Fatalf("backlog %d", f.backlog())
	}
	for _, c := range []struct {
		name     string
		rc       *receiver
		attempts []string
	}{{"chat", chat, []string{"1"}}, {"pager", pager, []string{"1", "2", "3"}}, {"slow", slow, []string{"1", "4"}}} {
		var got []string
		for _, d := range c.rc.deliveries() {
			if d.id != id {
				t.Fatalf("%s took %s", c.name, d.id)
			}
			got = append(got, d.attempt)
		}
		if !slices.Equal(got, c.attempts) {
			t.Errorf("%s took attempts %v, want %v", c.name, got, c.attempts)
		}
	}
	if f.seen["chat/delivered"] != 1 || f.seen["pager/failed"] != 2 || f.seen["pager/delivered"] != 1 || f.seen["slow/failed"] != 1 ||
		f.seen["slow/delivered"] != 1 || f.seen["delivered"] != 3 {
		t.Fatalf("outcomes %v", f.seen)
	}
}

// partDelivered is a fixture whose one notice the chat route took and
// the pager route refused (503) an hour ago, with the pager's route.
func partDelivered(t *testing.T) (*fixture, Route) {
	f := newFixture(t)
	_, chatRoute := f.route("chat", secret)
	_, pagerRoute := f.route("pager", secret, 503)
	f.ended("r1")
	f.pass(f.routed("a", []Route{chatRoute, pagerRoute}), 1)
	f.clock.Advance(time.Hour)
	return f, pagerRoute
}

// What the store keeps of a part-delivered notice: the routes that took
// it, and why the others did not, each named.
func TestPartDeliveryKept(t *testing.T) {
	f, _ := partDelivered(t)
	got, err := f.store.ClaimNotices(ctx, "peek", time.Minute, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("claimed %v (%v)", got, err)
	}
	if !slices.Equal(got[0].Sent, []string{"chat"}) || got[0].LastError != "route pager: the receiver answered 503 Service Unavailable" {
		t.Fatalf("kept sent %q, last error %q", got[0].Sent, got[0].LastError)
	}
}

// Routes renamed or removed since a notice reached them are forgotten:
// the routes of the notifier that delivers now decide.
func TestRoutesRenamed(t *testing.T) {
	f, pagerRoute := partDelivered(t)
	renamed, renamedRoute := f.route("team-chat", secret)
	n := f.routed("b", []Route{renamedRoute, pagerRoute})
	f.pass(n, 1)
	if len(renamed.deliveries()) != 1 || f.backlog() != 0 {
		t.Fatalf("the renamed route took %d, backlog %d", len(renamed.deliveries()), f.backlog())
	}
}

// A notice some routes took and others could not before GiveUp is
// dropped for those, and counted dropped at each.
func TestPartDeliveryDropped(t *testing.T) {
	f := newFixture(t)
	_, chatRoute := f.route("chat", secret)
	pager, pagerRoute := f.route("pager", secret, 500, 500)
	f.ended("r1")
	f.passUntilGivenUp(f.routed("a", []Route{chatRoute, pagerRoute}, giveUpSoon))
	if f.backlog() != 0 || len(pager.deliveries()) != 2 || f.seen["pager/dropped"] != 1 || f.seen["chat/delivered"] != 1 || f.seen["dropped"] != 1 {
		t.Fatalf("backlog %d, outcomes %v", f.backlog(), f.seen)
	}
}

// New refuses routes that cannot be delivered to, naming the route and
// no part of its URL.
func TestNewRefusesRoutes(t *testing.T) {
	f := newFixture(t)
	good := func(name string) Route {
		return Route{Name: name, URL: "https://hooks.example.com/T0/secret-path", Secret: secret}
	}
	// b is the good route b changed by edit.
	b := func(edit func(*Route)) Route { r := good("b"); edit(&r); return r }
	for name, c := range map[string]struct {
		routes []Route
		oneURL bool     // the single webhook's URL and secret given too
		kinds  []string // the single webhook's kinds given too
		find   string
	}{
		"routes and a URL":     {routes: []Route{good("a")}, oneURL: true, find: "not both"},
		"routes and a kind":    {routes: []Route{good("a")}, kinds: []string{"run_ended"}, find: "not both"},
		"two of one name":      {routes: []Route{good("a"), good("a")}, find: `two routes are named "a"`},
		"a bad name":           {routes: []Route{good("a,b")}, find: `name "a,b"`},
		"no name":              {routes: []Route{good("")}, find: `name ""`},
		"too many":             {routes: manyRoutes(MaxRoutes+1, good), find: "more than 32"},
		"a short secret":       {routes: []Route{good("a"), b(func(r *Route) { r.Secret = secret[:15] })}, find: `route "b": the signing secret holds 15 bytes`},
		"a bad URL":            {routes: []Route{b(func(r *Route) { r.URL = "ftp://x/secret-path" })}, find: `route "b": the webhook URL`},
		"no kinds":             {routes: []Route{b(func(r *Route) { r.Kinds = []string{} })}, find: "kinds names no kind"},
		"an unknown kind":      {routes: []Route{b(func(r *Route) { r.Kinds = []string{"paged"} })}, find: `"paged" is not a kind`},
		"no workflows":         {routes: []Route{b(func(r *Route) { r.Workflows = []string{} })}, find: "workflows names no workflow"},
		"an empty workflow":    {routes: []Route{b(func(r *Route) { r.Workflows = []string{""} })}, find: "a workflow named is empty"},
		"an unknown format":    {routes: []Route{b(func(r *Route) { r.Format = "teams" })}, find: `format "teams"`},
		"credentials in URL":   {routes: []Route{b(func(r *Route) { r.URL = "https://u:p@x/secret-path" })}, find: "carries credentials"},
		"after the give-up":    {routes: []Route{b(func(r *Route) { r.After = DefaultGiveUp })}, find: `route "b": after 72h0m0s is not less than the give-up age`},
		"after, negative":      {routes: []Route{b(func(r *Route) { r.After = -time.Hour })}, find: "is negative"},
		"after, of ends":       {routes: []Route{b(func(r *Route) { r.After, r.Kinds = time.Hour, []string{"run_ended"} })}, find: "run_ended is no run waiting for a person"},
		"after, no StillWaits": {routes: []Route{b(func(r *Route) { r.After = time.Hour })}, find: `route "b" is told after a wait, and Config.StillWaits is not set`},
	} {
		cfg := Config{Board: f.store, Holder: "a", Routes: c.routes, Kinds: c.kinds}
		if c.oneURL {
			cfg.URL, cfg.Secret = f.url, secret
		}
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), c.find) || strings.Contains(err.Error(), "secret-path") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Thirty-two routes are allowed.
	if _, err := New(Config{Board: f.store, Holder: "a", Routes: manyRoutes(MaxRoutes, good)}); err != nil {
		t.Fatal(err)
	}
}

func manyRoutes(n int, good func(string) Route) []Route {
	rs := make([]Route, n)
	for i := range rs {
		rs[i] = good("r" + strconv.Itoa(i))
	}
	return rs
}

// Test posts to every route and names each that did not take it.
func TestTestPostsToEveryRoute(t *testing.T) {
	f := newFixture(t)
	chat, chatRoute := f.route("chat", secret)
	pager, pagerRoute := f.route("pager", secret, 503)
	chatRoute.Format = FormatSlack
	err := Test(ctx, Config{Routes: []Route{chatRoute, pagerRoute}, Clock: f.clock.Now})
	if err == nil || err.Error() != "notify: route pager: the receiver answered 503 Service Unavailable" {
		t.Fatalf("Test: %v", err)
	}
	if len(chat.deliveries()) != 1 || len(pager.deliveries()) != 1 || chat.deliveries()[0].kind != TestKind {
		t.Fatalf("chat %d, pager %d", len(chat.deliveries()), len(pager.deliveries()))
	}
}

// A routes file, JSON or YAML, is read to what it says; any fault is a
// *RoutesError naming the route and member.
func TestParseRoutes(t *testing.T) {
	const good = `{"routes": [
  {"name": "approvals", "url_env": "FLRH_SLACK_URL", "format": "slack", "kinds": ["approval_waiting", "choice_waiting"], "workflows": ["refund-agent"]},
  {"name": "oncall", "url": "https://pager.example.com/flrh", "secret_env": "PAGER_SECRET", "kinds": ["reconciliation_waiting", "run_tripped"]},
  {"name": "audit", "url": "http://127.0.0.1:9000/", "labels": {"team": "payments", "flrh.schedule": "nightly"}},
  {"name": "manager", "url_env": "FLRH_MANAGER_URL", "kinds": ["approval_waiting"], "after": "4h"},
  {"name": "mail", "url": "smtp://mail.example.com:587", "format": "email", "from": "flrh@example.com", "to": ["finance@example.com"]},
  {"name": "phones", "url": "https://api.twilio.com/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages.json", "secret_env": "TWILIO_AUTH_TOKEN", "format": "sms", "from": "+15550000000", "to": ["+15550000001", "+15550000002"], "kinds": ["approval_waiting"], "after": "30m"}
]}`
	want := []RouteSpec{
		{Name: "approvals", URLEnv: "FLRH_SLACK_URL", Format: FormatSlack, Kinds: []string{"approval_waiting", "choice_waiting"}, Workflows: []string{"refund-agent"}},
		{Name: "oncall", URL: "https://pager.example.com/flrh", SecretEnv: "PAGER_SECRET", Kinds: []string{"reconciliation_waiting", "run_tripped"}},
		{Name: "audit", URL: "http://127.0.0.1:9000/", Labels: map[string]string{"team": "payments", "flrh.schedule": "nightly"}},
		{Name: "manager", URLEnv: "FLRH_MANAGER_URL", Kinds: []string{"approval_waiting"}, After: "4h"},
		{Name: "mail", URL: "smtp://mail.example.com:587", Format: FormatEmail, From: "flrh@example.com", To: []string{"finance@example.com"}},
		{Name: "phones", URL: "https://api.twilio.com/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages.json", SecretEnv: "TWILIO_AUTH_TOKEN", Format: FormatSMS,
			From: "+15550000000", To: []string{"+15550000001", "+15550000002"}, Kinds: []string{"approval_waiting"}, After: "30m"},
	}
	got, err := ParseRoutes([]byte(good), false)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("JSON: %+v (%v)", got, err)
	}
	if got[3].AfterDuration() != 4*time.Hour || got[2].AfterDuration() != 0 {
		t.Fatalf("after: %v, %v", got[3].AfterDuration(), got[2].AfterDuration())
	}
	y, err := yamljson.FromJSON([]byte(good), "routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = ParseRoutes(y, true)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("YAML:\n%s\n%+v (%v)", y, got, err)
	}

	o365 := `{"routes": [{"name": "o365", "url": "smtp://alerts%40example.com@smtp.office365.com:587", "format": "email", "from": "alerts@example.com", "to": ["ops@example.com"],
  "oauth2": {"token_url": "https://login.microsoftonline.com/tenant/oauth2/v2.0/token", "client_id": "c-1", "client_secret_env": "FLRH_MAIL_SECRET", "scope": "https://outlook.office365.com/.default"}}]}`
	if got, err := ParseRoutes([]byte(o365), false); err != nil || *got[0].OAuth2 != (OAuth2Spec{TokenURL: "https://login.microsoftonline.com/tenant/oauth2/v2.0/token",
		ClientID: "c-1", ClientSecretEnv: "FLRH_MAIL_SECRET", Scope: "https://outlook.office365.com/.default"}) {
		t.Fatalf("oauth2: %+v (%v)", got, err)
	}

	route := func(members string) string {
		return `{"routes": [{"name": "a", "url": "https://x.example/h"}, {` + members + `}]}`
	}
	const mail = `"format": "email", "from": "f@example.com", "to": ["t@example.com"]`
	oauth2 := func(tokenURL, env, scope string) string {
		return `"oauth2": {"token_url": "` + tokenURL + `", "client_id": "c", "client_secret_env": "` + env + `", "scope": "` + scope + `"}`
	}
	for _, c := range []struct {
		name, file string
		at         int
		member     string
		find       string
	}{
		{"not JSON", `{"routes": [`, -1, "", "not a JSON document"},
		{"a key twice", `{"routes": [], "routes": []}`, -1, "", "not a JSON document"},
		{"a float", route(`"name": "b", "url": "https://x.example/h", "n": 1.5`), -1, "", "not a JSON document"},
		{"an unknown member at the top", `{"routes": [{"name": "a", "url": "https://x.example/h"}], "extra": 1}`, -1, "", "unknown field"},
		{"no routes", `{"routes": []}`, -1, "", "no routes"},
		{"no routes member", `{}`, -1, "", "no routes"},
		{"too many routes", `{"routes": [` + strings.TrimSuffix(strings.Repeat(`{"name": "a", "url": "https://x.example/h"},`, MaxRoutes+1), ",") + `]}`, -1, "", "33 routes"},
		{"an unknown member", route(`"name": "b", "url": "https://x.example/h", "secret": "inline"`), 1, "", `unknown field "secret"`},
		{"a name of the wrong type", route(`"name": 7, "url": "https://x.example/h"`), 1, "", "cannot unmarshal number"},
		{"a bad name", route(`"name": "b c", "url": "https://x.example/h"`), 1, "name", `"b c" is not`},
		{"a name taken", route(`"name": "a", "url": "https://x.example/h"`), 1, "name", "earlier route"},
		{"url and url_env", route(`"name": "b", "url": "https://x.example/h", "url_env": "X"`), 1, "url", "one of them"},
		{"neither url", route(`"name": "b"`), 1, "url", "one of them"},
		{"a bad url", route(`"name": "b", "url": "mailto:ops@example.com"`), 1, "url", "not an http or https URL"},
		{"credentials in the url", route(`"name": "b", "url": "https://u:p@x.example/h"`), 1, "url", "without user or password"},
		{"a bad variable", route(`"name": "b", "url_env": "1X"`), 1, "url_env", `"1X" is not a variable`},
		{"a bad secret variable", route(`"name": "b", "url_env": "X", "secret_env": "A-B"`), 1, "secret_env", `"A-B" is not a variable`},
		{"a bad format", route(`"name": "b", "url_env": "X", "format": "teams"`), 1, "format", `"teams" is not`},
		{"a template without its format", route(`"name": "b", "url_env": "X", "template": "{}"`), 1, "template", "only with it"},
		{"the template format without one", route(`"name": "b", "url_env": "X", "format": "template"`), 1, "template", "only with it"},
		{"a template that does not parse", route(`"name": "b", "url_env": "X", "format": "template", "template": "{{json .Text"`), 1, "template", "unclosed action"},
		{"a template writing no JSON", route(`"name": "b", "url_env": "X", "format": "template", "template": "{\"content\": {{.Text}}}"`), 1, "template", "wrote no JSON document"},
		{"a template reading nothing there", route(`"name": "b", "url_env": "X", "format": "template", "template": "{{json .Nope}}"`), 1, "template", "can't evaluate field Nope"},
		{"no kinds", route(`"name": "b", "url_env": "X", "kinds": []`), 1, "kinds", "names no kind"},
		{"an unknown kind", route(`"name": "b", "url_env": "X", "kinds": ["run_paged"]`), 1, "kinds", `"run_paged" is not a kind`},
		{"a kind twice", route(`"name": "b", "url_env": "X", "kinds": ["run_ended", "run_ended"]`), 1, "kinds", "named twice"},
		{"no workflows", route(`"name": "b", "url_env": "X", "workflows": []`), 1, "workflows", "names no workflow"},
		{"an empty workflow", route(`"name": "b", "url_env": "X", "workflows": [""]`), 1, "workflows", "workflow 0 is not an id"},
		{"a workflow twice", route(`"name": "b", "url_env": "X", "workflows": ["w", "w"]`), 1, "workflows", "named twice"},
		{"no labels", route(`"name": "b", "url_env": "X", "labels": {}`), 1, "labels", "names no label"},
		{"a bad label", route(`"name": "b", "url_env": "X", "labels": {"Team": "x"}`), 1, "labels", `label "Team": a key is lower-case`},
		{"a label with no value", route(`"name": "b", "url_env": "X", "labels": {"team": ""}`), 1, "labels", "the value is empty"},
		{"after no duration", route(`"name": "b", "url_env": "X", "after": "soon"`), 1, "after", `"soon" is not a positive duration`},
		{"after a number", route(`"name": "b", "url_env": "X", "after": 3600`), 1, "", "cannot unmarshal number"},
		{"after nothing", route(`"name": "b", "url_env": "X", "after": "0s"`), 1, "after", "not a positive duration"},
		{"email with a secret", route(`"name": "b", "url_env": "X", "format": "email", "from": "f@example.com", "to": ["t@example.com"], "secret_env": "S"`), 1, "secret_env", "not signed"},
		{"email without from", route(`"name": "b", "url_env": "X", "format": "email", "to": ["t@example.com"]`), 1, "from", "sender's address"},
		{"email without to", route(`"name": "b", "url_env": "X", "format": "email", "from": "f@example.com"`), 1, "to", "one recipient"},
		{"email to a name", route(`"name": "b", "url_env": "X", "format": "email", "from": "f@example.com", "to": ["Finance <t@example.com>"]`), 1, "to", "address alone"},
		{"email to one twice", route(`"name": "b", "url_env": "X", "format": "email", "from": "f@example.com", "to": ["t@example.com", "t@example.com"]`), 1, "to", "named twice"},
		{"email over http", route(`"name": "b", "url": "https://x.example/h", "format": "email", "from": "f@example.com", "to": ["t@example.com"]`), 1, "url", "not an smtp or smtps URL"},
		{"email with a password written", route(`"name": "b", "url": "smtp://u:p@mail.example.com", "format": "email", "from": "f@example.com", "to": ["t@example.com"]`), 1, "url", "credentials go in url_env"},
		{"oauth2 on a webhook", route(`"name": "b", "url_env": "X", ` + oauth2("https://login.example.com/t", "S", "mail")), 1, "oauth2", "only an e-mail route"},
		{"oauth2's token over http", route(`"name": "b", "url_env": "X", ` + mail + `, ` + oauth2("http://login.example.com/t", "S", "mail")), 1, "oauth2", "is not https://"},
		{"oauth2 without scope", route(`"name": "b", "url_env": "X", ` + mail + `, ` + oauth2("https://login.example.com/t", "S", "")), 1, "oauth2", "give client_id and scope"},
		{"oauth2's secret variable", route(`"name": "b", "url_env": "X", ` + mail + `, ` + oauth2("https://login.example.com/t", "S-1", "mail")), 1, "oauth2", `"S-1" is not a variable's name`},
		{"oauth2 with a password written", route(`"name": "b", "url": "smtp://u:p@mail.example.com", ` + mail + `, ` + oauth2("https://login.example.com/t", "S", "mail")), 1, "url", "without user or password"},
		{"oauth2 missing a member", route(`"name": "b", "url_env": "X", ` + mail + `, "oauth2": {"token_url": "https://login.example.com/t"}`), 1, "oauth2", "give client_id and scope"},
		{"a webhook to someone", route(`"name": "b", "url_env": "X", "to": ["t@example.com"]`), 1, "from", "e-mail or SMS route's"},
		{"sms without its token", route(`"name": "b", "url_env": "X", "format": "sms", "from": "+15550000000", "to": ["+15550000001"]`), 1, "secret_env", "auth token"},
		{"sms to no one", route(`"name": "b", "url_env": "X", "format": "sms", "secret_env": "T", "from": "+15550000000"`), 1, "to", "one number at least"},
		{"sms to a name", route(`"name": "b", "url_env": "X", "format": "sms", "secret_env": "T", "from": "+15550000000", "to": ["oncall"]`), 1, "to", `"oncall" is not a number in E.164`},
		{"sms to one twice", route(`"name": "b", "url_env": "X", "format": "sms", "secret_env": "T", "from": "+15550000000", "to": ["+15550000001", "+15550000001"]`), 1, "to", "named twice"},
		{"sms from an e-mail", route(`"name": "b", "url_env": "X", "format": "sms", "secret_env": "T", "from": "f@example.com", "to": ["+15550000001"]`), 1, "from", "neither a number"},
		{"sms elsewhere", route(`"name": "b", "url": "https://api.twilio.com/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json", "format": "sms", "secret_env": "T", "from": "+15550000000", "to": ["+15550000001"]`), 1, "url", "Messages resource"},
		{"sms named too long", route(`"name": "` + strings.Repeat("b", 49) + `", "url_env": "X", "format": "sms", "secret_env": "T", "from": "+15550000000", "to": ["+15550000001"]`), 1, "name", "at most 48"},
		{"sms to eleven", route(`"name": "b", "url_env": "X", "format": "sms", "secret_env": "T", "from": "+15550000000", "to": ["+15550000001","+15550000002","+15550000003","+15550000004","+15550000005","+15550000006","+15550000007","+15550000008","+15550000009","+15550000010","+15550000011"]`), 1, "to", "11 numbers, more than 10"},
		{"after a negative wait", route(`"name": "b", "url_env": "X", "after": "-1h"`), 1, "after", "not a positive duration"},
		{"after, of runs that ended", route(`"name": "b", "url_env": "X", "after": "1h", "kinds": ["approval_waiting", "run_ended"]`), 1, "kinds", "run_ended is no run waiting"},
	} {
		_, err := ParseRoutes([]byte(c.file), false)
		var re *RoutesError
		if !errors.As(err, &re) || re.Route != c.at || re.Member != c.member || !strings.Contains(err.Error(), c.find) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// YAML faults are placed by line.
	_, err = ParseRoutes([]byte("routes:\n  - name: a\n    name: b\n"), true)
	var ye *yamljson.Error
	if !errors.As(err, &ye) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a YAML key twice: %v", err)
	}
}

// Whatever ParseRoutes accepts, written again as JSON, reads back the
// same.
func TestParseRoutesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "n")
		var specs []RouteSpec
		for i := range n {
			s := RouteSpec{Name: "r" + strconv.Itoa(i)}
			if rapid.Bool().Draw(t, "inline") {
				s.URL = "https://hooks.example.com/" + rapid.StringMatching(`[a-z0-9]{0,12}`).Draw(t, "path")
			} else {
				s.URLEnv = rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,20}`).Draw(t, "env")
			}
			s.Format = rapid.SampledFrom([]string{"", FormatFlrh, FormatSlack}).Draw(t, "format")
			if rapid.Bool().Draw(t, "kinds") {
				s.Kinds = rapid.SliceOfNDistinct(rapid.SampledFrom(Kinds), 1, len(Kinds), rapid.ID).Draw(t, "kind list")
			}
			if rapid.Bool().Draw(t, "workflows") {
				s.Workflows = rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z-]{0,15}`), 1, 3, rapid.ID).Draw(t, "workflow list")
			}
			specs = append(specs, s)
		}
		b, err := json.Marshal(struct {
			Routes []RouteSpec `json:"routes"`
		}{specs})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseRoutes(b, false)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(specs) {
			t.Fatalf("%s read as %+v (%v)", b, got, err)
		}
	})
}

// ParseRoutes never panics; what it accepts is a list of routes each of
// which passes its own check again.
func FuzzParseRoutes(f *testing.F) {
	f.Add([]byte(`{"routes": [{"name": "a", "url": "https://x.example/h", "kinds": ["run_ended"]}]}`), false)
	f.Add([]byte("routes:\n  - name: a\n    url_env: X\n    workflows: [w]\n"), true)
	f.Add([]byte(`{"routes": [{"name": "a", "url_env": "X"}, {"name": "a", "url_env": "Y"}]}`), false)
	f.Add([]byte(`{"routes": [{"name": "p", "url_env": "X", "secret_env": "T", "format": "sms", "from": "MG0123456789abcdef0123456789abcdef", "to": ["+15550000001"]}]}`), false)
	f.Add([]byte(`{"routes": [{"name": "m", "url": "smtp://a%40b.example@mail.example.com", "format": "email", "from": "a@b.example", "to": ["c@d.example"], "oauth2": {"token_url": "https://login.example.com/t", "client_id": "c", "client_secret_env": "S", "scope": "mail"}}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		specs, err := ParseRoutes(data, yaml)
		if err != nil {
			return
		}
		if len(specs) == 0 || len(specs) > MaxRoutes {
			t.Fatalf("accepted %d routes", len(specs))
		}
		for i := range specs {
			if err := specs[i].check(i, specs[:i]); err != nil {
				t.Fatalf("accepted route %d fails its check: %v", i, err)
			}
		}
	})
}

// A claim holds its notices long enough to deliver each to every route:
// a deliverer that died holding one leaves it to others only after
// that, and they deliver it again to every route, under its id.
func TestHoldCoversEveryRoute(t *testing.T) {
	f := newFixture(t)
	var rcs []*receiver
	var routes []Route
	for _, name := range []string{"a", "b", "c"} {
		rc, r := f.route(name, secret)
		rcs, routes = append(rcs, rc), append(routes, r)
	}
	f.ended("r1")
	dead := f.routed("dead", routes, func(c *Config) { c.Board = &deadAfterSend{Noticeboard: f.store} })
	if _, err := dead.Pass(ctx); err == nil {
		t.Fatal("the crash was not simulated")
	}
	live := f.routed("live", routes)
	hold := time.Duration(DefaultBatch*len(routes)+1) * 5 * time.Second
	f.clock.Advance(hold - time.Millisecond)
	f.pass(live, 0)
	f.clock.Advance(time.Millisecond)
	f.pass(live, 1)
	for i, rc := range rcs {
		if got := rc.deliveries(); len(got) != 2 || got[1].attempt != "2" {
			t.Fatalf("route %s took %d deliveries", routes[i].Name, len(got))
		}
	}
}

// A route of format template posts what its template writes from the
// notice (a Discord-style body here), signed as any delivery, with the
// run's sentence and link as text; every kind of notice is checked
// against the template when the notifier is made.
func TestTemplateRoute(t *testing.T) {
	f := newFixture(t)
	rc, r := f.route("discord", secret)
	r.Format = FormatTemplate
	r.Template = `{"username": "flrh", "content": {{json .Text}},
  "embeds": [{"title": {{json .Kind}}, "url": {{json .Link}}, "footer": {"text": {{json .ID}}}, "fields": [{"name": "attempt", "value": "{{.Attempt}}"}]}]}`
	f.commit("r-approve", "refunds", store.NoticeApproval)
	n := f.routed("a", []Route{r}, func(c *Config) { c.Link = "https://flrh.example.com" })
	f.pass(n, 1)
	got := rc.deliveries()
	if len(got) != 1 || got[0].verified != nil {
		t.Fatalf("deliveries %+v", got)
	}
	var body struct {
		Username, Content string
		Embeds            []struct {
			Title, URL string
			Footer     struct{ Text string }
			Fields     []struct{ Name, Value string }
		}
	}
	if err := json.Unmarshal(got[0].raw, &body); err != nil {
		t.Fatalf("%s: %v", got[0].raw, err)
	}
	want := "flrh: Run r-approve (refunds@1) waits for an approval (0 requests). Open the approvals inbox: https://flrh.example.com/ui/#/inbox"
	if body.Username != "flrh" || body.Content != want || len(body.Embeds) != 1 || body.Embeds[0].Title != store.NoticeApproval ||
		body.Embeds[0].URL != "https://flrh.example.com/ui/#/inbox" || body.Embeds[0].Footer.Text != got[0].id || body.Embeds[0].Fields[0].Value != "1" {
		t.Fatalf("the body %s", got[0].raw)
	}

	// A template that would write something else than JSON for some kind
	// is refused before anything is delivered.
	bad := r
	bad.Template = `{{if eq .Kind "run_ended"}}done{{else}}{"content": {{json .Text}}}{{end}}`
	_, err := New(Config{Board: f.store, Holder: "b", Routes: []Route{bad}})
	if err == nil || !strings.Contains(err.Error(), `route "discord": the template: for a notice of kind run_ended`) {
		t.Fatalf("a template failing one kind: %v", err)
	}
}

// The templated route docs/notices.md shows, written in YAML with a
// block scalar, reads and compiles.
func TestDocumentedTemplateRoute(t *testing.T) {
	y := "routes:\n  - name: sre-discord\n    url_env: FLRH_DISCORD_HOOK_URL\n    format: template\n" +
		"    kinds: [reconciliation_waiting, run_tripped, run_quarantined]\n    template: |\n" +
		"      {\"username\": \"flrh\", \"content\": {{json .Text}},\n" +
		"       \"embeds\": [{\"title\": {{json .Kind}}, \"url\": {{json .Link}}, \"footer\": {\"text\": {{json .ID}}}}]}\n"
	specs, err := ParseRoutes([]byte(y), true)
	if err != nil || len(specs) != 1 || specs[0].Format != FormatTemplate || !strings.Contains(specs[0].Template, "\n \"embeds\"") {
		t.Fatalf("%+v (%v)", specs, err)
	}
}

// SetRoutes replaces the routes at the next pass: a route added hears of
// a notice still waiting; one removed is sent nothing more; routes that
// cannot be delivered to are refused and the old ones kept.
func TestSetRoutes(t *testing.T) {
	f := newFixture(t)
	chat, chatRoute := f.route("chat", secret)
	pager, pagerRoute := f.route("pager", secret, 503)
	n := f.routed("a", []Route{chatRoute, pagerRoute})
	id := f.ended("r1")
	f.pass(n, 1) // chat took it, the pager did not
	audit, auditRoute := f.route("audit", secret)
	bad := auditRoute
	bad.Secret = secret[:10]
	if err := n.SetRoutes([]Route{chatRoute, bad}); err == nil || !strings.Contains(err.Error(), `route "audit": the signing secret`) {
		t.Fatalf("bad routes: %v", err)
	}
	if err := n.SetRoutes(nil); err == nil {
		t.Fatal("no routes accepted")
	}
	if err := n.SetRoutes([]Route{chatRoute, auditRoute}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	f.pass(n, 1)
	if len(chat.deliveries()) != 1 || len(pager.deliveries()) != 1 || len(audit.deliveries()) != 1 || audit.deliveries()[0].id != id || f.backlog() != 0 {
		t.Fatalf("chat %d, pager %d, audit %d, backlog %d", len(chat.deliveries()), len(pager.deliveries()), len(audit.deliveries()), f.backlog())
	}
}

// A route backs off by its own failures: one added while another has
// failed three times waits a second after its first failure, not the
// eight the notice's fourth attempt would give; the envelope still says
// the notice's attempt.
func TestRouteBacksOffByItsOwnFailures(t *testing.T) {
	f := newFixture(t)
	old, oldRoute := f.route("old", secret, 503, 503, 503, 503, 503)
	added, addedRoute := f.route("added", secret, 503)
	f.ended("r1")
	n := f.routed("a", []Route{oldRoute}, func(c *Config) { c.MinDelay, c.MaxDelay = time.Second, time.Hour })
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		f.pass(n, 1)
		f.clock.Advance(wait)
	}
	if err := n.SetRoutes([]Route{oldRoute, addedRoute}); err != nil {
		t.Fatal(err)
	}
	f.pass(n, 1) // old fails a fourth time (8 s), added its first (1 s)
	f.clock.Advance(time.Second - time.Millisecond)
	f.pass(n, 0)
	f.clock.Advance(time.Millisecond)
	f.pass(n, 1)
	var attempts []string
	for _, d := range added.deliveries() {
		attempts = append(attempts, d.attempt)
	}
	if !slices.Equal(attempts, []string{"4", "5"}) || len(old.deliveries()) != 4 {
		t.Fatalf("the added route took attempts %v, the old route %d deliveries", attempts, len(old.deliveries()))
	}
	got, err := f.store.ClaimNotices(ctx, "peek", time.Minute, 1)
	if err != nil || len(got) != 0 {
		t.Fatalf("claimed %+v (%v) while the old route waits", got, err)
	}
	f.clock.Advance(7 * time.Second)
	got, err = f.store.ClaimNotices(ctx, "peek", time.Minute, 1)
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Sent, []string{"added"}) ||
		!slices.Equal(got[0].Waits, []store.RouteWait{{Route: "old", After: 0, Failures: 4}}) {
		t.Fatalf("after the old route's wait claimed %+v (%v)", got, err)
	}
}
