package verify

import (
	"reflect"
	"testing"
)

// A checked run's few intents and receipts, and its checkpoint's members,
// are held in the record's own arrays (approvalBuf, hashedBuf,
// scannedBuf) rather than in memory allocated for each; a run with more
// intents than the array holds gets memory of its own. Either way Check
// reports exactly what Run and Replay report apart.
func TestCheckHoldsAFewIntentsInTheRecord(t *testing.T) {
	path, wf, ids := manyRuns(t, 3)
	st := open(t, path, true)
	for _, id := range ids {
		rec, err := load(ctx, st, id, withRun|withEffects)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.intents) == 0 || len(rec.intents) > len(rec.approvalBuf) || len(rec.receipts) == 0 {
			t.Fatalf("%s: %d intents, %d receipts; the test wants a run with one to %d of each", id, len(rec.intents), len(rec.receipts), len(rec.approvalBuf))
		}
		crep, crp, err := checkRecord(ctx, rec, nil, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		if &rec.approvalRead[0] != &rec.approvalBuf[0] || len(rec.approvalRead) != len(rec.intents) {
			t.Errorf("%s: the intents' approval digests are not held in the record", id)
		}
		if len(rec.hashed) == 0 || &rec.hashed[0] != &rec.hashedBuf[0] {
			t.Errorf("%s: the receipts hashed are not held in the record", id)
		}
		if rec.scanned != &rec.scannedBuf || !rec.scanned.read {
			t.Errorf("%s: the checkpoint's members are not held in the record", id)
		}
		rep, rp := runAndReplay(t, st, wf, id)
		if !reflect.DeepEqual(crep, rep) || !reflect.DeepEqual(crp, rp) {
			t.Fatalf("%s: Check reported %+v %+v; Run and Replay %+v %+v", id, crep, crp, rep, rp)
		}
		// More intents than the record holds: the same report, from
		// memory of their own.
		rec, err = load(ctx, st, id, withRun|withEffects)
		if err != nil {
			t.Fatal(err)
		}
		for len(rec.intents) <= len(rec.approvalBuf) {
			rec.intents = append(rec.intents, rec.intents...)
		}
		rec.intents = rec.intents[:len(rec.intents):len(rec.intents)]
		more, _, err := checkRecord(ctx, rec, nil, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.approvalRead) != len(rec.intents) || &rec.approvalRead[0] == &rec.approvalBuf[0] {
			t.Errorf("%s: %d intents' approval digests in %d places of the record's array", id, len(rec.intents), len(rec.approvalRead))
		}
		if more.Intents != len(rec.intents) {
			t.Errorf("%s: %d intents checked, want %d", id, more.Intents, len(rec.intents))
		}
	}
}
