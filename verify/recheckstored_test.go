package verify

import (
	"bytes"
	"reflect"
	"testing"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// checkEventsBothWays runs checkEvents over evs with RecheckStored asked
// first and with every control record read for Recheck, and fails unless
// the report, the configuration and every vouched entry are the same.
// It returns how many control records RecheckStored vouched for.
func checkEventsBothWays(t *testing.T, m *control.Machine, run store.Run, evs []store.Event, what string) int {
	t.Helper()
	check := func(stored bool) (Report, control.Configuration, []vouched) {
		defer func(old bool) { readWhileRechecking = old }(readWhileRechecking)
		readWhileRechecking = stored
		known := make([]vouched, len(evs))
		rep := Report{Findings: []Finding{}}
		cfg := checkEvents(&rep, m, run, evs, known)
		return rep, cfg, known
	}
	rep, cfg, known := check(true)
	wantRep, wantCfg, wantKnown := check(false)
	if !reflect.DeepEqual(rep, wantRep) || !reflect.DeepEqual(cfg, wantCfg) {
		t.Fatalf("%s: read while rechecked %+v %+v; read, then rechecked %+v %+v", what, rep, cfg, wantRep, wantCfg)
	}
	for i := range known {
		if !reflect.DeepEqual(known[i], wantKnown[i]) {
			t.Fatalf("%s: event %d vouched %+v; read, then rechecked %+v", what, evs[i].Seq, known[i], wantKnown[i])
		}
	}
	n := 0
	for i, e := range evs {
		if e.Kind == runner.EventControl && known[i].ok && !ledgerEvent(known[i].rec.Event) {
			n++
		}
	}
	return n
}

// checkEvents vouches, with RecheckStored asked first, for exactly the
// control records it vouched for when it read each record for Recheck,
// keeps the same entries for them (the ledger controllers' events with
// their evidence), and reports the same findings and configuration: over
// recorded runs (ordinary, approved, one that spent its retries) as they
// are, and with each control record in turn changed: a byte of it
// altered at a dozen places, its evidence dropped, or a name escaped.
func TestRecheckStoredVouchesAsReading(t *testing.T) {
	var runs [][]store.Event
	var heads []store.Run
	add := func(path string, ids ...string) {
		st := open(t, path, true)
		for _, id := range ids {
			rec, err := load(ctx, st, id, withRun)
			if err != nil {
				t.Fatal(err)
			}
			runs, heads = append(runs, rec.events), append(heads, rec.run)
		}
	}
	add(recorded(t), "small", "large")
	for _, failFor := range []int{100, 3} {
		path, _ := retried(t, failFor)
		add(path, "flaky")
	}
	path, _, ids := manyRuns(t, 6)
	add(path, ids...)
	vouched := 0
	for _, m := range []*control.Machine{control.Default(), control.Default().WithStrictEvidence()} {
		for r, evs := range runs {
			vouched += checkEventsBothWays(t, m, heads[r], evs, "as recorded")
			for j, e := range evs {
				if e.Kind != runner.EventControl && e.Kind != runner.EventRejected {
					continue
				}
				var variants [][]byte
				for k := 0; k < 12; k++ {
					b := bytes.Clone(e.Body)
					at := k * (len(b) - 1) / 11
					b[at] ^= 0x01
					variants = append(variants, b)
				}
				if i := bytes.Index(e.Body, []byte(`,"evidence":{`)); i >= 0 {
					end := i + bytes.IndexByte(e.Body[i:], '}') + 1
					variants = append(variants, append(bytes.Clone(e.Body[:i]), e.Body[end:]...))
				}
				if i := bytes.Index(e.Body, []byte(`"event":"`)); i >= 0 {
					at := i + len(`"event":"`)
					variants = append(variants, bytes.Join([][]byte{e.Body[:at], []byte(`\u00`), []byte{"0123456789abcdef"[e.Body[at]>>4], "0123456789abcdef"[e.Body[at]&15]}, e.Body[at+1:]}, nil))
				}
				for _, b := range variants {
					changed := append([]store.Event(nil), evs...)
					changed[j].Body = b
					checkEventsBothWays(t, m, heads[r], changed, "changed")
				}
			}
		}
	}
	if vouched == 0 {
		t.Fatal("RecheckStored vouched for no record")
	}
}
