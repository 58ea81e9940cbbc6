package frontier

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

func wire(t tb, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip checks that a state survives its wire form exactly.
func roundTrip(t tb, p Profile, s *State) {
	t.Helper()
	v, err := cjson.Decode(wire(t, s))
	if err != nil {
		t.Fatal(err)
	}
	got, rej := ParseState(v, p)
	if rej != nil {
		t.Fatalf("own state rejected: %v", rej)
	}
	if got.Digest() != s.Digest() || !bytes.Equal(wire(t, got), wire(t, s)) {
		t.Fatal("state changed through its wire form")
	}
}

// TestWireSequence replays the reference's frontier-stable sequence through
// StepJSON, feeding each next state back as wire JSON.
func TestWireSequence(t *testing.T) {
	p := m3Profile(t)
	profileJSON := wire(t, p)
	var state []byte
	for i, st := range frontierStableSequence(t) {
		out, ok := StepJSON(state, profileJSON, EncodeCommand(st.cmd))
		if !ok {
			t.Fatalf("step %d rejected: %s", i, out)
		}
		var tr struct {
			NextState       json.RawMessage `json:"next_state"`
			TransitionDigst string          `json:"transition_digest"`
		}
		if err := json.Unmarshal(out, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.TransitionDigst != st.digest {
			t.Errorf("step %d: transition digest %s, want %s", i, tr.TransitionDigst, st.digest)
		}
		assertCanonical(t, out)
		state = tr.NextState
	}
}

func TestWireRejections(t *testing.T) {
	p := m3Profile(t)
	profileJSON := wire(t, p)
	seq := frontierStableSequence(t)
	trs := runSequence(t, p, seq[:4])
	state := wire(t, trs[3].Next)
	prop := mustProposal(t, m3Proposal())
	late := EncodeCommand(ApplyDeltaBatch{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0",
		Deltas: []ValueDelta{mustDelta(t, "source:m3:a", 6, 1, prop)}})
	apply := EncodeCommand(seq[0].cmd) // canonical order: the verdict delta first
	replace := func(b []byte, old, new string) []byte {
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%q not in %s", old, b)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	cases := []struct {
		name                string
		state, profile, cmd []byte
		code                Code
		path                string
		trustedProfile      bool
	}{
		{"late delta (reference golden)", state, profileJSON, late, CodeLateDelta, "/command/deltas/0/logical_time", true},
		{"float in command", nil, profileJSON, replace(apply, `"logical_time":7`, `"logical_time":7.0`), CodeCanonicalizationViolation, "", false},
		{"profile digest tampered", nil, replace(profileJSON, "0da82696", "0da82697"), apply, CodeProfileMismatch, "/profile/profile_digest", false},
		{"profile limit above ceiling", nil, replace(profileJSON, `"max_open_epochs":3`, `"max_open_epochs":1025`), apply, CodeMalformedDataflowProfile, "/profile/limits/max_open_epochs", false},
		{"state digest tampered", replace(state, `"state_digest":"sha256:`, `"state_digest":"sha256:0`), profileJSON, apply, CodeMalformedReactiveState, "/prior_state/state_digest", true},
		{"state watermark edited", replace(state, `"global_low_watermark":8`, `"global_low_watermark":7`), profileJSON, apply, CodeMalformedReactiveState, "/prior_state/global_low_watermark", true},
		{"value digest forged", nil, profileJSON, replace(apply, `"value_digest":"sha256:cc3e`, `"value_digest":"sha256:dc3e`), CodeValueIdentityConflict, "/command/deltas/1/value_digest", true},
		{"delivery id forged", nil, profileJSON, replace(apply, `"delivery_id":"delivery:acba`, `"delivery_id":"delivery:bcba`), CodeValueIdentityConflict, "/command/deltas/1/delivery_id", true},
		{"unknown source", nil, profileJSON, replace(apply, `"source_id":"source:m3:a"`, `"source_id":"source:m3:z"`), CodeUnknownFrontierSource, "/command/deltas/1/source_id", true},
		{"unknown command kind", nil, profileJSON, replace(apply, `"kind":"RApplyDeltaBatch"`, `"kind":"RSomethingElse"`), CodeMalformedCommand, "/command/kind", true},
		{"command schema", nil, profileJSON, replace(apply, `"flrh-r-command/1"`, `"flrh-r-command/2"`), CodeUnsupportedCommandSchema, "/command/schema_version", true},
		{"delta schema", nil, profileJSON, replace(apply, `"flrh-r-value-delta/1"`, `"flrh-r-value-delta/9"`), CodeUnsupportedValueDeltaSchema, "/command/deltas/0/schema_version", true},
		{"bad status", nil, profileJSON, replace(apply, `"status":"eligible"`, `"status":"approved"`), CodeMalformedValueDelta, "/command/deltas/0/value/status", true},
		{"extra member", nil, profileJSON, replace(apply, `"kind":"RApplyDeltaBatch"`, `"kind":"RApplyDeltaBatch","extra":1`), CodeMalformedCommand, "/command", true},
		{"regression", state, profileJSON, EncodeCommand(AdvanceFrontier{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", SourceID: "source:m3:a", LowWatermark: 3}), CodeFrontierRegression, "/command/low_watermark", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := StepJSON(c.state, c.profile, c.cmd)
			if ok {
				t.Fatalf("accepted: %s", out)
			}
			var r struct {
				Code          Code    `json:"code"`
				Path          string  `json:"path"`
				ProfileDigest *string `json:"profile_digest"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if r.Code != c.code || r.Path != c.path {
				t.Errorf("got %s at %q, want %s at %q\n%s", r.Code, r.Path, c.code, c.path, out)
			}
			if (r.ProfileDigest != nil) != c.trustedProfile {
				t.Errorf("profile digest %v, trusted should be %v", r.ProfileDigest, c.trustedProfile)
			}
			assertCanonical(t, out)
		})
	}
	// The full late-delta rejection equals the reference golden.
	out, _ := StepJSON(state, profileJSON, late)
	want := `{"code":"LATE_DELTA","context":{"source_id":"source:m3:a"},"contract_version":"flrh-r-kernel/1","kind":"RRejection","logical_time":6,"path":"/command/deltas/0/logical_time","profile_digest":"` + m3ProfileDigest + `","schema_version":"flrh-r-result/1"}`
	if string(out) != want {
		t.Errorf("late rejection\n got %s\nwant %s", out, want)
	}
}

func FuzzStepJSON(f *testing.F) {
	p := m3Profile(f)
	profileJSON := wire(f, p)
	seq := frontierStableSequence(f)
	trs := runSequence(f, p, seq)
	for i, st := range seq {
		var prior []byte
		if i > 0 {
			prior = wire(f, trs[i-1].Next)
		}
		f.Add(prior, profileJSON, EncodeCommand(st.cmd))
	}
	f.Add([]byte("null"), profileJSON, []byte(`{"kind":"RGrantDemand"}`))
	f.Fuzz(func(t *testing.T, prior, profile, command []byte) {
		out, ok := StepJSON(prior, profile, command)
		if strings.Contains(string(out), "closed kernel failure") {
			t.Fatalf("kernel panicked on input")
		}
		c, err := cjson.Canonicalize(out)
		if err != nil || !bytes.Equal(c, out) {
			t.Fatalf("result is not canonical: %s", out)
		}
		if !ok {
			var r struct {
				Code Code `json:"code"`
			}
			if json.Unmarshal(out, &r) != nil || !knownCode(r.Code) {
				t.Fatalf("rejection with unknown code: %s", out)
			}
		}
	})
}

// TestStepJSONMutations is a deterministic, always-on complement to the
// fuzz target: thousands of single-byte edits of valid inputs (states with
// open epochs and ready batches, the profile, every command kind) must each
// yield a canonical transition or a closed-code rejection, never a panic.
func TestStepJSONMutations(t *testing.T) {
	p := m3Profile(t)
	profileJSON := wire(t, p)
	seq := frontierStableSequence(t)
	trs := runSequence(t, p, seq)
	type input struct{ state, profile, cmd []byte }
	var seeds []input
	for i, st := range seq {
		var prior []byte
		if i > 0 {
			prior = wire(t, trs[i-1].Next)
		}
		seeds = append(seeds, input{prior, profileJSON, EncodeCommand(st.cmd)})
	}
	alphabet := []byte(`{}[]",:0123456789-+.eE nulltruefalse\abcdefsha256`)
	x := uint64(0x9e3779b97f4a7c15)
	next := func(n int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	rejected := map[Code]int{}
	for i := 0; i < 3000; i++ {
		in := seeds[next(len(seeds))]
		parts := [][]byte{bytes.Clone(in.state), bytes.Clone(in.profile), bytes.Clone(in.cmd)}
		k := next(3)
		if len(parts[k]) == 0 {
			continue
		}
		switch pos := next(len(parts[k])); next(3) {
		case 0:
			parts[k][pos] = alphabet[next(len(alphabet))]
		case 1:
			parts[k] = append(parts[k][:pos], parts[k][pos+1:]...)
		default:
			parts[k] = append(parts[k][:pos], append([]byte{alphabet[next(len(alphabet))]}, parts[k][pos:]...)...)
		}
		out, ok := StepJSON(parts[0], parts[1], parts[2])
		if bytes.Contains(out, []byte("closed kernel failure")) {
			t.Fatalf("kernel failure on %q / %q / %q", parts[0], parts[1], parts[2])
		}
		assertCanonical(t, out)
		if !ok {
			var r struct {
				Code Code `json:"code"`
			}
			if json.Unmarshal(out, &r) != nil || !knownCode(r.Code) {
				t.Fatalf("unknown rejection %s", out)
			}
			rejected[r.Code]++
		}
	}
	t.Logf("rejections by code: %v", rejected)
	if len(rejected) < 5 {
		t.Errorf("mutations reached only %d rejection codes: %v", len(rejected), rejected)
	}
}

func TestDecodeStateAndProfile(t *testing.T) {
	p := m3Profile(t)
	pj, _ := json.Marshal(p)
	got, rej := DecodeProfile(pj)
	if rej != nil || got.Digest() != p.Digest() {
		t.Fatalf("profile round trip: %v", rej)
	}
	trs := runSequence(t, p, frontierStableSequence(t)[:4])
	sj, _ := json.Marshal(trs[3].Next)
	s, rej := DecodeState(sj, p)
	if rej != nil || s.Digest() != trs[3].Next.Digest() {
		t.Fatalf("state round trip: %v", rej)
	}
	if _, rej := DecodeState(append(sj, '1'), p); rej == nil || rej.Code != CodeCanonicalizationViolation {
		t.Fatalf("trailing data: %v", rej)
	}
}

// EncodeCommand writes a delta batch's members in canonical byte order
// whatever order the caller gave them in, and AppendCommand writes the
// same bytes after whatever precedes them.
func TestEncodeCommandOrder(t *testing.T) {
	sortedIn, unsortedIn := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		p := profileWith(rt, Limits{MaxDeltasPerCommand: 8, MaxActiveValues: 48, MaxOpenEpochs: 6,
			MaxReadyBatches: 4, MaxDemandPerCommand: 3, MaxOutstandingDemand: 4})
		cmd := genCommand(rt, p, getPool(rt), nil, InitialState(p), rapid.Bool().Draw(rt, "noisy"))
		want := EncodeCommand(cmd)
		prefix := []byte(`{"command":`)
		if got := AppendCommand(slices.Clone(prefix), cmd); !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			rt.Fatalf("appended\n%s\nencoded\n%s", got, want)
		}
		a, ok := cmd.(ApplyDeltaBatch)
		if !ok {
			return
		}
		// The batch in canonical order and in a drawn order: both paths of
		// the encoder every time (a drawn order alone is seldom canonical).
		canonical := a
		canonical.Deltas = slices.SortedFunc(slices.Values(a.Deltas), func(x, y ValueDelta) int { return compareDeltaCanon(&x, &y) })
		sortedIn++
		if got := EncodeCommand(canonical); !bytes.Equal(got, want) {
			rt.Fatalf("in canonical order\n%s\noriginal\n%s", got, want)
		}
		a.Deltas = permute(rt, a.Deltas)
		if slices.IsSortedFunc(a.Deltas, func(x, y ValueDelta) int { return compareDeltaCanon(&x, &y) }) {
			sortedIn++
		} else {
			unsortedIn++
		}
		if got := EncodeCommand(a); !bytes.Equal(got, want) {
			rt.Fatalf("permuted\n%s\noriginal\n%s", got, want)
		}
		var doc struct {
			Deltas []json.RawMessage `json:"deltas"`
		}
		if err := json.Unmarshal(want, &doc); err != nil {
			rt.Fatal(err)
		}
		if len(doc.Deltas) != len(a.Deltas) {
			rt.Fatalf("%d deltas written, %d given", len(doc.Deltas), len(a.Deltas))
		}
		for i := range doc.Deltas {
			if d := a.Deltas[i]; !slices.ContainsFunc(doc.Deltas, func(m json.RawMessage) bool { return bytes.Equal(m, d.appendCanonical(nil)) }) {
				rt.Fatalf("delta %s not written", d.Digest())
			}
			if i > 0 && bytes.Compare(doc.Deltas[i-1], doc.Deltas[i]) > 0 {
				rt.Fatalf("deltas %d and %d out of canonical order", i-1, i)
			}
		}
	})
	if sortedIn == 0 || unsortedIn == 0 {
		t.Fatalf("%d batches given in canonical order, %d not: a path went untried", sortedIn, unsortedIn)
	}
}
