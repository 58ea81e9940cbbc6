package workflow

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"flrh.dev/flrh/authority"
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/mrp"
	"flrh.dev/flrh/protocol"
	"pgregory.net/rapid"
)

// oddStrings are strings the writer must either write as cjson does or
// refuse (so that the state falls back to cjson.Marshal): escapes, HTML
// characters encoding/json escapes in an IDSet, control bytes, non-ASCII,
// non-NFC text, invalid UTF-8, line separators.
var oddStrings = []string{"", "a", "run-1", "digest:" + cjson.Digest([]byte("x")), "x<y>&z", "quote\"back\\slash", "tab\tnl\n",
	"\x00\x1f", "é", "e\u0301", "\xff\xfe", "\u2028\u2029", "verdict:lr:0123456789abcdef0123456789abcdef", "日本語"}

func drawStr(rt *rapid.T, label string) string {
	return rapid.OneOf(rapid.SampledFrom(oddStrings), rapid.StringMatching(`[a-z0-9:._-]{0,24}`), rapid.String()).Draw(rt, label)
}

func drawStrs(rt *rapid.T, label string) []string {
	switch rapid.IntRange(0, 3).Draw(rt, label+"-shape") {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	return rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) string { return drawStr(rt, "s") }), 1, 4).Draw(rt, label)
}

func drawRaw(rt *rapid.T, label string) json.RawMessage {
	return json.RawMessage(rapid.SampledFrom([]string{"", `{}`, `{"amount":12,"payee":"p"}`, `{"b":1,"a":[3,1]}`, `[2,1]`, `"s"`, `null`, `{`, `{"x":1.5}`}).Draw(rt, label))
}

func drawActor(rt *rapid.T) mrp.Actor {
	return mrp.Actor{ID: drawStr(rt, "id"), Kind: drawStr(rt, "kind"), Role: drawStr(rt, "role"), Capabilities: drawStrs(rt, "caps")}
}

func drawVersions(rt *rapid.T) protocol.VersionEnvelope {
	s := func() string { return drawStr(rt, "version") }
	return protocol.VersionEnvelope{Workflow: s(), StateSchema: s(), EventSchema: s(), GraphSchema: s(), RuleSet: s(), Dataflow: s(),
		Canonicalization: s(), Tool: s(), Model: s(), Oracle: s(), Gate: s(), Resolver: s(), CompositionProfile: s()}
}

func drawPending(rt *rapid.T) pending {
	s := func(l string) string { return drawStr(rt, l) }
	p := pending{RequestID: s("request_id"), IntentID: s("intent_id"), Action: drawRaw(rt, "action"), Dest: drawRaw(rt, "dest"),
		Machine: mrp.New(mrp.Budgets{}), EffectSeq: rapid.Int64().Draw(rt, "seq"), Now: rapid.Int64().Draw(rt, "now"), Turn: rapid.Int64().Draw(rt, "turn")}
	if rapid.Bool().Draw(rt, "quorate") {
		p.Quorum = rapid.IntRange(2, 100).Draw(rt, "quorum")
	}
	p.Request = authority.ApprovalRequest{Kind: s("kind"), RequestID: s("rid"), ProposalID: s("pid"), Capability: s("cap"), AuthorityDigest: s("ad"),
		AdapterVersion: s("av"), RequestedAt: rapid.Int64().Draw(rt, "at"), ContextDigest: s("cd"), PolicyVersion: s("pv"), ApproverScope: s("as"),
		RunID: s("run"), WorkflowVersion: s("wv"), ActionDigest: s("act"), ArtifactDigest: s("art"), DestinationDigest: s("dd"), Visibility: s("vis"),
		Scope: s("scope"), Actor: s("actor"), ExpiresAt: rapid.Int64().Draw(rt, "exp"), Nonce: s("nonce"), Rationale: s("why"), RequestDigest: s("rd")}
	p.Batch.Batch = protocol.StableProposalBatch{Kind: s("bk"), BatchID: s("bid"), LogicalTime: rapid.Int64().Draw(rt, "blt"),
		LowWatermark: rapid.Int64().Draw(rt, "lw"), ProposalIDs: drawStrs(rt, "pids"), EligibilityVerdictIDs: drawStrs(rt, "vids"),
		BatchDigest: s("bd"), CauseID: s("bc"), DataflowVersion: s("df")}
	p.Batch.PublishedBatchDigest = s("pbd")
	if rapid.Bool().Draw(rt, "proposals") {
		p.Batch.Proposals = []protocol.EffectProposal{}
		for range rapid.IntRange(0, 2).Draw(rt, "np") {
			p.Batch.Proposals = append(p.Batch.Proposals, protocol.EffectProposal{Kind: s("k"), ProposalID: s("p"), EffectType: s("e"),
				ActionDigest: s("a"), CauseID: s("c"), CorrelationID: s("co"), ProposalDedupKey: s("dk"), DestinationDigest: s("d"),
				GoalID: s("g"), ObligationID: s("o"), DeclaredRiskHint: s("r"), Preconditions: drawStrs(rt, "pre"), Versions: drawVersions(rt)})
		}
	}
	if rapid.Bool().Draw(rt, "verdicts") {
		p.Batch.Verdicts = []protocol.EligibilityVerdict{}
		for range rapid.IntRange(0, 2).Draw(rt, "nv") {
			p.Batch.Verdicts = append(p.Batch.Verdicts, protocol.EligibilityVerdict{Kind: s("k"), VerdictID: s("v"), ProposalID: s("p"),
				Status: s("st"), SupportDerivationIDs: drawStrs(rt, "sup"), CauseID: s("c"), RuleSetVersion: s("rs")})
		}
	}
	for range rapid.IntRange(0, 2).Draw(rt, "nc") {
		p.Choices = append(p.Choices, authority.Choice{ProposalID: s("cp"), Option: s("opt"), Actor: drawActor(rt)})
	}
	if rapid.Bool().Draw(rt, "empty choices") && p.Choices == nil {
		p.Choices = []authority.Choice{}
	}
	for range rapid.IntRange(0, 2).Draw(rt, "nr") {
		p.Resumed = append(p.Resumed, authority.Resumption{ProposalID: s("rp"), Actor: drawActor(rt)})
	}
	return p
}

// The pending writer writes exactly what the state's reflection wrote for
// its pending list (appendNested), or refuses, never something else; and
// it refuses only where a string is outside the string rule or a raw
// member is not JSON, so the state's common case stays on it.
func TestPendingWriterIsNested(t *testing.T) {
	written := 0
	rapid.Check(t, func(rt *rapid.T) {
		ps := rapid.SliceOfN(rapid.Custom(drawPending), 1, 3).Draw(rt, "pending")
		if rapid.Bool().Draw(rt, "plain") {
			// Most drawn lists hold some string the writer refuses; make
			// half of them plain, so that the writing side is exercised.
			makePlain(reflect.ValueOf(ps))
		}
		want, wantOK := appendNested([]byte("prefix"), ps)
		w := pendingWriter{b: []byte("prefix"), ok: true}
		w.pendings(ps)
		if w.ok {
			written++
			if !wantOK {
				rt.Fatalf("the writer wrote\n%s\nwhere cjson refuses", w.b)
			}
			if !bytes.Equal(w.b, want) {
				rt.Fatalf("the writer wrote\n%s\ncjson writes\n%s", w.b, want)
			}
		}
		if !w.ok && wantOK && allPlain(ps) {
			rt.Fatalf("the writer refused plain pending requests cjson writes as\n%s", want)
		}
	})
	if written == 0 {
		t.Fatal("no pending list was written by the writer")
	}
}

// allPlain reports whether every string of ps passes the string rule and
// every raw member is JSON (the writer's only reasons to refuse).
func allPlain(ps []pending) bool {
	plain := true
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			plain = plain && cjson.CheckString(v.String(), "") == nil
		case reflect.Slice:
			if v.Type() == reflect.TypeFor[json.RawMessage]() {
				_, err := cjson.Decode(v.Bytes())
				plain = plain && err == nil
				return
			}
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(ps))
	return plain
}

// makePlain replaces every exported string of v with one the string rule
// passes and every raw member with a JSON object, leaving v's shape (nil
// and empty lists, lengths, numbers) as drawn.
func makePlain(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString("plain-" + strconv.Itoa(v.Len()))
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			if v.CanSet() {
				v.SetBytes([]byte(`{"a":1}`))
			}
			return
		}
		for i := range v.Len() {
			makePlain(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[mrp.Machine]() {
			return // the machine writes itself, as drawn
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				makePlain(v.Field(i))
			}
		}
	}
}
