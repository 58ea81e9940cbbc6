package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// slowCheckEvents is checkEvents as first written: every body
// canonicalized, then each control record re-stepped. checkEvents skips
// canonicalizing a control record whose recomputed bytes equal the stored
// ones; this oracle proves the findings are exactly the same.
func slowCheckEvents(rep *Report, m *control.Machine, run store.Run, evs []store.Event) control.Configuration {
	prev := store.GenesisHash
	var gen int64
	cfg := m.Initial()
	for i, e := range evs {
		where := fmt.Sprintf("event %d", e.Seq)
		if e.Seq != int64(i+1) {
			rep.fail("event-sequence", where, "expected sequence %d", i+1)
		}
		if store.BodyDigest(e.Body) != e.Digest {
			rep.fail("event-digest", where, "digest %s does not match the stored bytes", e.Digest)
		}
		if c, err := cjson.Canonicalize(e.Body); err != nil || !bytes.Equal(c, e.Body) {
			rep.fail("event-canonical", where, "body is not flrh-cjson/1 canonical (%v)", err)
		}
		if e.PrevHash != prev || e.ChainHash != store.ChainHash(prev, e.Seq, e.Digest) {
			rep.fail("event-chain", where, "hash chain broken")
		}
		prev = e.ChainHash
		if e.Generation < gen {
			rep.fail("fencing", where, "written by lease generation %d after generation %d had written", e.Generation, gen)
		}
		gen = max(gen, e.Generation)
		if e.Generation > run.Lease.Generation {
			rep.fail("fencing", where, "written by generation %d, beyond the run's %d", e.Generation, run.Lease.Generation)
		}
		if e.Kind != runner.EventControl && e.Kind != runner.EventRejected {
			continue
		}
		rep.Controls++
		var rec control.Record
		if err := strictDecode(e.Body, &rec); err != nil {
			rep.fail("control-record", where, "not a control record: %v", err)
			continue
		}
		cfg, _ = restep(rep, m, cfg, rec, e, where)
	}
	if run.Head != int64(len(evs)) || (len(evs) > 0 && run.HeadHash != prev) {
		rep.fail("run-head", "run", "header says head %d %s; the log has %d events ending %s", run.Head, run.HeadHash, len(evs), prev)
	}
	if run.State != cfg.State {
		rep.fail("run-state", "run", "header says %s; the control records lead to %s", run.State, cfg.State)
	}
	if want := m.Outcome(cfg); run.Outcome != want {
		rep.fail("run-outcome", "run", "header says outcome %q; the FSM's final state means %q", run.Outcome, want)
	}
	return cfg
}

func TestCheckEventsMatchesTheSlowOracle(t *testing.T) {
	cases := []struct {
		name  string
		run   string
		edit  []string
		chain bool
	}{
		{name: "honest small", run: "small"},
		{name: "honest large", run: "large"},
		{name: "control record not canonical, digests rebuilt", run: "small", chain: true,
			edit: []string{`UPDATE events SET body = CAST(replace(body, '{"', '{ "') AS BLOB) WHERE run_id = 'small' AND seq = (SELECT MIN(seq) FROM events WHERE run_id = 'small' AND kind = 'control')`}},
		{name: "control record with an unknown field", run: "small", chain: true,
			edit: []string{`UPDATE events SET body = CAST(replace(body, '{"', '{"zz":1,"') AS BLOB) WHERE run_id = 'small' AND seq = (SELECT MIN(seq) FROM events WHERE run_id = 'small' AND kind = 'control')`}},
		{name: "control record with an escaped character, digests rebuilt", run: "small", chain: true,
			edit: []string{`UPDATE events SET body = CAST(replace(body, '"table":"sha256:', '"table":"\u0073ha256:') AS BLOB) WHERE run_id = 'small' AND seq = (SELECT MIN(seq) FROM events WHERE run_id = 'small' AND kind = 'control')`}},
		{name: "control record with a duplicate member, digests rebuilt", run: "large", chain: true,
			edit: []string{`UPDATE events SET body = CAST(replace(body, '{"accepted":true,', '{"accepted":true,"accepted":true,') AS BLOB) WHERE run_id = 'large' AND kind = 'control'`}},
		{name: "forged control record, chain rebuilt", run: "small", chain: true,
			edit: []string{`UPDATE events SET body = CAST(replace(body, '"to":"SUCCEEDED"', '"to":"FAILED_PERMANENT"') AS BLOB) WHERE run_id = 'small' AND kind = 'control'`}},
		{name: "control recorded as rejected", run: "small",
			edit: []string{`UPDATE events SET kind = 'control.rejected' WHERE run_id = 'small' AND kind = 'control' AND seq = 3`}},
		{name: "not JSON at all", run: "small", chain: true,
			edit: []string{`UPDATE events SET body = CAST('not json' AS BLOB) WHERE run_id = 'small' AND seq = 2`}},
		{name: "a control record's digest is another event's", run: "small",
			edit: []string{`UPDATE events SET digest = (SELECT digest FROM events WHERE run_id = 'small' AND seq = 1) WHERE run_id = 'small' AND seq = 3`}},
		{name: "an input's digest is another event's", run: "small",
			edit: []string{`UPDATE events SET digest = (SELECT digest FROM events WHERE run_id = 'small' AND seq = 3) WHERE run_id = 'small' AND seq = 1`}},
		// The bytes a control record opens with, whose hash state is
		// kept from record to record (bodySum), changed after the first
		// record, the digests kept: every changed record is found.
		{name: "control records' openings changed, digests kept", run: "large",
			edit: []string{`UPDATE events SET body = CAST(replace(body, '"actor_role":"', '"actor_role":" ') AS BLOB) WHERE run_id = 'large' AND kind = 'control' AND seq > (SELECT MIN(seq) FROM events WHERE run_id = 'large' AND kind = 'control')`}},
		{name: "generations out of order", run: "large",
			edit: []string{`UPDATE events SET generation = 99 WHERE run_id = 'large' AND seq = 2`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := recorded(t)
			if len(c.edit) > 0 {
				tamper(t, path, c.edit...)
			}
			if c.chain {
				rechain(t, path, c.run)
			}
			st := open(t, path, true)
			run, err := st.Run(ctx, c.run)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := st.Events(ctx, c.run, 0)
			if err != nil {
				t.Fatal(err)
			}
			fast, slow := &Report{Findings: []Finding{}}, &Report{Findings: []Finding{}}
			m := control.Default()
			cf := checkEvents(fast, m, run, evs, nil)
			cs := slowCheckEvents(slow, m, run, evs)
			if fast.Controls != slow.Controls || len(fast.Findings) != len(slow.Findings) {
				t.Fatalf("%d control records and %d findings, the oracle %d and %d:\n%v\n%v", fast.Controls, len(fast.Findings), slow.Controls, len(slow.Findings), fast.Findings, slow.Findings)
			}
			for i := range fast.Findings {
				if fast.Findings[i] != slow.Findings[i] {
					t.Fatalf("finding %d: %+v, the oracle %+v", i, fast.Findings[i], slow.Findings[i])
				}
			}
			if !reflect.DeepEqual(cf, cs) {
				t.Fatalf("configurations differ:\nfast %+v\nslow %+v", cf, cs)
			}
			if c.name[:6] != "honest" && len(slow.Findings) == 0 {
				t.Fatalf("the tampering went unnoticed")
			}
		})
	}
}

// slowCheckCheckpoint is checkCheckpoint as first written: the checkpoint
// decoded with encoding/json, both configurations encoded and compared.
func slowCheckCheckpoint(rep *Report, rec *record, cfg control.Configuration) {
	cp := rec.cp
	if store.BodyDigest(cp.Body) != cp.Digest {
		rep.fail("checkpoint", "checkpoint", "digest does not match its bytes")
	}
	if cp.Seq != rec.run.Head {
		rep.fail("checkpoint", "checkpoint", "follows event %d; the run is at %d", cp.Seq, rec.run.Head)
	}
	var body struct {
		Control control.Configuration `json:"control"`
	}
	if err := json.Unmarshal(cp.Body, &body); err != nil {
		rep.fail("checkpoint", "checkpoint", "unreadable: %v", err)
		return
	}
	a, _ := cjson.Marshal(body.Control)
	b, _ := cjson.Marshal(cfg)
	if !bytes.Equal(a, b) {
		rep.fail("checkpoint", "checkpoint", "control configuration %s differs from the replayed %s", a, b)
	}
}

// checkCheckpoint, which compares the stored control configuration's
// bytes before decoding anything, reports what decoding it always did.
func TestCheckCheckpointMatchesTheSlowOracle(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"honest", "", ""},
		{"state changed", `"state":"SUCCEEDED"`, `"state":"FAILED_PERMANENT"`},
		{"control member in another case", `"control":`, `"Control":`},
		{"control member twice", `"control":`, `"control":{"state":"INGEST"},"control":`},
		{"a key that is not ASCII", `"control":`, `"ſ":1,"control":`},
		{"not JSON", `"control":`, `"control" `},
		{"a float", `"control":`, `"x":1.5,"control":`},
		{"an escape", `"control":{"head":"`, `"control":{"head":"\u0073`},
		{"nested deeper than encoding/json reads", `"control":`, `"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"control":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := recorded(t)
			if c.from != "" {
				tamper(t, path, "DROP TRIGGER IF EXISTS checkpoints_no_update",
					`UPDATE checkpoints SET body = CAST(replace(body, '`+c.from+`', '`+c.to+`') AS BLOB) WHERE run_id = 'large'`)
			}
			st := open(t, path, true)
			rec, err := load(ctx, st, "large", withRun|withEffects)
			if err != nil {
				t.Fatal(err)
			}
			if c.from != "" && !bytes.Contains(rec.cp.Body, []byte(c.to)) {
				t.Fatalf("the edit did not apply: %s", rec.cp.Body)
			}
			m := control.Default()
			cfg := checkEvents(&Report{}, m, rec.run, rec.events, nil)
			fast, slow := &Report{Findings: []Finding{}}, &Report{Findings: []Finding{}}
			checkCheckpoint(fast, rec, cfg)
			slowCheckCheckpoint(slow, rec, cfg)
			if !reflect.DeepEqual(fast.Findings, slow.Findings) {
				t.Fatalf("findings %v, the oracle %v", fast.Findings, slow.Findings)
			}
			if (len(fast.Findings) == 0) != (c.name == "honest") {
				t.Fatalf("findings %v", fast.Findings)
			}
			// Replay reads the state member the same way, and agrees with
			// the record whatever else the edit did.
			rp, err := Replay(ctx, st, wf, "large")
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "honest" && !rp.OK() {
				t.Fatalf("replay %+v", rp.Findings)
			}
		})
	}
}
