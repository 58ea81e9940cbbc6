package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/control"
	"flrh.dev/flrh/store"
)

// genText draws strings a checkpoint may hold: plain ones, ones to
// escape, non-ASCII in NFC and not, invalid UTF-8, and any string at all.
func genText() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.SampledFrom([]string{"", "INGEST", "a\"b", `back\slash`, "tab\there", "nl\n", "\x00\x1f\x7f", "é", "e\u0301", "\xff",
			`,"state":null,"transitions":`, "sha256:" + strings.Repeat("ab", 32), "日本"}),
		rapid.String(),
		rapid.StringMatching(`[a-z_]{0,12}`),
	)
}

func genInt() *rapid.Generator[int64] {
	return rapid.OneOf(rapid.Int64(), rapid.Int64Range(-2, 2), rapid.SampledFrom([]int64{1<<63 - 1, -1 << 63}))
}

func genStrings(t *rapid.T, label string) []string {
	switch rapid.IntRange(0, 2).Draw(t, label+" form") {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	return rapid.SliceOfN(genText(), 1, 4).Draw(t, label)
}

func genUsage(t *rapid.T, label string) *Usage {
	if rapid.Bool().Draw(t, label+" nil") {
		return nil
	}
	return &Usage{Tokens: genInt().Draw(t, label+" tokens"), CostMicros: genInt().Draw(t, label+" cost")}
}

// genDoc draws a document as the checkpoint may hold it: bytes proved
// canonical (some nested at or past the limit once embedded), the value
// they decode to, bytes not proved (a json.RawMessage, canonical or
// not), or any value of the model.
func genDoc(t *rapid.T, label string) (held any, kept canonJSON) {
	text := genDocText().Draw(t, label+" text")
	switch rapid.IntRange(0, 3).Draw(t, label+" held") {
	case 0:
		if k, ok := checkedJSON(text); ok {
			return k, k
		}
	case 1:
		if v, err := canonValue(text); err == nil {
			return v, canonJSON{}
		}
	case 2:
		return json.RawMessage(text), canonJSON{}
	}
	return genJSON(3).Draw(t, label+" value"), canonJSON{}
}

// genOpen draws open effects as a checkpoint may hold them (nil, empty,
// or up to three).
func genOpen(t *rapid.T) []openEffect {
	if !rapid.Bool().Draw(t, "open") {
		return nil
	}
	open := []openEffect{}
	for range rapid.IntRange(0, 3).Draw(t, "nopen") {
		e := openEffect{IntentID: genText().Draw(t, "intent id"), Stage: genText().Draw(t, "stage"), ContentDigest: genText().Draw(t, "cd"),
			ApprovalID: genText().Draw(t, "approval id"), Usage: genUsage(t, "open usage")}
		if rapid.Bool().Draw(t, "approval") {
			e.Approval = &ApprovalNeed{RequestID: genText().Draw(t, "rid"), RequestDigest: genText().Draw(t, "rd"), IntentID: genText().Draw(t, "aid"),
				Preview: genText().Draw(t, "preview"), Quorum: rapid.IntRange(0, 3).Draw(t, "quorum")}
			if rapid.Bool().Draw(t, "approved by") {
				e.Approval.ApprovedBy = rapid.SliceOfN(genText(), 0, 2).Draw(t, "approvers")
			}
			if rapid.Bool().Draw(t, "named") {
				e.Approval.Approver = genText().Draw(t, "approver")
			}
			if rapid.Bool().Draw(t, "who") {
				e.Approval.WhoMayApprove = genText().Draw(t, "who may approve")
			}
			if rapid.Bool().Draw(t, "awaiting") {
				e.Approval.Awaiting = genText().Draw(t, "awaiting")
			}
		}
		if rapid.Bool().Draw(t, "concurring") {
			for range rapid.IntRange(0, 2).Draw(t, "nconcurring") {
				e.Concurring = append(e.Concurring, concurrence{ApprovalID: genText().Draw(t, "concurring id"), Actor: genText().Draw(t, "concurring actor")})
			}
		}
		e.Intent, e.intentBytes = genDoc(t, "intent")
		if e.intentBytes.kept() && rapid.Bool().Draw(t, "intent read") {
			e.intentObject() // Intent decoded from the kept bytes, which stay
		}
		e.Payload, _ = genDoc(t, "payload")
		open = append(open, e)
	}
	return open
}

// TestOpenDigestAndIntentsEvidenceMatchGeneric holds the open effects'
// digest (the no-progress fingerprint's) and EFFECT_AUTHORIZED's intents
// evidence, written by the checkpoint's writer, to cjson.DigestOf and
// evidenceItem of the same values.
func TestOpenDigestAndIntentsEvidenceMatchGeneric(t *testing.T) {
	// One block of texts over all draws, as a pass's: every text spelled
	// in it still reads as it did.
	var texts store.DigestTexts
	var spelled, spelledAs []string
	rapid.Check(t, func(t *rapid.T) {
		open := genOpen(t)
		got, gerr := openDigest(open)
		want, werr := cjson.DigestOf(open)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("openDigest = %s, %v; cjson.DigestOf = %s, %v", got, gerr, want, werr)
		}
		if in, err := openDigestIn(&texts, open); in != want || (err == nil) != (werr == nil) {
			t.Fatalf("openDigestIn = %s, %v; cjson.DigestOf = %s, %v", in, err, want, werr)
		} else if err == nil {
			spelled, spelledAs = append(spelled, in), append(spelledAs, strings.Clone(in))
		}
		for i := range spelled {
			if spelled[i] != spelledAs[i] {
				t.Fatalf("text %d now reads %s, spelled %s", i, spelled[i], spelledAs[i])
			}
		}
		var idx []int
		var intents []any
		for i := range open {
			if rapid.Bool().Draw(t, "authorized") {
				idx = append(idx, i)
				intents = append(intents, open[i].Intent)
			}
		}
		if len(idx) == 0 {
			return
		}
		name := rapid.SampledFrom([]string{"capability_digest", "é", `a"b`}).Draw(t, "name")
		if g, w := intentsEvidence(name, open, idx), evidenceItem(name, intents); g != w {
			t.Fatalf("intentsEvidence = %s, evidenceItem = %s", g, w)
		} else if in := intentsEvidenceIn(&texts, name, open, idx); in != w {
			t.Fatalf("intentsEvidenceIn = %s, evidenceItem = %s", in, w)
		} else {
			spelled, spelledAs = append(spelled, in), append(spelledAs, strings.Clone(in))
		}
	})
}

func genCheckpoint(t *rapid.T) *checkpoint {
	c := &checkpoint{Kind: CheckpointKind, Format: CheckpointFormat, WorkflowID: genText().Draw(t, "wf"), WorkflowDigest: genText().Draw(t, "wfd"),
		Accepted: genInt().Draw(t, "accepted"), Completion: Completion(genText().Draw(t, "completion")), Transitions: genInt().Draw(t, "transitions"),
		RoundReceipts: genInt().Draw(t, "round receipts"), RoundSteered: rapid.Bool().Draw(t, "steered")}
	if rapid.Bool().Draw(t, "other kind") {
		c.Kind, c.Format = genText().Draw(t, "kind"), genInt().Draw(t, "format")
	}
	c.Control = control.Configuration{Table: genText().Draw(t, "table"), State: genText().Draw(t, "fsm state"),
		Pending: genStrings(t, "pending"), Seq: genInt().Draw(t, "seq"), Head: genText().Draw(t, "head")}
	if rapid.Bool().Draw(t, "context") {
		c.Control.Context = rapid.MapOfN(genText(), rapid.Bool(), 0, 10).Draw(t, "context map")
	}
	if rapid.Bool().Draw(t, "rounds") {
		c.Progress.Rounds = []control.RoundVerdict{}
		for range rapid.IntRange(0, 3).Draw(t, "nrounds") {
			c.Progress.Rounds = append(c.Progress.Rounds, control.RoundVerdict{Fingerprint: genText().Draw(t, "fp"), Weighted: genInt().Draw(t, "w"),
				Unchanged: rapid.Bool().Draw(t, "unchanged"), Stalled: rapid.Bool().Draw(t, "stalled")})
		}
	}
	if rapid.Bool().Draw(t, "budget") {
		l := &budgetLedger{Contract: genText().Draw(t, "contract"), MaxTransitions: genInt().Draw(t, "maxt"), JitterSeed: genText().Draw(t, "seed"),
			Adopted: rapid.Bool().Draw(t, "adopted"), StartedMillis: genInt().Draw(t, "started"), ClockMillis: genInt().Draw(t, "clock"),
			Resting: rapid.Bool().Draw(t, "resting"), WallMillis: genInt().Draw(t, "wall"), SuspendMillis: genInt().Draw(t, "susp"),
			Steps: genInt().Draw(t, "steps"), ToolCalls: genInt().Draw(t, "calls"), Tokens: genInt().Draw(t, "tokens"),
			CostMicros: genInt().Draw(t, "cost"), MaxAttempts: rapid.SampledFrom([]int64{0, 3, -1}).Draw(t, "maxa")}
		l.Limits = control.Usage{Steps: genInt().Draw(t, "ls"), ToolCalls: genInt().Draw(t, "lc"), WallSeconds: genInt().Draw(t, "lw"),
			SuspendedSeconds: genInt().Draw(t, "lss"), Tokens: genInt().Draw(t, "lt"), CostMicros: genInt().Draw(t, "lcm"),
			RecursionDepth: genInt().Draw(t, "lr"), Parallelism: genInt().Draw(t, "lp")}
		if rapid.Bool().Draw(t, "breach") {
			l.Breach = &budgetBreach{Dimension: control.Dimension(genText().Draw(t, "dim")), Limit: genInt().Draw(t, "bl"), Used: genInt().Draw(t, "bu"),
				Requested: genInt().Draw(t, "br"), Event: genText().Draw(t, "be"), State: genText().Draw(t, "bs")}
		}
		if rapid.Bool().Draw(t, "retries") {
			l.RetriesExhausted = &attemptLedger{Intent: genText().Draw(t, "ri"), Attempts: genInt().Draw(t, "ra"), Limit: genInt().Draw(t, "rl"),
				Outcomes: genStrings(t, "outcomes")}
		}
		c.Budget = l
	}
	c.Open = genOpen(t)
	if rapid.Bool().Draw(t, "ingest") {
		c.Ingest = []pendingReceipt{}
		for range rapid.IntRange(0, 3).Draw(t, "ningest") {
			p := pendingReceipt{IntentID: genText().Draw(t, "rintent"), Digest: genText().Draw(t, "rdigest"), Usage: genUsage(t, "receipt usage")}
			p.Receipt, _ = genDoc(t, "receipt")
			c.Ingest = append(c.Ingest, p)
		}
	}
	c.setState(genJSON(2).Draw(t, "state"))
	return c
}

// TestCheckpointWriterMatchesMarshal holds the checkpoint's own writer to
// cjson.Marshal of the same checkpoint (its kept intents given as their
// bytes, as keptOpen gives them): the same bytes, or both refusing.
func TestCheckpointWriterMatchesMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCheckpoint(t)
		ref := *c
		ref.Open = keptOpen(c.Open)
		want, werr := cjson.Marshal(&ref)
		got, gerr := c.encode()
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("encode = %s, %v\ncjson.Marshal = %s, %v", got, gerr, want, werr)
		}
		state, err := c.stateEmbedded()
		if err != nil {
			return
		}
		direct, ok := c.appendCanonical(nil, state)
		if ok && !bytes.Equal(direct, want) {
			t.Fatalf("appendCanonical = %s\ncjson.Marshal = %s", direct, want)
		}
		if werr == nil && !ok && everyDocKept(c) && allPlain(c) {
			t.Fatalf("appendCanonical gave up on %s", want)
		}
	})
}

// everyDocKept reports whether every document c holds is proved bytes
// within the nesting limit: what appendCanonical must write itself.
func everyDocKept(c *checkpoint) bool {
	for _, e := range c.Open {
		ik := e.intentBytes
		if !ik.kept() {
			ik, _ = asKept(e.Intent)
		}
		pk, _ := asKept(e.Payload)
		if !ik.fitsAt(keptDepth) || !pk.fitsAt(keptDepth) {
			return false
		}
	}
	for _, p := range c.Ingest {
		if k, _ := asKept(p.Receipt); !k.fitsAt(keptDepth) {
			return false
		}
	}
	return true
}

// allPlain reports whether the context's keys need no escaping.
func allPlain(c *checkpoint) bool {
	for k := range c.Control.Context { //flrh:orderfree a test's verdict over all keys
		if !cjson.Plain(k) {
			return false
		}
	}
	return true
}

// TestAppendAtMatchesEmbedding holds appendAt to cjson's bytes for a value
// written as a member that many containers deep.
func TestAppendAtMatchesEmbedding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v, _ := genDoc(t, "v")
		depth := rapid.IntRange(1, 3).Draw(t, "depth")
		prefix := []byte(rapid.StringMatching(`[a-z]{0,5}`).Draw(t, "prefix"))
		got, ok := appendAt(slices.Clone(prefix), v, depth)
		var h any = map[string]any{"v": v}
		for range depth - 1 {
			h = map[string]any{"v": h}
		}
		whole, err := cjson.Marshal(h)
		if ok != (err == nil) {
			t.Fatalf("appendAt ok = %v, cjson.Marshal: %v", ok, err)
		}
		if !ok {
			return
		}
		want := append(slices.Clone(prefix), whole[depth*len(`{"v":`):len(whole)-depth]...)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendAt = %s, want %s", got, want)
		}
	})
}

// TestCheckpointWriterKnowsEveryMember lists the JSON members of every
// type the checkpoint's writer spells out: a member added to one of them
// must be added to the writer (and to this list).
func TestCheckpointWriterKnowsEveryMember(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{checkpoint{}, "kind format workflow_id workflow_digest control state accepted completion open ingest transitions progress round_receipts round_steered,omitempty budget,omitempty"},
		{control.Configuration{}, "table,omitempty state pending_interrupts context,omitempty seq head,omitempty"},
		{control.ProgressWindow{}, "rounds"},
		{control.RoundVerdict{}, "fingerprint weighted_gain unchanged stalled"},
		{budgetLedger{}, "contract limits max_transitions jitter_seed adopted started_millis clock_millis resting wall_millis suspended_millis steps tool_calls tokens cost_micros breach max_attempts,omitempty retries_exhausted,omitempty"},
		{control.Usage{}, "steps tool_calls wall_seconds suspended_seconds tokens cost_micros recursion_depth parallelism"},
		{budgetBreach{}, "dimension limit used requested event state"},
		{attemptLedger{}, "intent attempts limit outcomes"},
		{openEffect{}, "intent_id stage intent payload content_digest approval approval_id concurring,omitempty usage,omitempty"},
		{concurrence{}, "approval_id actor"},
		{pendingReceipt{}, "intent_id digest receipt usage,omitempty"},
		{ApprovalNeed{}, "request_id request_digest intent_id preview quorum,omitempty approved_by,omitempty approver,omitempty who_may_approve,omitempty awaiting,omitempty"},
		{Usage{}, "tokens cost_micros"},
	} {
		rt := reflect.TypeOf(tc.v)
		var got []string
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.IsExported() {
				got = append(got, f.Tag.Get("json"))
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s members: %s\nthe checkpoint's writer knows: %s", rt, strings.Join(got, " "), tc.want)
		}
	}
}

// TestCanonJSONPrintsAsRawMessage: evidence that cjson refuses is
// digested from its printed form, which holding an intent as canonJSON
// rather than a json.RawMessage must not change.
func TestCanonJSONPrintsAsRawMessage(t *testing.T) {
	k, ok := checkedJSON([]byte(`{"a":[1,"x"]}`))
	if !ok {
		t.Fatal("not kept")
	}
	if got, want := fmt.Sprint([]any{k}), fmt.Sprint([]any{json.RawMessage(k.b)}); got != want {
		t.Fatalf("printed %s, a json.RawMessage prints %s", got, want)
	}
}
