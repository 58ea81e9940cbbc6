package verify

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/store"
	"pgregory.net/rapid"
)

// A run's few intents and receipts are found by a scan, more are filed in
// maps by id (fewEffects): both must give the same reports, finding for
// finding, whatever the ids — repeated, shared by intents, receipts of
// intents never committed — and on either side of the bound.
func TestFewEffectsFoundAsFiled(t *testing.T) {
	path, wf, ids := manyRuns(t, 20)
	st := open(t, path, true)
	var runs []*record
	var allIns []store.Intent
	var allRcs []store.Receipt
	for _, id := range ids {
		rec, err := load(ctx, st, id, withRun|withEffects)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, rec)
		allIns = append(allIns, rec.intents...)
		allRcs = append(allRcs, rec.receipts...)
	}
	defer func() { fewEffectsScanned = true }()
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SampledFrom(runs).Draw(t, "run")
		// The ids drawn from: the run's own intents' (which replay plans),
		// others of the store's, and one no intent has.
		pool := []string{"intent-none"}
		for _, in := range base.intents {
			pool = append(pool, in.ID)
		}
		for _, in := range allIns[:4] {
			pool = append(pool, in.ID)
		}
		id := rapid.SampledFrom(pool)
		ins := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) store.Intent {
			in := rapid.SampledFrom(allIns).Draw(t, "intent")
			if rapid.Bool().Draw(t, "renamed") {
				in.ID = id.Draw(t, "id")
			}
			return in
		}), 0, 2*fewEffects).Draw(t, "intents")
		rcs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) store.Receipt {
			rc := rapid.SampledFrom(allRcs).Draw(t, "receipt")
			if rapid.Bool().Draw(t, "renamed") {
				rc.IntentID = id.Draw(t, "id")
			}
			// A stored outcome the receipt may not say: which of an
			// intent's receipts is checked shows in the findings.
			rc.Outcome = rapid.SampledFrom([]string{rc.Outcome, "confirmed_success", "outcome_unknown", "other"}).Draw(t, "outcome")
			return rc
		}), 0, 2*fewEffects).Draw(t, "receipts")
		if rapid.Bool().Draw(t, "as recorded") {
			ins, rcs = base.intents, base.receipts
		}
		check := func(scanned bool) (*Report, *ReplayReport) {
			fewEffectsScanned = scanned
			rec := *base
			rec.intents, rec.receipts = ins, rcs
			rec.setEffects(rec.grouped, mapValues(base.approvals))
			rep, replayed, err := checkRecord(ctx, &rec, nil, wf, base.run.ID)
			if err != nil {
				t.Fatal(err)
			}
			return rep, replayed
		}
		scanRep, scanReplay := check(true)
		fileRep, fileReplay := check(false)
		if !reflect.DeepEqual(scanRep, fileRep) {
			t.Fatalf("scanned, verify reports\n%+v\nfiled\n%+v", scanRep, fileRep)
		}
		if !reflect.DeepEqual(scanReplay, fileReplay) {
			t.Fatalf("scanned, replay reports\n%+v\nfiled\n%+v", scanReplay, fileReplay)
		}
	})
}

func mapValues(m map[string]store.Approval) []store.Approval {
	var out []store.Approval
	for _, a := range m {
		out = append(out, a)
	}
	return out
}
