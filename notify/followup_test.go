package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// chat is a chat service's follow-up endpoint: it answers each message
// with the next status of its path's script (200 once it runs out) and
// records it.
type chat struct {
	mu     sync.Mutex
	script map[string][]int
	got    map[string][]string
}

func (c *chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get(SignatureHeader) != "" || r.Header.Get("Flrh-Notice-Id") != "" {
		body = []byte("bad headers: " + r.Header.Get("Content-Type"))
	}
	c.got[r.URL.Path] = append(c.got[r.URL.Path], string(body))
	status := http.StatusOK
	if s := c.script[r.URL.Path]; len(s) > 0 {
		status, c.script[r.URL.Path] = s[0], s[1:]
	}
	w.WriteHeader(status)
}

func (c *chat) messages(path string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got[path]...)
}

func newChat(t *testing.T, script map[string][]int) (*chat, string) {
	c := &chat{script: script, got: map[string][]string{}}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (f *fixture) followUp(runID, scheme, address string, ttl time.Duration) {
	f.t.Helper()
	if err := f.store.AddFollowUp(ctx, store.FollowUp{RunID: runID, Scheme: scheme, Address: address}, ttl); err != nil {
		f.t.Fatal(err)
	}
}

// A run's notice goes to its follow-ups besides the routes, as each
// chat service shows a message to one person; a follow-up that fails is
// tried again alone, one refused for good is told no more, and one
// expired is not told.
func TestFollowUps(t *testing.T) {
	chat, base := newChat(t, map[string][]int{"/slack": {http.StatusBadGateway}, "/gone": {http.StatusNotFound}})
	f := newFixture(t)
	f.followUp("r1", store.FollowUpSlack, base+"/slack", 30*time.Minute)
	f.followUp("r1", store.FollowUpDiscord, base+"/discord", 15*time.Minute)
	f.followUp("r1", store.FollowUpSlack, base+"/gone", 30*time.Minute)
	f.followUp("r2", store.FollowUpDiscord, base+"/r2", time.Minute)
	f.ended("r1")
	n := f.notifier("a", func(c *Config) {
		c.FollowUps, c.Link = f.store, "https://flrh.example.com"
		giveUpSoon(c)
	})
	f.pass(n, 1)
	slack := `{"replace_original":false,"response_type":"ephemeral","text":"flrh: Run *r1* (@) ended: success. \u003chttps://flrh.example.com/ui/#/run/r1|Open the run\u003e"}`
	discord := `{"content":"flrh: Run r1 (@) ended: success. Open the run: https://flrh.example.com/ui/#/run/r1","flags":64}`
	if got := chat.messages("/discord"); len(got) != 1 || got[0] != discord {
		t.Fatalf("Discord told %q\nwant %s", got, discord)
	}
	if got := chat.messages("/slack"); len(got) != 1 || got[0] != slack {
		t.Fatalf("Slack told %q\nwant %s", got, slack)
	}
	if got := chat.messages("/gone"); len(got) != 1 {
		t.Fatalf("the expired address told %d times", len(got))
	}
	if len(f.rc.deliveries()) != 1 || f.backlog() != 1 {
		t.Fatalf("route told %d times, backlog %d", len(f.rc.deliveries()), f.backlog())
	}
	// A minute later only Slack, which failed, is told again; the
	// address Slack refused (404) is not.
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
	if len(chat.messages("/slack")) != 2 || len(chat.messages("/discord")) != 1 || len(chat.messages("/gone")) != 1 || len(f.rc.deliveries()) != 1 || f.backlog() != 0 {
		t.Fatalf("after the retry: slack %d, discord %d, gone %d, route %d, backlog %d",
			len(chat.messages("/slack")), len(chat.messages("/discord")), len(chat.messages("/gone")), len(f.rc.deliveries()), f.backlog())
	}
	f.mu.Lock()
	seen := map[string]int{"follow-up/delivered": f.seen["follow-up/delivered"], "follow-up/failed": f.seen["follow-up/failed"], "follow-up/dropped": f.seen["follow-up/dropped"]}
	f.mu.Unlock()
	if seen["follow-up/delivered"] != 2 || seen["follow-up/failed"] != 1 || seen["follow-up/dropped"] != 1 {
		t.Fatalf("observed %v", seen)
	}

	// r2's follow-up has expired when its run ends: it is not told.
	f.clock.Advance(time.Minute)
	f.ended("r2")
	f.pass(n, 1)
	if got := chat.messages("/r2"); len(got) != 0 || f.backlog() != 0 {
		t.Fatalf("an expired follow-up told %q; backlog %d", got, f.backlog())
	}
}

// With follow-ups and no route, a notifier tells the people who started
// runs from chats, and deletes the notices of the other runs unsent.
func TestFollowUpsWithoutRoutes(t *testing.T) {
	chat, base := newChat(t, map[string][]int{"/r1": {http.StatusTooManyRequests}})
	f := newFixture(t)
	f.followUp("r1", store.FollowUpDiscord, base+"/r1", 15*time.Minute)
	f.ended("r1")
	f.ended("r2")
	n := f.notifier("a", func(c *Config) {
		c.URL, c.Secret, c.FollowUps = "", nil, f.store
		giveUpSoon(c)
	})
	f.pass(n, 2)
	if len(chat.messages("/r1")) != 1 || f.backlog() != 1 {
		t.Fatalf("first pass: %d messages, backlog %d", len(chat.messages("/r1")), f.backlog())
	}
	f.clock.Advance(time.Minute)
	f.pass(n, 1)
	if got := chat.messages("/r1"); len(got) != 2 || !strings.Contains(got[1], `"content":"flrh: Run r1 (@) ended: success."`) || f.backlog() != 0 {
		t.Fatalf("second pass: %q, backlog %d", got, f.backlog())
	}
	if _, err := New(Config{Board: f.store, Holder: "b"}); err == nil {
		t.Fatal("a notifier with no route and no follow-ups made")
	}
}

// unreadable is a store whose follow-ups cannot be read.
type unreadable struct{}

func (unreadable) FollowUps(context.Context, string) ([]store.FollowUp, error) {
	return nil, errors.New("the store is unreachable")
}

func (unreadable) AddFollowUp(context.Context, store.FollowUp, time.Duration) error { return nil }

func (unreadable) DropFollowUp(context.Context, string, string) (bool, error) { return false, nil }

// A notice whose run's follow-ups cannot be read is delivered to no one
// yet: it is claimed again later, and then told to all.
func TestFollowUpsUnread(t *testing.T) {
	chat, base := newChat(t, nil)
	f := newFixture(t)
	f.followUp("r1", store.FollowUpSlack, base+"/r1", 30*time.Minute)
	f.ended("r1")
	broken := f.notifier("a", func(c *Config) { c.FollowUps = unreadable{} })
	if _, err := broken.Pass(ctx); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("pass: %v", err)
	}
	if len(f.rc.deliveries()) != 0 || len(chat.messages("/r1")) != 0 || f.backlog() != 1 {
		t.Fatalf("delivered without the follow-ups: route %d, chat %d, backlog %d", len(f.rc.deliveries()), len(chat.messages("/r1")), f.backlog())
	}
	f.clock.Advance(10 * time.Minute) // the claim's hold, (16 × 5 + 1) × 5 s, passes
	n := f.notifier("b", func(c *Config) { c.FollowUps = f.store })
	f.pass(n, 1)
	var msg map[string]any
	if got := chat.messages("/r1"); len(got) != 1 || json.Unmarshal([]byte(got[0]), &msg) != nil || msg["response_type"] != "ephemeral" || len(f.rc.deliveries()) != 1 || f.backlog() != 0 {
		t.Fatalf("after: chat %q, route %d, backlog %d", got, len(f.rc.deliveries()), f.backlog())
	}
}
