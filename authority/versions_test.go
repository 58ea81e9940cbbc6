package authority

import (
	"sync"
	"testing"

	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

func drawEnvelope(t *rapid.T, label string) protocol.VersionEnvelope {
	s := func(name string) string {
		return rapid.SampledFrom([]string{"tool/1", "tool/2", "model/0", "", `a"b`, "é", "\x01", "rules/0"}).Draw(t, label+"."+name)
	}
	return protocol.VersionEnvelope{Workflow: s("workflow"), StateSchema: s("state"), EventSchema: s("event"), GraphSchema: s("graph"),
		RuleSet: s("rules"), Dataflow: s("dataflow"), Canonicalization: s("canon"), Tool: s("tool"), Model: s("model"),
		Oracle: s("oracle"), Gate: s("gate"), Resolver: s("resolver"), CompositionProfile: s("profile")}
}

// TestVersionsRecentIsWritten holds versions, which copies the encoding
// of an envelope it wrote recently, to writing every member, over
// sequences of drawn envelopes that recur, differ in one member or hold
// strings that need escaping or are refused.
func TestVersionsRecentIsWritten(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pool := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) protocol.VersionEnvelope { return drawEnvelope(t, "v") }), 1, 6).Draw(rt, "pool")
		for k, i := range rapid.SliceOfN(rapid.IntRange(0, len(pool)-1), 1, 20).Draw(rt, "writes") {
			v := pool[i]
			var got, want canonWriter
			got.lit("x")
			want.lit("x")
			got.versions(v)
			want.versionsWritten(v)
			if string(got.b) != string(want.b) || (got.err == nil) != (want.err == nil) {
				rt.Fatalf("write %d: %s (err %v), written member by member %s (err %v)", k, got.b, got.err, want.b, want.err)
			}
		}
	})
}

// TestVersionsRecentConcurrent writes envelopes from several goroutines
// at once: each write is the member-by-member one whatever the others
// store meanwhile.
func TestVersionsRecentConcurrent(t *testing.T) {
	envs := make([]protocol.VersionEnvelope, 8)
	for i := range envs {
		envs[i] = protocol.VersionEnvelope{Tool: "tool/" + string(rune('a'+i)), Model: "model/0"}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 500; n++ {
				v := envs[(g+n)%len(envs)]
				var got, want canonWriter
				got.versions(v)
				want.versionsWritten(v)
				if string(got.b) != string(want.b) {
					errs <- string(got.b)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a concurrent write gave %s", e)
	}
}
