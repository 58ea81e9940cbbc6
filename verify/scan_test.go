package verify

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
	"pgregory.net/rapid"
)

// stepInputs reads the same step inputs from every stored control record
// as the strict decoder does.
func TestStepInputsMatchStrictDecoding(t *testing.T) {
	st := open(t, recorded(t), true)
	n := 0
	for _, id := range []string{"small", "large"} {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind != runner.EventControl && e.Kind != runner.EventRejected {
				continue
			}
			n++
			fast, ok := stepInputs(control.Default(), e.Body)
			if !ok {
				t.Fatalf("%s event %d: the fast reader gave up on %s", id, e.Seq, e.Body)
			}
			var strict control.Record
			if err := strictDecode(e.Body, &strict); err != nil {
				t.Fatal(err)
			}
			want := control.Record{Event: strict.Event, ActorRole: strict.ActorRole, Capability: strict.Capability,
				EventID: strict.EventID, Evidence: strict.Evidence, GuardInputs: strict.GuardInputs}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("%s event %d: %+v, strictly %+v", id, e.Seq, fast, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no control records")
	}
}

// The fast reader gives up on what it does not read exactly, leaving the
// verdict to the strict decoder.
func TestStepInputsGiveUp(t *testing.T) {
	for _, b := range []string{
		``, `{`, `[]`, `{"event":"A"`, `{"event":"A"}x`, `{ "event":"A"}`, `{"event":"\u0041"}`,
		`{"event":1}`, `{"guard_inputs":{"g":1}}`, `{"evidence":{"e":true}}`, `{"seq":1.5}`, `{"seq":99999999999999999999}`,
		`{"x":[1,}`, `{"x":tru}`, "{\"event\":\"a\nb\"}", `{"a":1,}`,
	} {
		for _, m := range []*control.Machine{nil, control.Default()} {
			if _, ok := stepInputs(m, []byte(b)); ok {
				t.Errorf("%q was read", b)
			}
		}
	}
	for _, b := range []string{`{}`, `{"x":[1,-2,{"y":null}],"z":"q\"uote","event":"A","guard_inputs":{"g":false}}`} {
		for _, m := range []*control.Machine{nil, control.Default()} {
			if _, ok := stepInputs(m, []byte(b)); !ok {
				t.Errorf("%q was not read", b)
			}
		}
	}
}

// sameIntent, which encodes the planned intent once and compares bytes,
// agrees with the comparison that clears the approval digest on both
// sides, for committed intents with and without a grant, and for intents
// the full comparison finds different.
func TestSameIntentMatchesTheFullComparison(t *testing.T) {
	path, _, ids := manyRuns(t, 10)
	st := open(t, path, true)
	n, granted := 0, 0
	for _, id := range ids {
		ins, err := st.Intents(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			var planned protocol.EffectIntent
			if err := json.Unmarshal(in.Body, &planned); err != nil {
				t.Fatal(err)
			}
			if planned.ApprovalDigest != nil {
				granted++
			}
			other := planned
			other.Preconditions = append(protocol.IDSet{"precondition:z", "precondition:a"}, planned.Preconditions...)
			other.ApprovalDigest = nil
			another := planned
			another.CauseID = "cause:é"
			for i, p := range []protocol.EffectIntent{planned, other, another} {
				want, err := intentWithoutApproval(p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := intentWithoutApproval(json.RawMessage(in.Body))
				if err != nil {
					t.Fatal(err)
				}
				if full := bytes.Equal(want, got); sameIntent(p, in.Body) != full {
					t.Fatalf("%s variant %d: sameIntent %v, the full comparison %v", in.ID, i, !full, full)
				}
				if (i == 0) != bytes.Equal(want, got) {
					t.Fatalf("%s variant %d compares %v", in.ID, i, bytes.Equal(want, got))
				}
			}
			n++
		}
	}
	if n == 0 || granted == 0 {
		t.Fatalf("%d intents, %d with a grant", n, granted)
	}
}

func TestMembers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // the "a" member, "-" when members gives up
	}{
		{`{"a":{"x":[1,"y"]},"b":2}`, `{"x":[1,"y"]}`},
		{`{"b":2}`, ``},
		{`{"a":1,"a":2}`, `-`},
		{`{"A":1}`, `-`},
		{`{"é":1,"a":2}`, `-`},
		{`{"a":01}`, `-`},
		{`{"a":"\x"}`, `-`},
		{`{"a":"\u00e9"}`, `"\u00e9"`},
		{`{"a":1} `, `-`},
		{`[1]`, `-`},
	} {
		m, ok := jsonread.Members([]byte(c.in), "a")
		got := "-"
		if ok {
			got = string(m[0])
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.in, got, c.want)
		}
	}
}

// decodeAccepted reads every accepted-input record as
// runner.DecodeAccepted does: the same input, or the same error.
func TestDecodeAcceptedMatchesTheRunner(t *testing.T) {
	path, _, ids := manyRuns(t, 10)
	st := open(t, path, true)
	var bodies [][]byte
	for _, id := range ids {
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == runner.EventAccepted {
				bodies = append(bodies, e.Body)
			}
		}
	}
	if len(bodies) < 10 {
		t.Fatalf("%d accepted records", len(bodies))
	}
	for _, b := range bodies {
		if _, ok := jsonread.OnlyMembers(b, acceptedMembers...); !ok {
			t.Fatalf("the fast reader gave up on a recorded input: %s", b)
		}
	}
	r := string(bodies[0])
	for _, edit := range [][2]string{
		{`"kind":"input"`, `"kind":"inp\u0075t"`},
		{`"kind":"input"`, `"Kind":"input"`},
		{`"kind":"input"`, `"kind":"input","kind":"receipt"`},
		{`"kind":"input"`, `"kind":null`},
		{`"kind":"input"`, `"kind":7`},
		{`"kind":"input"`, `"kind":"input","usage":null`},
		{`"kind":"input"`, `"kind":"input","other":1`},
		{`"seq":1`, `"seq":"1"`},
		{`"seq":1`, `"seq":1.0`},
		{`"seq":1`, `"seq":99999999999999999999`},
		{`"body":{`, `"body":{"z":1.5,`},
		{`"body":{`, `"body":{"z":1,"z":2,`},
		{`"body":{`, `"body" :{`},
		{`{"actor"`, `{"body":null,"actor"`},
	} {
		if !strings.Contains(r, edit[0]) {
			t.Fatalf("no %s in %s", edit[0], r)
		}
		bodies = append(bodies, []byte(strings.Replace(r, edit[0], edit[1], 1)))
	}
	for _, b := range append(bodies, []byte(`{}`), []byte(`[]`), []byte(`not json`)) {
		got, gerr := decodeAccepted(b)
		want, werr := runner.DecodeAccepted(b)
		if !reflect.DeepEqual(got, want) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%s:\n got %+v %v\nwant %+v %v", b, got, gerr, want, werr)
		}
	}
}

// upper decodes itself, upper-cased, and a ",string" number is read from a
// string: a struct reader must leave both to encoding/json.
type upper string

func (u *upper) UnmarshalText(b []byte) error {
	*u = upper(strings.ToUpper(string(b)))
	return nil
}

func TestStructReaderLeavesWhatDecodesOtherwise(t *testing.T) {
	type doc struct {
		Name upper  `json:"name"`
		Note string `json:"note"`
	}
	text := []byte(`{"name":"abc","note":"x"}`)
	var got, want doc
	if !jsonread.NewReader(doc{}).Read(text, &got) {
		t.Fatal("the reader gave up")
	}
	if err := json.Unmarshal(text, &want); err != nil || got != want || want.Name != "ABC" {
		t.Fatalf("read %+v, encoding/json %+v %v", got, want, err)
	}
	type counted struct {
		Count int64 `json:"count,string"`
	}
	text = []byte(`{"count":"7"}`)
	var gc, wc counted
	if err := json.Unmarshal(text, &wc); err != nil || wc.Count != 7 {
		t.Fatalf("encoding/json read %+v %v", wc, err)
	}
	if jsonread.NewReader(counted{}).Read(text, &gc) && gc != wc {
		t.Fatalf("read %+v, encoding/json %+v", gc, wc)
	}
}

// Reading a control record's names through the table gives the same record
// as reading them without it, for records built from the table's own names,
// names it does not declare, and text the reader gives up on.
func TestStepInputsThroughTheTable(t *testing.T) {
	m := control.Default()
	names := tableNames(m)
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.OneOf(rapid.SampledFrom(names), rapid.StringMatching(`[a-zA-Z_.:]{0,12}`), rapid.String())
		str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
		var members []string
		for _, k := range []string{"event", "actor_role", "capability", "event_id", "seq"} {
			if rapid.Bool().Draw(t, "has "+k) {
				members = append(members, str(k)+":"+str(name.Draw(t, k)))
			}
		}
		for _, k := range []string{"evidence", "guard_inputs"} {
			if !rapid.Bool().Draw(t, "has "+k) {
				continue
			}
			var inner []string
			for i, n := 0, rapid.IntRange(0, 3).Draw(t, k+" size"); i < n; i++ {
				v := str(name.Draw(t, "value"))
				if k == "guard_inputs" {
					v = rapid.SampledFrom([]string{"true", "false", `"x"`}).Draw(t, "flag")
				}
				inner = append(inner, str(name.Draw(t, "key"))+":"+v)
			}
			members = append(members, str(k)+":{"+strings.Join(inner, ",")+"}")
		}
		b := []byte("{" + strings.Join(members, ",") + "}")
		plain, okPlain := stepInputs(nil, b)
		named, okNamed := stepInputs(m, b)
		if okPlain != okNamed || !reflect.DeepEqual(plain, named) {
			t.Fatalf("%s: %+v %v through the table, %+v %v without", b, named, okNamed, plain, okPlain)
		}
	})
}

// TestAppendConfigurationMatchesMarshal holds the configuration writer to
// cjson.Marshal: whatever it writes is Marshal's encoding, and it writes
// every configuration the FSM leads to in an ordinary run.
func TestAppendConfigurationMatchesMarshal(t *testing.T) {
	str := rapid.OneOf(rapid.SampledFrom([]string{"", "A", "RUNNING", "sha256:00ff", "é", "a\"b", "a\\b", "\x01", "a\u0301", "\xff", "<&>"}), rapid.String())
	rapid.Check(t, func(t *rapid.T) {
		c := control.Configuration{
			Table: str.Draw(t, "table"),
			State: str.Draw(t, "state"),
			Seq:   rapid.OneOf(rapid.Int64Range(-5, 100), rapid.Int64(), rapid.SampledFrom([]int64{1 << 53, 1<<53 + 1, -1 << 63, 1<<63 - 1})).Draw(t, "seq"),
			Head:  str.Draw(t, "head"),
		}
		if !rapid.Bool().Draw(t, "nil pending") {
			c.Pending = rapid.SliceOf(str).Draw(t, "pending")
		}
		if rapid.IntRange(0, 4).Draw(t, "context") == 0 {
			c.Context = rapid.MapOf(str, rapid.Bool()).Draw(t, "guards")
		}
		got, ok := appendConfiguration([]byte("x"), c)
		if !ok {
			return
		}
		want, err := cjson.Marshal(c)
		if err != nil || !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendConfiguration wrote %s; cjson.Marshal %s (%v)", got, want, err)
		}
	})
	// Every configuration of the recorded runs is written.
	path, _, ids := manyRuns(t, 5)
	st := open(t, path, true)
	for _, id := range ids {
		rec, err := load(ctx, st, id, withRun|withEffects)
		if err != nil {
			t.Fatal(err)
		}
		var rep Report
		cfg := checkEvents(&rep, control.Default(), rec.run, rec.events, nil)
		b, ok := appendConfiguration(nil, cfg)
		if want, _ := cjson.Marshal(cfg); !ok || !bytes.Equal(b, want) {
			t.Fatalf("run %s: configuration %s written as %s (%v)", id, want, b, ok)
		}
	}
}

// tableNames is every name m's table declares: its events, their actor
// roles and capabilities, its transitions' evidence and guards' inputs,
// the names a control record's reader looks up.
func tableNames(m *control.Machine) []string {
	var names []string
	for _, e := range m.Events() {
		names = append(names, e.ID)
		for _, p := range e.Authority {
			names = append(names, p.Role, p.Capability)
		}
	}
	for _, tr := range m.Transitions() {
		names = append(names, tr.Evidence...)
		if g, ok := m.Guard(tr.Guard); ok {
			names = append(names, g.AllTrue...)
		}
	}
	return names
}
