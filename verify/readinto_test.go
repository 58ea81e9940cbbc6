package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"flrh.dev/flrh/control"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/runner"
	"pgregory.net/rapid"
)

// stepInputsByScanner is stepInputs as it was before it read into reused
// maps and cut its strings from one copy: the oracle of
// TestStepInputsIntoMatchesTheScanner.
func stepInputsByScanner(m *control.Machine, b []byte) (control.Record, bool) {
	var rec control.Record
	s := jsonread.NewScanner(b)
	s.Object(func(k []byte) {
		switch string(k) {
		case "event":
			rec.Event = m.Name(s.StrBytes())
		case "actor_role":
			rec.ActorRole = m.Name(s.StrBytes())
		case "capability":
			rec.Capability = m.Name(s.StrBytes())
		case "event_id":
			rec.EventID = s.Str()
		case "evidence":
			rec.Evidence = map[string]string{}
			s.Object(func(k []byte) { rec.Evidence[m.Name(k)] = s.Str() })
		case "guard_inputs":
			rec.GuardInputs = map[string]bool{}
			s.Object(func(k []byte) { rec.GuardInputs[m.Name(k)] = s.Bool() })
		default:
			s.Skip()
		}
	})
	return rec, s.End()
}

// stepInputsInto, reading into maps left over from earlier records, reads
// what the scanner-based reader reads, value for value (nil and empty maps
// told apart), and gives up where it gives up: for records of the table's
// own names, repeated members, escapes, text it refuses, and every control
// record of recorded runs.
func TestStepInputsIntoMatchesTheScanner(t *testing.T) {
	m := control.Default()
	names := tableNames(m)
	var x stepScratch // shared by every draw: never cleaned between records
	check := func(t interface{ Fatalf(string, ...any) }, b []byte) {
		for _, mm := range []*control.Machine{nil, m} {
			want, wok := stepInputsByScanner(mm, b)
			got, ok := stepInputsInto(mm, b, &x)
			if ok != wok || ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: read %+v %v into the scratch maps, %+v %v by the scanner", b, got, ok, want, wok)
			}
			if got, ok := stepInputs(mm, b); ok != wok || ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: read %+v %v, %+v %v by the scanner", b, got, ok, want, wok)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(rapid.SampledFrom(names), rapid.StringMatching(`[a-zA-Z_.:]{0,12}`), rapid.String())
		str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
		var members []string
		for i, n := 0, rapid.IntRange(0, 9).Draw(t, "members"); i < n; i++ {
			k := rapid.SampledFrom([]string{"event", "actor_role", "capability", "event_id", "evidence", "guard_inputs",
				"seq", "effects", "from", "x"}).Draw(t, "key")
			switch k {
			case "evidence", "guard_inputs":
				var inner []string
				for j, n := 0, rapid.IntRange(0, 3).Draw(t, k+" size"); j < n; j++ {
					v := str(name.Draw(t, "value"))
					if k == "guard_inputs" {
						v = rapid.SampledFrom([]string{"true", "false", `"x"`}).Draw(t, "flag")
					}
					inner = append(inner, str(name.Draw(t, "name"))+":"+v)
				}
				members = append(members, str(k)+":{"+strings.Join(inner, ",")+"}")
			case "seq":
				members = append(members, `"seq":`+rapid.SampledFrom([]string{"1", "-2", "1.5", "null"}).Draw(t, "seq"))
			case "effects":
				members = append(members, `"effects":[`+str(name.Draw(t, "effect"))+`]`)
			default:
				members = append(members, str(k)+":"+str(name.Draw(t, k)))
			}
		}
		check(t, []byte("{"+strings.Join(members, ",")+"}"))
	})
	for _, b := range []string{``, `{`, `{"evidence":{"a":"b"},"evidence":{}}`, `{"event_id":""}`, `{"event_id":"a\"b"}`,
		`{"evidence":{"a":"b","a":"c"}}`, `{"guard_inputs":{"g":true},"guard_inputs":{"h":false}}`} {
		check(t, []byte(b))
	}
	st := open(t, recorded(t), true)
	for _, id := range []string{"small", "large"} {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == runner.EventControl || e.Kind == runner.EventRejected {
				check(t, e.Body)
			}
		}
	}
}

// Every vouched control record keeps its event, actor, capability and the
// state it left as the strict decoder reads them, and those the ledger
// checks read their evidence from keep it and their event id whole,
// although the
// reader's maps were refilled by every record after them: over runs that
// spent their retries and runs that did not.
func TestVouchedRecordsKeepWhatTheLedgerChecksRead(t *testing.T) {
	for _, failFor := range []int{100, 3} {
		path, _ := retried(t, failFor)
		st := open(t, path, true)
		rec, err := load(ctx, st, "flaky", withRun|withEffects)
		if err != nil {
			t.Fatal(err)
		}
		// The run's first control record with evidence read once more
		// after the last, as a forger might append it: the reader's maps
		// are refilled after every record the run vouched for.
		evs := rec.events
		for _, e := range evs {
			if e.Kind == runner.EventControl && strings.Contains(string(e.Body), `"evidence":{"`) {
				evs = append(evs[:len(evs):len(evs)], e)
				break
			}
		}
		if len(evs) == len(rec.events) {
			t.Fatal("no control record with evidence")
		}
		known := make([]vouched, len(evs))
		var rep Report
		checkEvents(&rep, control.Default(), rec.run, evs, known)
		spent := false
		for i, e := range evs {
			if !known[i].ok {
				continue
			}
			var strict control.Record
			if err := strictDecode(e.Body, &strict); err != nil {
				t.Fatal(err)
			}
			got := known[i].rec
			if got.Event != strict.Event || got.ActorRole != strict.ActorRole || got.Capability != strict.Capability ||
				ledgerEvent(strict.Event) && got.EventID != strict.EventID || got.From != strict.From {
				t.Fatalf("event %d kept as %+v; strictly %+v", e.Seq, got, strict)
			}
			if budgetEvents[strict.Event] != "" || strict.Event == retryEvent {
				spent = spent || strict.Event == retryEvent
				if !reflect.DeepEqual(got.Evidence, strict.Evidence) {
					t.Fatalf("event %d (%s) kept evidence %v; strictly %v", e.Seq, strict.Event, got.Evidence, strict.Evidence)
				}
			}
		}
		if spent != (failFor == 100) {
			t.Fatalf("failing %d times: %s vouched for = %v", failFor, retryEvent, spent)
		}
	}
}

// A step scratch handed back to the pool keeps nothing of the records read
// into it: its maps are empty and its values zero over their capacity.
func TestStepScratchComesBackEmpty(t *testing.T) {
	m := control.Default()
	x := new(stepScratch)
	for _, b := range []string{
		`{"event":"A","event_id":"e1","evidence":{"a":"sha256:1","b":"sha256:2","c":"sha256:3"},"guard_inputs":{"g":true}}`,
		`{"event":"B","event_id":"e2","evidence":{"a":"sha256:4"}}`,
	} {
		if _, ok := stepInputsInto(m, []byte(b), x); !ok {
			t.Fatalf("%s was not read", b)
		}
	}
	x.release()
	if len(x.evidence) != 0 || len(x.guards) != 0 || len(x.values) != 0 {
		t.Fatalf("released with %v %v %v", x.evidence, x.guards, x.values)
	}
	for i, v := range x.values[:cap(x.values)] {
		if v != (keptValue{}) {
			t.Fatalf("value %d kept as %+v", i, v)
		}
	}
}

// The usage reports a checkpoint still holds (open effects', receipts' not
// yet accepted) are counted, and an empty list counts nothing: the budget
// check reads the same whether the lists are decoded or passed over, and
// whether the checkpoint's members are read one by one or the body whole.
func TestBudgetCountsTheCheckpointsOpenReports(t *testing.T) {
	const ledger = `{"adopted":false,"breach":null,"clock_millis":0,"cost_micros":0,"limits":{"cost_micros":100,"steps":10,"tokens":100,"tool_calls":10},"started_millis":0,"steps":0,"suspended_millis":0,"tokens":%d,"tool_calls":0,"wall_millis":0}`
	for _, c := range []struct {
		tokens       int
		open, ingest string
		ok           bool
	}{
		{0, `[]`, `[]`, true},
		{5, `[]`, `[]`, false},
		{5, `[{"stage":"dispatched","usage":{"cost_micros":0,"tokens":5}}]`, `[]`, true},
		{5, `[{"stage":"closed","usage":{"cost_micros":0,"tokens":5}}]`, `[]`, false},
		{5, `[]`, `[{"usage":{"cost_micros":0,"tokens":5}}]`, true},
		{7, `[{"stage":"dispatched","usage":{"cost_micros":0,"tokens":5}}]`, `[{"usage":{"cost_micros":0,"tokens":2}}]`, true},
		{0, `null`, `null`, true},
	} {
		body := []byte(strings.ReplaceAll(`{"budget":`+strings.Replace(ledger, "%d", strconv.Itoa(c.tokens), 1)+
			`,"ingest":INGEST,"open":OPEN}`, "OPEN", c.open))
		body = []byte(strings.ReplaceAll(string(body), "INGEST", c.ingest))
		for _, cp := range []*checkpoint{readCheckpoint(body), {body: body}} {
			var rep Report
			checkBudgets(&rep, cp, nil, nil, 0)
			if rep.OK() != c.ok {
				t.Fatalf("tokens %d, open %s, ingest %s (members read %v): findings %+v", c.tokens, c.open, c.ingest, cp.read, rep.Findings)
			}
		}
	}
}

// The retry check's reading of an accepted input the member reader gives up
// on (here, a kind spelled with an escape) finds a receipt's digest as
// encoding/json reads it, and nothing for any other input.
func TestAcceptedReceiptDigest(t *testing.T) {
	for _, c := range []struct {
		body, digest string
		ok           bool
	}{
		{`{"kind":"receipt","digest":"sha256:ab"}`, "sha256:ab", true},
		{`{"kind":"rec\u0065ipt","digest":"sha256:ab"}`, "sha256:ab", true},
		{`{"kind":"input","digest":"sha256:ab"}`, "", false},
		{`{"kind":"receipt","digest":1}`, "", false},
		{`{"kind":"receipt"`, "", false},
	} {
		if d, ok := acceptedReceiptDigest([]byte(c.body)); d != c.digest || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.body, d, ok, c.digest, c.ok)
		}
		if a := readAcceptedInput([]byte(c.body)); a.read && a.digestRead && (a.kind == "receipt") != c.ok {
			t.Errorf("%s: the member reader reads kind %q", c.body, a.kind)
		}
	}
}

// The member reader of accepted inputs reads a kind, and a receipt's
// digest, as encoding/json reads them, whenever it reads them at all:
// kinds the runner writes (named without a copy), others, escaped,
// not strings, absent; digests plain, escaped, not strings, absent.
func TestReadAcceptedInputMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var members []string
		if k := rapid.SampledFrom([]string{"", `"input"`, `"receipt"`, `"choice"`, `"rec\u0065ipt"`, `"in"`, `1`, `null`, `"input"x`}).Draw(t, "kind"); k != "" {
			members = append(members, `"kind":`+k)
		}
		if d := rapid.SampledFrom([]string{"", `"sha256:ab"`, `"sha\u0032"`, `2`, `null`}).Draw(t, "digest"); d != "" {
			members = append(members, `"digest":`+d)
		}
		if rapid.Bool().Draw(t, "usage") {
			members = append(members, `"usage":{"cost_micros":1,"tokens":2}`)
		}
		members = rapid.Permutation(members).Draw(t, "order")
		b := []byte("{" + strings.Join(members, ",") + "}")
		var want struct {
			Kind   string `json:"kind"`
			Digest string `json:"digest"`
		}
		a := readAcceptedInput(b)
		if !a.read {
			return
		}
		if err := json.Unmarshal(b, &want); err != nil {
			var kindOnly struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(b, &kindOnly) != nil || kindOnly.Kind != a.kind {
				t.Fatalf("%s: read kind %q; encoding/json %v", b, a.kind, err)
			}
			if a.kind == "receipt" && a.digestRead {
				t.Fatalf("%s: read digest %q; encoding/json %v", b, a.digest, err)
			}
			return
		}
		if a.kind != want.Kind || a.kind == "receipt" && a.digestRead && a.digest != want.Digest {
			t.Fatalf("%s: read %q %q; encoding/json %q %q", b, a.kind, a.digest, want.Kind, want.Digest)
		}
	})
}

// An accepted input's record read once for both checks (acceptedInputOf,
// then replay's decoding from the members kept) reads what each read on
// its own: the budget and retry checks' kind, usage and digest as
// readAcceptedInput reads them, and replay's input and error as
// decodeAcceptedAs gives them, for records of the members an accepted
// input has, with a usage report or without, members repeated, folded,
// unknown or missing, values plain or escaped, and text refused.
func TestAcceptedRecordReadOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		values := map[string][]string{
			"seq":        {`1`, `-2`, `1.5`, `"1"`},
			"kind":       {`"input"`, `"receipt"`, `"choice"`, `"mrp"`, `"rec\u0065ipt"`, `1`, "\"rec\xffipt\""},
			"actor":      {`"ann"`, `"a\"b"`, `null`},
			"actor_role": {`"runner"`, `""`},
			"capability": {`"run.start"`, `"\u00e9"`},
			"digest":     {`"sha256:ab"`, `"sha\u0032"`, `2`, "\"sha\xff\""},
			"body":       {`{"a":1}`, `{"b":[2,1],"a":"x"}`, `{"kind":"flrh.action_receipt/1","output_digests":["b","a"]}`, `[1]`, `"s"`},
			"usage":      {`{"cost_micros":1,"tokens":2}`, `null`},
			"Kind":       {`"input"`},
			"extra":      {`0`},
		}
		var members []string
		for _, k := range []string{"seq", "kind", "actor", "actor_role", "capability", "digest", "body", "usage", "Kind", "extra", "kind"} {
			if rapid.IntRange(0, 3).Draw(t, "has "+k) > 0 == (k == "usage" || k == "Kind" || k == "extra" || k == "kind" && len(members) > 6) {
				continue
			}
			members = append(members, `"`+k+`":`+rapid.SampledFrom(values[k]).Draw(t, k))
		}
		members = rapid.Permutation(members).Draw(t, "order")
		b := []byte("{" + strings.Join(members, ",") + "}")
		if rapid.IntRange(0, 9).Draw(t, "cut") == 0 {
			b = b[:len(b)-1]
		}
		canonical := rapid.Bool().Draw(t, "canonical")
		known := make([]vouched, 1)
		known[0].canonical = canonical
		if got, want := acceptedInputOf(known, 0, b), readAcceptedInput(b); got.read != want.read || got.kind != want.kind ||
			!bytes.Equal(got.usage, want.usage) || got.digestRead != want.digestRead || got.digest != want.digest {
			t.Fatalf("%s: read %+v once, %+v alone", b, got, want)
		}
		rec := &record{known: known}
		got, gerr := rec.acceptedInput(0, b)
		want, werr := decodeAcceptedAs(b, canonical)
		if !reflect.DeepEqual(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%s: decoded %+v %v from the members kept, %+v %v alone", b, got, gerr, want, werr)
		}
	})
}
