package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// BenchmarkFollowUps measures what follow-ups cost: add is what a
// delivery with a follow-up pays before it is taken (one synced write,
// the expired dropped in it), over a store keeping 10,000 live ones;
// read-none is what the notifier pays for each notice of a run started
// elsewhere (nearly every run), read-one for a run started from a chat.
func BenchmarkFollowUps(b *testing.B) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "flrh.db"), nil)
	defer s.Close()
	for i := range 10_000 {
		f := store.FollowUp{RunID: fmt.Sprintf("chat-%d", i), Scheme: store.FollowUpSlack, Address: fmt.Sprintf("https://hooks.slack.com/commands/T1/%d/abc", i)}
		if err := s.AddFollowUp(ctx, f, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("add", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			f := store.FollowUp{RunID: fmt.Sprintf("new-%d", i), Scheme: store.FollowUpDiscord, Address: fmt.Sprintf("https://discord.com/api/v10/webhooks/1/t%d", i)}
			if err := s.AddFollowUp(ctx, f, 15*time.Minute); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-none", func(b *testing.B) {
		for b.Loop() {
			if fs, err := s.FollowUps(ctx, "run-started-elsewhere"); err != nil || len(fs) != 0 {
				b.Fatal(fs, err)
			}
		}
	})
	b.Run("read-one", func(b *testing.B) {
		for b.Loop() {
			if fs, err := s.FollowUps(ctx, "chat-5000"); err != nil || len(fs) != 1 {
				b.Fatal(fs, err)
			}
		}
	})
}
