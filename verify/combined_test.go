package verify

import (
	"reflect"
	"testing"

	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// Check verifies and replays from one read, and replay recognizes a
// receipt accepted as an input as the bytes the verifier hashed (see
// digestMatches). Tampering with either copy is still found by the check
// that finds it alone, and Check and CheckMany report exactly what Run and
// Replay report apart: the accepted copy changed and its log re-chained
// (only replay can tell), both copies changed alike with their digests
// left as they were (the verifier finds the receipt's, replay the
// input's), and an untouched run.
func TestCheckFindsATamperedReceiptInput(t *testing.T) {
	path, wf, ids := manyRuns(t, 3)
	const receiptInput = `kind = 'accepted' AND CAST(body AS TEXT) LIKE '%"kind":"receipt"%'`
	const forge = `CAST(replace(body, 'confirmed_success', 'confirmed_failure') AS BLOB)`
	tamper(t, path,
		`UPDATE events SET body = `+forge+` WHERE run_id = 'refund-0000' AND `+receiptInput,
		`UPDATE events SET body = `+forge+` WHERE run_id = 'refund-0001' AND `+receiptInput,
		`UPDATE receipts SET body = `+forge+` WHERE run_id = 'refund-0001'`)
	rechain(t, path, "refund-0000")
	rechain(t, path, "refund-0001")
	st := open(t, path, true)
	var jobs []Job
	var want []Checked
	for _, id := range ids {
		rep, rp := runAndReplay(t, st, wf, id)
		crep, crp, err := Check(ctx, st, nil, wf, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(crep, rep) || !reflect.DeepEqual(crp, rp) {
			t.Fatalf("%s: Check reported %+v %+v; Run and Replay %+v %+v", id, crep, crp, rep, rp)
		}
		jobs, want = append(jobs, Job{RunID: id, Workflow: wf}), append(want, Checked{Report: rep, Replay: rp})
	}
	for _, ws := range [][2]int{{1, 1}, {2, 3}} {
		got, err := checkMany(ctx, st, nil, jobs, ws[0], ws[1], false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckMany on %d workers, %d runs at a time, reported otherwise", ws[0], ws[1])
		}
	}
	has := func(fs []Finding, check string) bool {
		for _, f := range fs {
			if f.Check == check {
				return true
			}
		}
		return false
	}
	for i, c := range want {
		input := has(c.Replay.Findings, "accepted-record")
		receipt := has(c.Report.Findings, "receipt-digest")
		switch ids[i] {
		case "refund-0000":
			if !input || receipt {
				t.Errorf("%s: replay found the input %v, verify the receipt %v; want true, false", ids[i], input, receipt)
			}
		case "refund-0001":
			if !input || !receipt {
				t.Errorf("%s: replay found the input %v, verify the receipt %v; want both", ids[i], input, receipt)
			}
		default:
			if !c.Report.OK() || !c.Replay.OK() {
				t.Errorf("%s: %+v %+v", ids[i], c.Report.Findings, c.Replay.Findings)
			}
		}
	}
}

// runAndReplay verifies and replays one run apart, as Check does both,
// failing the test on an error of either.
func runAndReplay(t *testing.T, st store.Store, wf runner.Workflow, id string) (*Report, *ReplayReport) {
	t.Helper()
	rep, err := Run(ctx, st, nil, id)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Replay(ctx, st, wf, id)
	if err != nil {
		t.Fatal(err)
	}
	return rep, rp
}
