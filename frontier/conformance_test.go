package frontier

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The cases in this file are transcribed from the FLR-H reference corpus
// (fixtures/m3: cases.json and its two goldens). Inputs are rebuilt here as
// Go values; every expected digest is the reference's, so passing means our
// canonical bytes agree with the reference byte for byte.

const m3ProfileDigest = "sha256:0da826963d547756436cdaa14fa79392a6b307f7358d858560e876edd0cd6768"

func m3Profile(t tb) Profile {
	t.Helper()
	p, rej := NewProfile("dataflow/0", []string{"source:m3:b", "source:m3:a"}, Limits{
		MaxDeltasPerCommand:  8,
		MaxActiveValues:      6,
		MaxOpenEpochs:        3,
		MaxReadyBatches:      2,
		MaxDemandPerCommand:  2,
		MaxOutstandingDemand: 3,
	})
	if rej != nil {
		t.Fatal(rej)
	}
	return p
}

func m3Proposal() EffectProposal {
	return EffectProposal{
		ActionDigest:      "sha256:11564e22caacb49afe07af62f1c2681a06b1602c4bb51ea2c9886fafadc249ed",
		CauseID:           "evt:m1:effect",
		CorrelationID:     "run:m1:1",
		DeclaredRiskHint:  "high_risk_external",
		DestinationDigest: "sha256:bc9fa76aac868bba0cdc66acefff4008453593711fd433a1a852099c23589a0b",
		EffectType:        "artifact.publish",
		GoalID:            "goal:m1:publish",
		ObligationID:      "obligation:m1:publish",
		Preconditions:     []string{"frontier:1", "constraint:artifact-ready"},
		ProposalDedupKey:  "proposal-dedup:ba0a5a16c2a1c2ebd0d328c5f8987caf858122f19b200b62c0913ce8744980d0",
		ProposalID:        "proposal:994c653d471e0f3df8fb3d808d03b0f665ed389b04c28d2231d7f495c692b4bb",
		Versions: Versions{
			Canonicalization:   "flrh-cjson/1",
			CompositionProfile: "composition/0",
			Dataflow:           "dataflow/0",
			EventSchema:        "flrh-f-event/1",
			Gate:               "m1-gate/1",
			GraphSchema:        "graph/0",
			Model:              "none/0",
			Oracle:             "m1-oracle/1",
			Resolver:           "resolver/0",
			RuleSet:            "rules/0",
			StateSchema:        "flrh-f-state/1",
			Tool:               "publisher/1",
			Workflow:           "flrh-workflow/0.1",
		},
	}
}

func m3Verdict() EligibilityVerdict {
	return EligibilityVerdict{
		VerdictID:  "verdict:m3:primary",
		ProposalID: "proposal:994c653d471e0f3df8fb3d808d03b0f665ed389b04c28d2231d7f495c692b4bb",
		Status:     "eligible",
		SupportDerivationIDs: []string{
			"derivation:72dff297d2903add13069962307771b40acd9ccae8a20041e116743e2fd7f897",
			"derivation:03562d1e2bee2c8a583192f9a8ce753f1c813859312d5c916a8d021bbcb4652e",
		},
		CauseID:        "cause:m3:verdict",
		RuleSetVersion: "rules/0",
	}
}

func mustDelta(t tb, source string, at int64, diff int, v Value) ValueDelta {
	t.Helper()
	d, rej := NewValueDelta(source, at, diff, "dataflow/0", v)
	if rej != nil {
		t.Fatal(rej)
	}
	return d
}

func mustProposal(t tb, p EffectProposal) Value {
	t.Helper()
	v, rej := NewProposalValue(p)
	if rej != nil {
		t.Fatal(rej)
	}
	return v
}

func mustVerdict(t tb, e EligibilityVerdict) Value {
	t.Helper()
	v, rej := NewVerdictValue(e)
	if rej != nil {
		t.Fatal(rej)
	}
	return v
}

func TestConformanceIdentities(t *testing.T) {
	p := m3Profile(t)
	if p.Digest() != m3ProfileDigest {
		t.Errorf("profile digest = %s, want %s", p.Digest(), m3ProfileDigest)
	}
	prop := mustProposal(t, m3Proposal())
	verd := mustVerdict(t, m3Verdict())
	for _, c := range []struct{ name, got, want string }{
		{"proposal value digest", prop.Digest(), "sha256:cc3e884fa3251a18c8e2b6e7ffddf4b4ece1a91ddf189a9a5f6e58a05568a63c"},
		{"verdict value digest", verd.Digest(), "sha256:2c6cfc9fb51f7b9cbee829f63f2ea434e34a2f08ccbb16a6dfa6209effbce6bf"},
		{"proposal_t7 delivery", mustDelta(t, "source:m3:a", 7, 1, prop).DeliveryID(), "delivery:acba67d5a72ee2ede32d02083e35549440aafbb160086fc1088e1ac5e33b4bda"},
		{"verdict_t7 delivery", mustDelta(t, "source:m3:b", 7, 1, verd).DeliveryID(), "delivery:021ec8894a861e0554a430f39511e8e1e5f66d228f7ec10732c592da9d0b131d"},
		{"late_proposal_t6 delivery", mustDelta(t, "source:m3:a", 6, 1, prop).DeliveryID(), "delivery:3eda0e94ceff555c45e29656ab011f185c1612655559c4aa11a80222bf86a396"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

type m3Step struct {
	cmd       Command
	published int
	digest    string
}

func frontierStableSequence(t tb) []m3Step {
	prop := mustProposal(t, m3Proposal())
	verd := mustVerdict(t, m3Verdict())
	apply := ApplyDeltaBatch{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", Deltas: []ValueDelta{
		mustDelta(t, "source:m3:a", 7, 1, prop),
		mustDelta(t, "source:m3:b", 7, 1, verd),
	}}
	adv := func(src string, w int64) Command {
		return AdvanceFrontier{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", SourceID: src, LowWatermark: w}
	}
	return []m3Step{
		{apply, 0, "sha256:9d633ca2b2646465a1b16098adc2de46c03d2c02c165f23814fbf838d11e0529"},
		{adv("source:m3:a", 7), 0, "sha256:3ca898aca6ea0b5396312d4afef000c85c6779e9b97a1e512232cf9899b8f9da"},
		{adv("source:m3:b", 8), 0, "sha256:c47706edbd7a3b10abd015173d213a1b146b84829aebc56c9766a3de642c3ced"},
		{adv("source:m3:a", 8), 0, "sha256:8369e329308cdbc6345954fb11a44c7815e33d761838b2fe72d39fd701a4b974"},
		{GrantDemand{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", Batches: 1}, 1, "sha256:55bebf44352c0d67cfc0629b7e53bf42afb13404493ea3bba50fb21de946edb2"},
	}
}

func runSequence(t tb, p Profile, steps []m3Step) []*Transition {
	t.Helper()
	var s *State
	var out []*Transition
	for i, st := range steps {
		tr, rej := Step(s, p, st.cmd)
		if rej != nil {
			t.Fatalf("step %d: %v", i, rej)
		}
		if len(tr.Published) != st.published {
			t.Errorf("step %d: published %d batches, want %d", i, len(tr.Published), st.published)
		}
		if st.digest != "" && tr.Digest != st.digest {
			t.Errorf("step %d: transition digest %s, want %s", i, tr.Digest, st.digest)
		}
		out = append(out, tr)
		s = tr.Next
	}
	return out
}

func TestConformanceFrontierStable(t *testing.T) {
	p := m3Profile(t)
	trs := runSequence(t, p, frontierStableSequence(t))
	last := trs[len(trs)-1]
	// Fields of the golden transition (fixtures/m3/golden/frontier-stable).
	for _, c := range []struct{ name, got, want string }{
		{"prior_state_digest", last.PriorStateDigest, "sha256:81d9fdb5d48aec948896222de60163c7941ec69e92bb8d79fc43268d5eb7c3c4"},
		{"command_digest", last.CommandDigest, "sha256:b67c704fca829f80f3e1fab59c33e025c5c44673f34d5609202e327c0b9e4675"},
		{"next_state.state_digest", last.Next.Digest(), "sha256:4cd3165965e34278b901a0ee53d2d755ec8671a7c0c3906b22dc856b0b28e6af"},
		{"batch_id", last.Published[0].Batch().BatchID, "batch:307f1d9fa3279d3bae9e3b4b728c4ee05c0f36733164f3ebb888322ed43b033e"},
		{"cause_id", last.Published[0].Batch().CauseID, "reaction:307f1d9fa3279d3bae9e3b4b728c4ee05c0f36733164f3ebb888322ed43b033e"},
		{"published_batch_digest", last.Published[0].Digest(), "sha256:0ecec668bf04fe75c462ab534b8c59e6f6a439bd37ea073906b2b87b445f4ff8"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
	want := Stats{PublishedBatchCount: 1}
	if last.Stats != want {
		t.Errorf("stats = %+v, want %+v", last.Stats, want)
	}
	if bp := last.Backpressure; bp.OpenEpochCount != 0 || bp.ActiveValueCount != 0 || bp.ReadyBatchCount != 0 || bp.OutstandingDemand != 0 {
		t.Errorf("backpressure = %+v, want all zero", bp)
	}
	// The whole transition is canonical JSON and hashes to its digest.
	raw, _ := json.Marshal(last)
	assertCanonical(t, raw)
}

func TestConformanceApplyPermutation(t *testing.T) {
	p := m3Profile(t)
	seq := frontierStableSequence(t)[:1]
	left := runSequence(t, p, seq)[0]
	c := seq[0].cmd.(ApplyDeltaBatch)
	c.Deltas = []ValueDelta{c.Deltas[1], c.Deltas[0]}
	right := runSequence(t, p, []m3Step{{c, 0, seq[0].digest}})[0]
	lb, _ := json.Marshal(left)
	rb, _ := json.Marshal(right)
	if !bytes.Equal(lb, rb) {
		t.Error("permuted delta batch changed the transition bytes")
	}
}

func TestConformanceRejections(t *testing.T) {
	p := m3Profile(t)
	seq := frontierStableSequence(t)
	prior := runSequence(t, p, seq[:4])[3].Next
	prop := mustProposal(t, m3Proposal())
	lt6 := int64(6)
	limit, observed := int64(2), int64(3)
	cases := []struct {
		name  string
		prior *State
		cmd   Command
		want  Rejection
		json  string
	}{
		{
			name:  "late-delta",
			prior: prior,
			cmd: ApplyDeltaBatch{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", Deltas: []ValueDelta{
				mustDelta(t, "source:m3:a", 6, 1, prop)}},
			want: Rejection{Code: CodeLateDelta, Path: "/command/deltas/0/logical_time", LogicalTime: &lt6,
				ProfileDigest: m3ProfileDigest, Context: Context{SourceID: "source:m3:a"}},
			json: `{"code":"LATE_DELTA","context":{"source_id":"source:m3:a"},"contract_version":"flrh-r-kernel/1","kind":"RRejection","logical_time":6,"path":"/command/deltas/0/logical_time","profile_digest":"` + m3ProfileDigest + `","schema_version":"flrh-r-result/1"}`,
		},
		{
			name: "demand-command-limit",
			cmd:  GrantDemand{ProfileDigest: m3ProfileDigest, DataflowVersion: "dataflow/0", Batches: 3},
			want: Rejection{Code: CodeDemandLimitExceeded, Path: "/command/batches", ProfileDigest: m3ProfileDigest,
				Context: Context{Limit: &limit, Observed: &observed}},
			json: `{"code":"DEMAND_LIMIT_EXCEEDED","context":{"limit":2,"observed":3},"contract_version":"flrh-r-kernel/1","kind":"RRejection","logical_time":null,"path":"/command/batches","profile_digest":"` + m3ProfileDigest + `","schema_version":"flrh-r-result/1"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := ""
			if c.prior != nil {
				before = c.prior.Digest()
			}
			tr, rej := Step(c.prior, p, c.cmd)
			if tr != nil || rej == nil {
				t.Fatalf("got transition, want %s", c.want.Code)
			}
			got, _ := json.Marshal(rej)
			if string(got) != c.json {
				t.Errorf("rejection bytes\n got %s\nwant %s", got, c.json)
			}
			if c.prior != nil && c.prior.Digest() != before {
				t.Error("rejection changed the prior state")
			}
		})
	}
}
