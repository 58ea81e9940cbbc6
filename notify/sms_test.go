package notify

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const smsAccountSID = "AC0123456789abcdef0123456789abcdef"

// twilio stands for Twilio's Messages API: it records each message's
// form and authorization, and answers each number's messages from its
// script (201 once the script is spent).
type twilio struct {
	mu     sync.Mutex
	script map[string][]int
	got    []url.Values
	auth   []string
	types  []string
}

func (tw *twilio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if r.URL.Path != "/2010-04-01/Accounts/"+smsAccountSID+"/Messages.json" {
		http.NotFound(w, r)
		return
	}
	tw.got = append(tw.got, form)
	tw.auth = append(tw.auth, r.Header.Get("Authorization"))
	tw.types = append(tw.types, r.Header.Get("Content-Type"))
	to := form.Get("To")
	if s := tw.script[to]; len(s) > 0 {
		tw.script[to] = s[1:]
		w.WriteHeader(s[0])
		return
	}
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"sid":"SM00000000000000000000000000000000","status":"queued"}`)
}

func (tw *twilio) texts(to string) []url.Values {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	var out []url.Values
	for _, f := range tw.got {
		if f.Get("To") == to {
			out = append(out, f)
		}
	}
	return out
}

// An SMS route naming two numbers texts each once, through the account's
// Messages resource with its auth token; a number Twilio fails is texted
// again alone, the other is not; a messaging service's SID is sent as
// such.
func TestSMSRoutes(t *testing.T) {
	tw := &twilio{script: map[string][]int{"+15550000002": {http.StatusInternalServerError}}}
	srv := httptest.NewServer(tw)
	t.Cleanup(srv.Close)
	f := newFixture(t)
	f.ended("r1")
	route := Route{Name: "oncall", Format: FormatSMS, URL: srv.URL + "/2010-04-01/Accounts/" + smsAccountSID + "/Messages.json",
		Secret: []byte("the-auth-token"), From: "+15550000000", To: []string{"+15550000001", "+15550000002"}}
	routes := SMSRoutes(route)
	if len(routes) != 2 || routes[0].Name != "oncall.15550000001" || routes[1].Name != "oncall.15550000002" || routes[1].To[0] != "+15550000002" {
		t.Fatalf("a route per number: %+v", routes)
	}
	n := f.notifier("a", func(c *Config) {
		c.URL, c.Secret, c.Routes, c.Link = "", nil, routes, "https://flrh.example.com"
		giveUpSoon(c)
	})
	f.pass(n, 1)
	one, two := tw.texts("+15550000001"), tw.texts("+15550000002")
	if len(one) != 1 || len(two) != 1 || f.backlog() != 1 {
		t.Fatalf("texted %d and %d times, backlog %d", len(one), len(two), f.backlog())
	}
	want := "flrh: Run r1 (@) ended: success. Open the run: https://flrh.example.com/ui/#/run/r1"
	if got := one[0].Get("Body"); got != want || one[0].Get("From") != "+15550000000" || one[0].Get("MessagingServiceSid") != "" {
		t.Fatalf("the text: %v\nwant body %q", one[0], want)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(smsAccountSID+":the-auth-token"))
	if tw.auth[0] != basic || tw.types[0] != "application/x-www-form-urlencoded" {
		t.Fatalf("authorization %q, content type %q", tw.auth[0], tw.types[0])
	}
	// A minute on, only the number Twilio failed is texted again.
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
	if one, two := tw.texts("+15550000001"), tw.texts("+15550000002"); len(one) != 1 || len(two) != 2 || f.backlog() != 0 {
		t.Fatalf("after the retry: texted %d and %d times, backlog %d", len(one), len(two), f.backlog())
	}

	// A messaging service sends instead of a number.
	route.From, route.To, route.Name = "MG0123456789abcdef0123456789abcdef", []string{"+15550000003"}, "service"
	f.ended("r2")
	n = f.notifier("b", func(c *Config) { c.URL, c.Secret, c.Routes = "", nil, SMSRoutes(route) })
	f.pass(n, 1)
	if got := tw.texts("+15550000003"); len(got) != 1 || got[0].Get("MessagingServiceSid") != route.From || got[0].Get("From") != "" {
		t.Fatalf("through a messaging service: %v", got)
	}
}

func TestSMSRoutesRefused(t *testing.T) {
	good := Route{Name: "oncall.1", Format: FormatSMS, URL: "https://api.twilio.com/2010-04-01/Accounts/" + smsAccountSID + "/Messages.json",
		Secret: []byte("token"), From: "+15550000000", To: []string{"+15550000001"}}
	if err := checkRoutes([]Route{good}); err != nil {
		t.Fatalf("a good route: %v", err)
	}
	messages := "/2010-04-01/Accounts/" + smsAccountSID + "/Messages.json"
	for _, c := range []struct {
		words string
		mend  func(*Route)
	}{
		{"not a Twilio account's Messages resource", func(r *Route) { r.URL = "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages.json" }},
		{"not a Twilio account's Messages resource", func(r *Route) { r.URL = "https://user:pw@api.twilio.com" + messages }},
		{"not a Twilio account's Messages resource", func(r *Route) { r.URL = "http://api.twilio.com" + messages }},
		{"not a Twilio account's Messages resource", func(r *Route) { r.URL = "https://api.twilio.com" + messages + "?x=1" }},
		{`from: "5550000000" is neither`, func(r *Route) { r.From = "5550000000" }},
		{`to: "+0123" is not a number`, func(r *Route) { r.To = []string{"+0123"} }},
		{"texts one number", func(r *Route) { r.To = []string{"+15550000001", "+15550000002"} }},
		{"needs the account's auth token", func(r *Route) { r.Secret = nil }},
		{"a template and oauth2", func(r *Route) { r.Template = "{}" }},
	} {
		words, mend := c.words, c.mend
		r := good
		mend(&r)
		if err := checkRoutes([]Route{r}); err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v", words, err)
		}
	}
}

func TestSMSText(t *testing.T) {
	long := strings.Repeat("é", maxSMSChars+5)
	got := smsText(long)
	if n := len([]rune(got)); n != maxSMSChars || !strings.HasSuffix(got, "…") {
		t.Fatalf("cut to %d characters: …%q", n, got[len(got)-8:])
	}
	if smsText("short") != "short" {
		t.Fatal("a short text changed")
	}
}
