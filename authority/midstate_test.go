package authority

import (
	"crypto/sha256"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"pgregory.net/rapid"
)

// Every midstate is the state after its own prefix: hashing the prefix
// and anything after it from the midstate is hashing it whole.
func TestMidstatesAreTheirPrefixes(t *testing.T) {
	all := []*cjson.Midstate{stableBatchMidstate}
	all = append(all, verdictMidstates[:]...)
	all = append(all, inputMidstates[:]...)
	for _, m := range eventMidstates {
		all = append(all, m)
	}
	for _, m := range all {
		if m == nil || len(m.Prefix()) == 0 || len(m.Prefix())%64 != 0 {
			t.Fatalf("midstate %+v: want a prefix of whole blocks", m)
		}
		for _, rest := range []string{"", "x", strings.Repeat("y", 200)} {
			b := []byte(m.Prefix() + rest)
			if got, want := m.Sum256(b, nil), sha256.Sum256(b); got != want {
				t.Fatalf("%q: %x, want %x", b, got, want)
			}
		}
	}
}

func benchSum256(b *testing.B, p []byte, m *cjson.Midstate, resumed bool) {
	r := cjson.GetResumer()
	for b.Loop() {
		if resumed {
			m.Sum256(p, r)
		} else {
			(*cjson.Midstate)(nil).Sum256(p, r)
		}
	}
}

var (
	benchEvent = []byte(`{"actor_role":"policy_evaluator","capability":"effect.authorize_low_risk","contract_version":"flrh-h-authority/1","kind":"M4AControlEventPreimage","payload":{"authority_digest":"sha256:` + strings.Repeat("a", 650))
	benchInput = []byte(`{"contract_version":"flrh-h-authority/1","effect_sequence":1,"kind":"AuthorizeInputPreimage","now":` + strings.Repeat("1", 305))
)

// BenchmarkSum256Whole and BenchmarkSum256Resumed hash an 830-byte
// control-event preimage whole and from its event type's midstate (two
// blocks); the OneBlock pair a 404-byte input preimage, whole and from
// its midstate (one block).
func BenchmarkSum256Whole(b *testing.B) {
	benchSum256(b, benchEvent, eventMidstate(EventEffectAuthorized), false)
}
func BenchmarkSum256Resumed(b *testing.B) {
	benchSum256(b, benchEvent, eventMidstate(EventEffectAuthorized), true)
}
func BenchmarkSum256OneBlockWhole(b *testing.B) { benchSum256(b, benchInput, inputMidstates[1], false) }
func BenchmarkSum256OneBlockResumed(b *testing.B) {
	benchSum256(b, benchInput, inputMidstates[1], true)
}

// Action digests continued from learnt openings (actionOpenings) are the
// digests of their whole preimages, as cjson writes them: over actions
// and destinations that repeat, so that openings are learnt, used and
// evicted, names long enough for two blocks among them, and parameters
// that differ.
func TestActionDigestFromLearntOpenings(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := baseSpec()
		s.Action = rapid.SampledFrom([]string{"refund.pay", "refund.void", "invoice." + strings.Repeat("long", 20)}).Draw(rt, "action")
		s.Destination = rapid.SampledFrom([]string{"dest:payments", "dest:ledger", "dest:" + strings.Repeat("x", 40)}).Draw(rt, "destination")
		s.Parameters = map[string]any{
			"amount": rapid.Int64().Draw(rt, "amount"),
			"payee":  rapid.StringMatching(`[a-z]{0,8}`).Draw(rt, "payee"),
		}
		tk, err := DraftTicket(s)
		if err != nil {
			rt.Fatal(err)
		}
		want, _ := cjson.DigestOf(map[string]any{
			"kind": "ActionTicketActionPreimage", "ticket_version": TicketVersion,
			"action": tk.Action, "destination": tk.Destination, "scope": tk.Scope, "parameters": tk.Parameters,
		})
		for range 2 {
			if got := tk.computeActionDigest(nil); got != want {
				rt.Fatalf("action digest %s, cjson %s", got, want)
			}
			if got := tk.computeActionDigestKeyed(nil, sortedKeys(tk.Parameters)); got != want {
				rt.Fatalf("keyed action digest %s, cjson %s", got, want)
			}
		}
	})
}
