package runner

import (
	"bytes"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/protocol"
)

// TestCommittedIntentIsTheDecodedOne: the intent kept at commit is what
// decoding the checkpoint's intent gives, each caller gets its own copy,
// and the kept intent never reaches the checkpoint's bytes.
func TestCommittedIntentIsTheDecodedOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pi := protocol.EffectIntent{Kind: protocol.KindEffectIntent, IntentID: "intent:1", EffectType: "refund.issue",
			IdempotencyKey: rapid.SampledFrom([]string{"k:1", "k:é"}).Draw(t, "key"),
			Preconditions:  rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a:1", "b:2", "c:3"}), 0, 3, func(s string) string { return s }).Draw(t, "pre")}
		if rapid.Bool().Draw(t, "approved") {
			d := cjson.Digest([]byte("grant"))
			pi.ApprovalDigest = &d
		}
		iv, err := cjson.Marshal(pi)
		if err != nil {
			t.Fatal(err)
		}
		v, err := canonValue(iv)
		if err != nil {
			t.Fatal(err)
		}
		e := openEffect{IntentID: pi.IntentID, Stage: stageCommitted, Intent: v, Payload: map[string]any{}}
		want, err := e.protocolIntent()
		if err != nil {
			t.Fatal(err)
		}
		cp := checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, Control: control.Configuration{State: "EXECUTE"}, Open: []openEffect{e}}
		before, err := cp.encode()
		if err != nil {
			t.Fatal(err)
		}

		kept := cloneIntent(want)
		cp.Open[0].committed = &kept
		got, err := cp.Open[0].protocolIntent()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("kept intent %+v (%v), decoded %+v", got, err, want)
		}
		if len(got.Preconditions) > 0 {
			got.Preconditions[0] = "changed"
		}
		if got.ApprovalDigest != nil {
			*got.ApprovalDigest = "changed"
		}
		fresh, err := protocolIntent(e.Intent)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := cp.Open[0].protocolIntent(); !reflect.DeepEqual(again, fresh) {
			t.Fatalf("a caller's edit reached the kept intent: %+v", again)
		}
		after, err := cp.encode()
		if err != nil || !bytes.Equal(after, before) {
			t.Fatalf("the kept intent changed the checkpoint:\n%s\n%s", after, before)
		}
	})
}

// TestAuthorityIsTheTablesFirstPair: the pair the runner fires an event
// under is the first the machine's table grants, none for an event it
// does not grant.
func TestAuthorityIsTheTablesFirstPair(t *testing.T) {
	h := newHarness(t)
	r, err := New(Config{Store: h.store, Workflows: []Workflow{refunds{limit: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range control.Default().Events() {
		role, capability := r.authority(e.ID)
		if len(e.Authority) == 0 {
			if role != "" || capability != "" {
				t.Errorf("%s: no pair granted, got %s/%s", e.ID, role, capability)
			}
			continue
		}
		n++
		if role != e.Authority[0].Role || capability != e.Authority[0].Capability {
			t.Errorf("%s: got %s/%s, the table's first pair is %+v", e.ID, role, capability, e.Authority[0])
		}
	}
	if n == 0 {
		t.Fatal("the default table grants no event")
	}
	if role, capability := r.authority("NO_SUCH_EVENT"); role != "" || capability != "" {
		t.Errorf("an unknown event got %s/%s", role, capability)
	}
}
