package authority

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// forcedPreimage is one preimage the reference contract makes a decision
// hash, with the digest or id the reference corpus records for it.
type forcedPreimage struct {
	name   string
	b      []byte
	prefix string // "sha256:" for a digest, else the id's prefix
	want   string
}

// contractPreimages writes the canonical preimages the m4a contract forces
// on a low-risk decision of the reference corpus, each with the value the
// corpus records for its digest. perDecision are the six every authorized
// intent needs: the authority snapshot, the idempotency key and the intent
// id (the intent's members), the policy-verdict and capability evidence
// and the control event's id (the event's). perBatch are the two digests
// the contract has H check once per published batch: the profile-bound
// stable batch and the published batch.
func contractPreimages(t testing.TB) (perDecision, perBatch []forcedPreimage) {
	t.Helper()
	in, c := fixtureInput(t, "internal")
	d, err := Authorize(in)
	if err != nil || d.Outcomes[0].Authority == nil {
		t.Fatalf("fixture does not authorize: %v", err)
	}
	snap := *d.Outcomes[0].Authority
	golden := c.expected["low-risk"].(object)
	intent := golden["intent"].(object)
	event := golden["control_event"].(object)
	payload := map[string]string{}
	for k, v := range event["payload"].(object) {
		payload[k] = v.(string)
	}
	p := in.Batch.Proposals[0]
	b := in.Batch.Batch
	write := func(f func(w *canonWriter)) []byte {
		var w canonWriter
		f(&w)
		if w.err != nil {
			t.Fatal(w.err)
		}
		return w.b
	}
	idem := write(func(w *canonWriter) {
		w.idempotencyPreimage(p.CorrelationID, "authorize-low-risk", 1, p.ActionDigest, snap.AdapterVersion)
	})
	idemSum := sha256.Sum256(idem)
	ev := controlEventPreimage(EventEffectAuthorized, eventAuthority[EventEffectAuthorized], payload, nil)
	evBytes := append([]byte(nil), ev.b...)
	ev.release()
	perDecision = []forcedPreimage{
		{"authority snapshot", write(snap.writePreimage), "sha256:", intent["authority_digest"].(string)},
		{"idempotency key", idem, "effect:", intent["idempotency_key"].(string)},
		{"intent id", write(func(w *canonWriter) {
			w.intentIdentityPreimage(nil, snap.AuthorityDigest, b.BatchID, []byte("sha256:"+hex.EncodeToString(idemSum[:])), p.ProposalID)
		}), "intent:", intent["intent_id"].(string)},
		{"policy verdict", write(func(w *canonWriter) { w.policyVerdictPreimage(in.ProfileDigest, in.Batch.Verdicts[0], snap) }), "sha256:", payload["policy_verdict"]},
		{"capability evidence", write(func(w *canonWriter) { w.capabilityEvidencePreimage(&p, &snap) }), "sha256:", payload["capability_digest"]},
		{"control event", evBytes, "event:", event["event_id"].(string)},
	}
	perBatch = []forcedPreimage{
		{"stable batch", write(func(w *canonWriter) {
			w.stableBatchPreimage(in.ProfileDigest, b.LogicalTime, b.LowWatermark, b.ProposalIDs, b.EligibilityVerdictIDs, b.DataflowVersion)
		}), "sha256:", b.BatchDigest},
		{"published batch", write(func(w *canonWriter) { w.publishedBatch(in.Batch) }), "sha256:", in.Batch.PublishedBatchDigest},
	}
	return perDecision, perBatch
}

// TestContractFloorIsTheReferenceBytes holds every preimage of the
// contract floor to the digest the reference corpus records for it, so
// BenchmarkContractFloor hashes exactly the bytes the contract forces.
func TestContractFloorIsTheReferenceBytes(t *testing.T) {
	perDecision, perBatch := contractPreimages(t)
	for _, f := range append(perDecision, perBatch...) {
		sum := sha256.Sum256(f.b)
		if got := f.prefix + hex.EncodeToString(sum[:]); got != f.want {
			t.Errorf("%s: %s, the corpus records %s", f.name, got, f.want)
		}
	}
	if len(perDecision) != 6 || len(perBatch) != 2 {
		t.Fatalf("%d per-decision and %d per-batch preimages", len(perDecision), len(perBatch))
	}
	// The floor's control event carries the contract's six payload members;
	// Authorize's carries a seventh, the policy digest, so its preimage is
	// longer by exactly that member.
	in, _ := fixtureInput(t, "internal")
	d, err := Authorize(in)
	if err != nil {
		t.Fatal(err)
	}
	ce := d.Outcomes[0].ControlEvent
	own := controlEventPreimage(ce.Type, eventAuthority[ce.Type], ce.Payload, nil)
	defer own.release()
	extra := len(`,"policy_digest":""`) + len(ce.Payload["policy_digest"])
	if got, want := len(own.b), len(perDecision[5].b)+extra; got != want {
		t.Errorf("Authorize's control event preimage is %d bytes, want the contract's plus the policy digest, %d", got, want)
	}
}

func benchPreimages(b *testing.B, fs []forcedPreimage) {
	n := 0
	for _, f := range fs {
		n += len(f.b)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range fs {
			_ = sha256.Sum256(f.b)
		}
	}
	b.ReportMetric(float64(n), "preimage-bytes")
	b.ReportMetric(float64(len(fs)), "digests")
}

// BenchmarkContractFloor hashes the six preimages the contract forces on
// every authorized low-risk intent (TestContractFloorIsTheReferenceBytes):
// the SHA-256 work no implementation of the contract can shed per decision.
func BenchmarkContractFloor(b *testing.B) {
	perDecision, _ := contractPreimages(b)
	benchPreimages(b, perDecision)
}

// BenchmarkContractFloorWithBatchCheck adds the two batch digests the
// contract has H check, for a batch decided once and checked by H itself.
func BenchmarkContractFloorWithBatchCheck(b *testing.B) {
	perDecision, perBatch := contractPreimages(b)
	benchPreimages(b, append(perDecision, perBatch...))
}
