package seam

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"flrh.dev/flrh/logic/ground"
)

type wireInputs struct{ l, bundle, r, binding, query []byte }

func truthFourWire(t tb) wireInputs {
	t.Helper()
	fix, bundle := solveTruthFour(t)
	enc := func(v any) []byte {
		b, err := ground.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r := lrRProfile(t)
	rj, _ := json.Marshal(r)
	bj, _ := json.Marshal(lrBinding())
	qj, err := json.Marshal(eligibleGoldenBatch(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return wireInputs{enc(fix), enc(bundle), rj, bj, qj}
}

func (w wireInputs) run() ([]byte, bool) { return ProjectJSON(w.l, w.bundle, w.r, w.binding, w.query) }

func TestProjectJSONGolden(t *testing.T) {
	w := truthFourWire(t)
	out, ok := w.run()
	if !ok {
		t.Fatalf("rejected: %s", out)
	}
	if !bytes.Contains(out, []byte(`"projection_digest":"`+eligibleProjectionDigest+`"`)) {
		t.Fatalf("projection %s", out)
	}
	assertCanonical(t, out)
}

// TestProjectJSONRejections transcribes the reference's digest-flip and
// canonical-domain rejection cases (fixtures/lr-seam/cases.json); the whole
// rejection object must match, trusted digests included.
func TestProjectJSONRejections(t *testing.T) {
	flip := func(b []byte, field, value string) []byte {
		i := bytes.Index(b, []byte(`"`+field+`":"`))
		if i < 0 {
			t.Fatalf("%s not found", field)
		}
		j := i + len(field) + 4
		k := bytes.IndexByte(b[j:], '"')
		return append(append(append([]byte(nil), b[:j]...), value...), b[j+k:]...)
	}
	const (
		b = `"binding_profile_digest":`
		l = `"l_fixpoint_digest":`
		r = `"r_profile_digest":`
	)
	lt, lf, rp, bd := `"logical_time":7`, l+`"`+lrFixpointDigest+`"`, r+`"`+lrRProfileDigest+`"`, b+`"`+lrBindingDigest+`"`
	cases := []struct {
		name   string
		mutate func(*wireInputs)
		want   string
	}{
		{"rule bundle digest", func(w *wireInputs) {
			w.bundle = flip(w.bundle, "rule_bundle_digest", "sha256:2222222222222222222222222222222222222222222222222222222222222222")
		}, `{` + b + `null,"code":"DIGEST_MISMATCH","context":{"actual":"sha256:2222222222222222222222222222222222222222222222222222222222222222","expected":"` + lrRuleBundle + `"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + l + `null,"logical_time":null,"path":"/rule_bundle/rule_bundle_digest","query_batch_digest":null,` + r + `null,"schema_version":"flrh-lr-result/1"}`},
		{"l fixpoint digest", func(w *wireInputs) {
			w.l = flip(w.l, "fixpoint_digest", "sha256:3333333333333333333333333333333333333333333333333333333333333333")
		}, `{` + b + `null,"code":"DIGEST_MISMATCH","context":{"actual":"sha256:3333333333333333333333333333333333333333333333333333333333333333","expected":"` + lrFixpointDigest + `"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + l + `null,"logical_time":null,"path":"/l_result/fixpoint_digest","query_batch_digest":null,` + r + `null,"schema_version":"flrh-lr-result/1"}`},
		{"r profile digest", func(w *wireInputs) {
			w.r = flip(w.r, "profile_digest", "sha256:4444444444444444444444444444444444444444444444444444444444444444")
		}, `{` + b + `null,"code":"PROFILE_MISMATCH","context":{"actual":"sha256:4444444444444444444444444444444444444444444444444444444444444444","expected":"` + lrRProfileDigest + `"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + lf + `,` + lt + `,"path":"/r_profile/profile_digest","query_batch_digest":null,` + r + `null,"schema_version":"flrh-lr-result/1"}`},
		{"binding profile digest", func(w *wireInputs) {
			w.binding = flip(w.binding, "profile_digest", "sha256:5555555555555555555555555555555555555555555555555555555555555555")
		}, `{` + b + `null,"code":"PROFILE_MISMATCH","context":{"actual":"sha256:5555555555555555555555555555555555555555555555555555555555555555","expected":"` + lrBindingDigest + `"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + lf + `,` + lt + `,"path":"/binding_profile/profile_digest","query_batch_digest":null,` + rp + `,"schema_version":"flrh-lr-result/1"}`},
		{"binding dataflow version", func(w *wireInputs) {
			w.binding = flip(w.binding, "dataflow_version", "dataflow/wrong/1")
		}, `{` + b + `null,"code":"VERSION_MISMATCH","context":{"actual":"dataflow/wrong/1","expected":"dataflow/0"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + lf + `,` + lt + `,"path":"/binding_profile/dataflow_version","query_batch_digest":null,` + rp + `,"schema_version":"flrh-lr-result/1"}`},
		{"query binding digest", func(w *wireInputs) {
			w.query = flip(w.query, "binding_profile_digest", "sha256:6666666666666666666666666666666666666666666666666666666666666666")
		}, `{` + bd + `,"code":"DIGEST_MISMATCH","context":{"actual":"sha256:6666666666666666666666666666666666666666666666666666666666666666","expected":"` + lrBindingDigest + `"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + lf + `,` + lt + `,"path":"/query_batch/binding_profile_digest","query_batch_digest":null,` + rp + `,"schema_version":"flrh-lr-result/1"}`},
		{"canonical float in query", func(w *wireInputs) {
			i := bytes.Index(w.query, []byte(`"destination_digest":"`))
			k := bytes.IndexByte(w.query[i+22:], '"')
			w.query = append(append(append([]byte(nil), w.query[:i+21]...), "1.5"...), w.query[i+22+k+1:]...)
		}, `{` + b + `null,"code":"CANONICALIZATION_VIOLATION","context":{"invariant":"FLOAT_FORBIDDEN"},"contract_version":"flrh-lr-seam/1","kind":"LRProjectionRejection",` + l + `null,"logical_time":null,"path":"/queries/0/proposal/destination_digest","query_batch_digest":null,` + r + `null,"schema_version":"flrh-lr-result/1"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := truthFourWire(t)
			c.mutate(&w)
			out, ok := w.run()
			if ok {
				t.Fatalf("accepted: %s", out)
			}
			if string(out) != c.want {
				t.Errorf("rejection\n got %s\nwant %s", out, c.want)
			}
		})
	}
}

func TestProjectJSONStructure(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*wireInputs)
		code   Code
		path   string
	}{
		{"query batch digest", func(w *wireInputs) {
			w.query = bytes.Replace(w.query, []byte(`"query_batch_digest":"sha256:2`), []byte(`"query_batch_digest":"sha256:0`), 1)
		}, CodeDigestMismatch, "/query_batch/query_batch_digest"},
		{"query without kind", func(w *wireInputs) {
			w.query = bytes.Replace(w.query, []byte(`"kind":"LRProjectionQuery",`), nil, 1)
		}, CodeMalformedQueryBatch, "/query_batch/queries/0"},
		{"query schema", func(w *wireInputs) {
			w.query = bytes.Replace(w.query, []byte(`"flrh-lr-query/1"`), []byte(`"flrh-lr-query/2"`), 1)
		}, CodeUnsupportedSchema, "/query_batch/schema_version"},
		{"binding policy", func(w *wireInputs) {
			w.binding = bytes.Replace(w.binding, []byte(`"deny_unproven"`), []byte(`"allow_unproven"`), 1)
		}, CodeUnsupportedProfile, "/binding_profile"},
		{"l result edited", func(w *wireInputs) {
			w.l = bytes.Replace(w.l, []byte(`derivation:lr:true`), []byte(`derivation:lr:tru3`), 1)
		}, CodeDigestMismatch, "/l_result/next_materialization/materialization_digest"},
		{"not JSON", func(w *wireInputs) { w.l = []byte(`{`) }, CodeCanonicalizationViolation, "/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := truthFourWire(t)
			c.mutate(&w)
			out, ok := w.run()
			var r struct {
				Code Code   `json:"code"`
				Path string `json:"path"`
			}
			if ok || json.Unmarshal(out, &r) != nil || r.Code != c.code || r.Path != c.path {
				t.Errorf("got %s, want %s at %s", out, c.code, c.path)
			}
		})
	}
}

func FuzzProjectJSON(f *testing.F) {
	w := truthFourWire(f)
	f.Add(w.l, w.bundle, w.r, w.binding, w.query)
	f.Fuzz(func(t *testing.T, l, bundle, r, binding, query []byte) {
		out, ok := ProjectJSON(l, bundle, r, binding, query)
		if strings.Contains(string(out), "closed_projection_failure") {
			t.Fatal("projection panicked")
		}
		if !ok && !json.Valid(out) {
			t.Fatalf("invalid rejection %s", out)
		}
	})
}
