package store_test

import (
	"bytes"
	"testing"

	"flrh.dev/flrh/store"
)

// bodyKind puts a body, its digest and a proof into the one record of a
// tick that holds a body of its kind.
type bodyKind struct {
	name string
	tick func(body []byte, digest string, p store.DigestProof) store.Tick
}

var bodyKinds = []bodyKind{
	{"event", func(b []byte, d string, p store.DigestProof) store.Tick {
		return store.Tick{Events: []store.Event{{Kind: "k", Body: b, Digest: d, Proof: p}}}
	}},
	{"checkpoint", func(b []byte, d string, p store.DigestProof) store.Tick {
		return store.Tick{Checkpoint: &store.Checkpoint{Body: b, Digest: d, Proof: p}}
	}},
	{"intent", func(b []byte, d string, p store.DigestProof) store.Tick {
		return store.Tick{Intents: []store.Intent{{ID: "i", EffectType: "e", IdempotencyKey: "k", ContentDigest: "c", Body: b, Digest: d, Proof: p}}}
	}},
	{"receipt", func(b []byte, d string, p store.DigestProof) store.Tick {
		return store.Tick{Receipts: []store.Receipt{{IntentID: "i", Outcome: "o", Body: b, Digest: d, Proof: p}}}
	}},
	{"submitted inbound", func(b []byte, d string, p store.DigestProof) store.Tick {
		return store.Tick{Submit: []store.Inbound{{ID: "in", Kind: "k", ActorRole: "r", Body: b, Digest: d, Proof: p}}, Consume: []string{"in"}}
	}},
}

// TestDigestProofIsTrustedOnlyForItsOwnBodyAndDigest holds ValidateTick
// and ValidateInbound, which take a record's digest without hashing its
// body when it carries ProveDigest's proof of them, to refuse every
// record whose digest does not match its body, proof or none: a proof of
// another body, of the body with another digest, of a longer or a shorter
// body, a proof of equal bytes elsewhere (which is hashed) and a forged
// digest are all told apart, for every kind of body a tick holds.
func TestDigestProofIsTrustedOnlyForItsOwnBodyAndDigest(t *testing.T) {
	buf := []byte(`{"a":1,"b":"two"}{"c":3}`)
	body, other := buf[:17], buf[17:]
	digest, proof := store.ProveDigest(body)
	if digest != store.BodyDigest(body) {
		t.Fatalf("ProveDigest gives %s, BodyDigest %s", digest, store.BodyDigest(body))
	}
	otherDigest, otherProof := store.ProveDigest(other)
	_, longerProof := store.ProveDigest(buf)
	_, shorterProof := store.ProveDigest(body[:16])
	shorter := body[:16]
	copied := bytes.Clone(body)
	forged := "sha256:" + string(bytes.Repeat([]byte("0"), 64))

	cases := []struct {
		name   string
		body   []byte
		digest string
		proof  store.DigestProof
		ok     bool
	}{
		{"hashed, matching", body, digest, store.DigestProof{}, true},
		{"proven, matching", body, digest, proof, true},
		{"equal bytes elsewhere, hashed", copied, digest, proof, true},
		{"hashed, forged digest", body, forged, store.DigestProof{}, false},
		{"proven body, forged digest", body, forged, proof, false},
		{"proven body, another body's digest", body, otherDigest, proof, false},
		{"another body's proof and digest", body, otherDigest, otherProof, false},
		{"a longer body's proof", body, store.BodyDigest(buf), longerProof, false},
		{"a shorter body's proof", body, store.BodyDigest(shorter), shorterProof, false},
		{"the proof of a body, on its prefix", shorter, digest, proof, false},
		{"malformed digest", body, "sha256:" + digest, proof, false},
	}
	for _, k := range bodyKinds {
		for _, c := range cases {
			err := store.ValidateTick("run", k.tick(c.body, c.digest, c.proof))
			switch {
			case c.ok && err != nil:
				t.Errorf("%s, %s: refused: %v", k.name, c.name, err)
			case !c.ok && store.CodeOf(err) != store.CodeInvalidInput:
				t.Errorf("%s, %s: got %v, want %s", k.name, c.name, err, store.CodeInvalidInput)
			}
		}
	}
	for _, c := range cases {
		err := store.ValidateInbound("submit", store.Inbound{ID: "in", RunID: "run", Kind: "k", ActorRole: "r", Body: c.body, Digest: c.digest, Proof: c.proof})
		switch {
		case c.ok && err != nil:
			t.Errorf("inbound, %s: refused: %v", c.name, err)
		case !c.ok && store.CodeOf(err) != store.CodeInvalidInput:
			t.Errorf("inbound, %s: got %v, want %s", c.name, err, store.CodeInvalidInput)
		}
	}
}

// TestZeroDigestProofProvesNothing: an empty body's digest is still
// hashed when the proof is the zero one, and a record's zero proof never
// stands for the empty body's digest on a body that is not empty.
func TestZeroDigestProofProvesNothing(t *testing.T) {
	empty := store.BodyDigest(nil)
	for _, k := range bodyKinds {
		if k.name == "event" || k.name == "submitted inbound" {
			continue // their bodies are required
		}
		if err := store.ValidateTick("run", k.tick([]byte("x"), empty, store.DigestProof{})); store.CodeOf(err) != store.CodeInvalidInput {
			t.Errorf("%s: a zero proof of the empty body's digest on a body: got %v", k.name, err)
		}
		if err := store.ValidateTick("run", k.tick(nil, empty, store.DigestProof{})); err != nil {
			t.Errorf("%s: the empty body's digest refused: %v", k.name, err)
		}
	}
}

// TestProvenBodyIsNotHashedAgain holds the point of a proof: ValidateTick
// takes a proven digest without hashing the body, which is why whoever
// proves a body writes nothing over it until the store has it. Here the
// body is written over after the proof, and the tick still passes.
func TestProvenBodyIsNotHashedAgain(t *testing.T) {
	for _, k := range bodyKinds {
		body := []byte(`{"a":1}`)
		digest, proof := store.ProveDigest(body)
		body[5] = '2'
		if err := store.ValidateTick("run", k.tick(body, digest, proof)); err != nil {
			t.Errorf("%s: a proven body hashed again: %v", k.name, err)
		}
	}
}

// BenchmarkValidateTick validates the bodies of a governed step's ticks
// (BenchmarkFlrhSQLite: per step, 11 control records of 750 bytes, 2
// accepted records of 870, 2 checkpoints of 7.5 KB, an intent and a
// receipt of 1.3 KB), each hashed, or, as the runner hands them, all but
// the control records proven.
func BenchmarkValidateTick(b *testing.B) {
	body := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	for _, proven := range []bool{false, true} {
		ev := func(kind string, n int) store.Event {
			e := store.Event{Kind: kind, Body: body(n)}
			if proven && kind != "control" {
				e.Digest, e.Proof = store.ProveDigest(e.Body)
			} else {
				e.Digest = store.BodyDigest(e.Body)
			}
			return e
		}
		prove := func(bd []byte) (string, store.DigestProof) {
			if proven {
				return store.ProveDigest(bd)
			}
			return store.BodyDigest(bd), store.DigestProof{}
		}
		var ticks []store.Tick
		for range 2 {
			t := store.Tick{}
			for range 5 {
				t.Events = append(t.Events, ev("control", 750))
			}
			t.Events = append(t.Events, ev("accepted", 870))
			cp := &store.Checkpoint{Body: body(7500)}
			cp.Digest, cp.Proof = prove(cp.Body)
			t.Checkpoint = cp
			ticks = append(ticks, t)
		}
		ticks[0].Events = append(ticks[0].Events, ev("control", 750))
		in := store.Intent{ID: "i", EffectType: "e", IdempotencyKey: "k", ContentDigest: "c", Body: body(1330)}
		in.Digest, in.Proof = prove(in.Body)
		ticks[0].Intents = []store.Intent{in}
		rc := store.Receipt{IntentID: "i", Outcome: "o", Body: body(1290)}
		rc.Digest, rc.Proof = prove(rc.Body)
		ticks[1].Receipts = []store.Receipt{rc}
		name := "hashed"
		if proven {
			name = "proven"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, t := range ticks {
					if err := store.ValidateTick("run", t); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
