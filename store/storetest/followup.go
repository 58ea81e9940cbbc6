package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testFollowUps holds the store to store.FollowUps: a follow-up reads
// back named by its address's digest, with its times on the store's
// clock, until it expires; added again it keeps its first; a run keeps
// its MaxFollowUps most recently added; an addition drops every expired
// one; a drop says whether one was kept; bad arguments write nothing.
func testFollowUps(t *testing.T, s store.Store, c *Clock) {
	f, ok := store.FollowUpsOf(s)
	if !ok {
		t.Skip("the store keeps no follow-ups")
	}
	slack := store.FollowUp{RunID: "chat-1", Scheme: store.FollowUpSlack, Address: "https://hooks.slack.com/commands/T1/1/abc"}
	must(t, f.AddFollowUp(ctx, slack, 30*time.Minute))
	added := c.Now()
	c.Advance(time.Minute)
	// The same address again keeps the first: its times stand.
	must(t, f.AddFollowUp(ctx, slack, 30*time.Minute))
	discord := store.FollowUp{RunID: "chat-1", Scheme: store.FollowUpDiscord, Address: "https://discord.com/api/v10/webhooks/1/tok"}
	must(t, f.AddFollowUp(ctx, discord, 15*time.Minute))
	got, err := f.FollowUps(ctx, "chat-1")
	must(t, err)
	want := fmt.Sprintf("[{chat-1 %s slack %s %s %s} {chat-1 %s discord %s %s %s}]",
		store.FollowUpName(slack.Address), slack.Address, added, added.Add(30*time.Minute),
		store.FollowUpName(discord.Address), discord.Address, c.Now(), c.Now().Add(15*time.Minute))
	if fmt.Sprint(got) != want {
		t.Fatalf("follow-ups\n got %v\nwant %s", got, want)
	}
	if !strings.HasPrefix(got[0].Name, "follow-up:") || strings.Contains(got[0].Name, "slack") {
		t.Fatalf("name %q says something of its address", got[0].Name)
	}
	if other, err := f.FollowUps(ctx, "chat-2"); err != nil || len(other) != 0 {
		t.Fatalf("another run's: %v, %v", other, err)
	}

	// Past its time a follow-up is not listed, and the next addition
	// (of any run) drops it.
	c.Advance(15 * time.Minute)
	if got, err := f.FollowUps(ctx, "chat-1"); err != nil || len(got) != 1 || got[0].Scheme != store.FollowUpSlack {
		t.Fatalf("after the Discord one expired: %v, %v", got, err)
	}
	c.Advance(15 * time.Minute)
	if got, err := f.FollowUps(ctx, "chat-1"); err != nil || len(got) != 0 {
		t.Fatalf("after both expired: %v, %v", got, err)
	}
	must(t, f.AddFollowUp(ctx, store.FollowUp{RunID: "chat-2", Scheme: store.FollowUpSlack, Address: "https://hooks.slack.com/x"}, time.Minute))
	c.Advance(-time.Hour) // a clock set back shows what is kept
	if got, err := f.FollowUps(ctx, "chat-1"); err != nil || len(got) != 0 {
		t.Fatalf("expired follow-ups kept after an addition: %v, %v", got, err)
	}
	c.Advance(time.Hour)

	// A run keeps the most recently added.
	for i := range store.MaxFollowUps + 2 {
		c.Advance(time.Second)
		must(t, f.AddFollowUp(ctx, store.FollowUp{RunID: "chat-3", Scheme: store.FollowUpSlack, Address: fmt.Sprintf("https://hooks.slack.com/%d", i)}, time.Hour))
	}
	got, err = f.FollowUps(ctx, "chat-3")
	must(t, err)
	if len(got) != store.MaxFollowUps || got[0].Address != "https://hooks.slack.com/2" || got[len(got)-1].Address != fmt.Sprintf("https://hooks.slack.com/%d", store.MaxFollowUps+1) {
		t.Fatalf("kept %v", got)
	}
	if dropped, err := f.DropFollowUp(ctx, "chat-3", got[0].Name); err != nil || !dropped {
		t.Fatalf("drop: %v, %v", dropped, err)
	}
	if dropped, err := f.DropFollowUp(ctx, "chat-3", got[0].Name); err != nil || dropped {
		t.Fatalf("drop again: %v, %v", dropped, err)
	}

	// Added at once for one run, each is kept once.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			must(t, f.AddFollowUp(ctx, store.FollowUp{RunID: "chat-4", Scheme: store.FollowUpDiscord, Address: fmt.Sprintf("https://discord.com/api/v10/webhooks/1/%d", i%2)}, time.Hour))
		})
	}
	wg.Wait()
	if got, err := f.FollowUps(ctx, "chat-4"); err != nil || len(got) != 2 {
		t.Fatalf("8 additions of 2 addresses at once: %v, %v", got, err)
	}

	for _, bad := range []struct {
		f   store.FollowUp
		ttl time.Duration
	}{
		{store.FollowUp{RunID: "", Scheme: "slack", Address: "https://a"}, time.Minute},
		{store.FollowUp{RunID: "chat 5", Scheme: "slack", Address: "https://a"}, time.Minute},
		{store.FollowUp{RunID: "chat-5", Scheme: "teams", Address: "https://a"}, time.Minute},
		{store.FollowUp{RunID: "chat-5", Scheme: "slack"}, time.Minute},
		{store.FollowUp{RunID: "chat-5", Scheme: "slack", Address: "\xff"}, time.Minute},
		{store.FollowUp{RunID: "chat-5", Scheme: "slack", Address: strings.Repeat("a", store.MaxFollowUpAddress+1)}, time.Minute},
		{store.FollowUp{RunID: "chat-5", Scheme: "slack", Address: "https://a"}, 0},
		{store.FollowUp{RunID: "chat-5", Scheme: "slack", Address: "https://a"}, store.MaxFollowUpTTL + time.Second},
	} {
		mustCode(t, f.AddFollowUp(ctx, bad.f, bad.ttl), store.CodeInvalidInput)
	}
	if got, err := f.FollowUps(ctx, "chat-5"); err != nil || len(got) != 0 {
		t.Fatalf("refused additions wrote %v, %v", got, err)
	}
	_, err = f.FollowUps(ctx, "")
	mustCode(t, err, store.CodeInvalidInput)
	_, err = f.DropFollowUp(ctx, "no such id", "x")
	mustCode(t, err, store.CodeInvalidInput)
}
