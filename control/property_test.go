package control

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"flrh.dev/flrh/cjson"
)

// oracle is an independent, deliberately naive model of the run FSM built
// only from the reference facts transcribed in table_test.go. It tracks the
// pending interrupts the same way the machine does (deferral states keep
// them; honoring needs the interrupt pending; resuming needs none pending).
type oracle struct {
	state   string
	pending []string
}

type oracleOut struct {
	accepted bool
	effects  []string
}

func (o *oracle) step(e Event, ctx map[string]bool) oracleOut {
	reject := oracleOut{false, []string{audit}}
	pair, known := refAuthority[e.Type]
	if !known || e.EventID == "" || strings.ToLower(e.ActorRole) != e.ActorRole {
		return reject
	}
	if pair != [2]string{e.ActorRole, e.Capability} {
		return reject
	}
	if _, final := refFinal[o.state]; final {
		return reject
	}
	if to, ok := refInterrupts[e.Type]; ok {
		if slices.Contains(refDeferred, o.state) {
			if !slices.Contains(o.pending, e.Type) {
				o.pending = append(o.pending, e.Type)
				slices.Sort(o.pending)
			}
			return oracleOut{true, []string{pending}}
		}
		o.state, o.pending = to, nil
		return oracleOut{true, []string{persist}}
	}
	for _, t := range refTransitions {
		if t[1] != o.state || t[2] != e.Type {
			continue
		}
		if strings.HasPrefix(e.Type, "PENDING_") {
			irq := strings.TrimPrefix(e.Type, "PENDING_")
			if !slices.Contains(o.pending, irq) {
				return reject
			}
			o.pending = slices.DeleteFunc(o.pending, func(p string) bool { return p == irq })
		}
		if e.Type == "NO_PENDING_INTERRUPT" && len(o.pending) > 0 {
			return reject
		}
		if g := t[4]; g != "" {
			for _, f := range refGuardReads[g] {
				if !ctx[f] {
					return reject
				}
			}
		}
		o.state = t[3]
		return oracleOut{true, []string{persist}}
	}
	return reject
}

var allEvents = func() []string {
	var out []string
	for _, e := range Default().Events() {
		out = append(out, e.ID)
	}
	return out
}()

var contextFields = []string{"approval_matches", "frontier_passed", "independent_receipt_closed", "intent_durable", "no_unknown_effects"}

// validFrom lists the events that could move the machine from state s.
func validFrom(s string) []string {
	var out []string
	for _, t := range refTransitions {
		if t[1] == s {
			out = append(out, t[2])
		}
	}
	return out
}

// drawEvent draws an event that is usually well-formed and authorized and
// often relevant to the current state, sometimes from a model or with a
// stolen or made-up authority pair.
func drawEvent(t *rapid.T, state string, i int) (Event, bool) {
	// rapid favours small draws, so 0 is the common, well-behaved choice.
	var typ string
	switch g := rapid.IntRange(0, 9).Draw(t, "kind"); {
	case g <= 6 && len(validFrom(state)) > 0:
		typ = rapid.SampledFrom(validFrom(state)).Draw(t, "type")
	case g == 7:
		typ = rapid.SampledFrom([]string{"CANCEL", "TIMEOUT", "BUDGET_EXHAUSTED"}).Draw(t, "interrupt")
	default:
		typ = rapid.SampledFrom(append(slices.Clone(allEvents), "LAUNCH")).Draw(t, "type")
	}
	e := Event{Type: typ, EventID: "e:" + itoa(i), Payload: map[string]any{}}
	pair, known := refAuthority[typ]
	legit := known
	switch rapid.IntRange(0, 12).Draw(t, "authority") {
	case 12: // a model speaks with the right capability
		e.ActorRole, e.Capability = "model", pair[1]
		legit = false
	case 11: // another event's authority pair
		other := refAuthority[rapid.SampledFrom(allEvents).Draw(t, "other")]
		e.ActorRole, e.Capability = other[0], other[1]
		legit = known && other == pair
	case 10: // a made-up pair
		e.ActorRole = rapid.StringMatching(`[a-z][a-z_]{0,8}`).Draw(t, "role")
		e.Capability = rapid.StringMatching(`[a-z][a-z.]{0,8}`).Draw(t, "cap")
		legit = known && [2]string{e.ActorRole, e.Capability} == pair
	default:
		e.ActorRole, e.Capability = pair[0], pair[1]
		if !known {
			e.ActorRole, e.Capability = "runner", "control.start"
		}
	}
	return e, legit
}

// TestPropertySafety runs random event sequences through the machine and
// checks, at every step, agreement with the oracle and the five safety
// properties of the run FSM.
func TestPropertySafety(t *testing.T) {
	m := Default()
	reached := map[string]bool{}
	rapid.Check(t, func(t *rapid.T) {
		c := m.Initial()
		o := &oracle{state: c.State}
		awaitingReingest := false // a receipt was confirmed; INGEST not yet re-entered
		unknownOpen := false      // an effect outcome is unknown and not yet confirmed
		n := rapid.IntRange(20, 80).Draw(t, "steps")
		for i := 0; i < n; i++ {
			e, legit := drawEvent(t, c.State, i)
			ctx := map[string]bool{}
			for _, f := range contextFields {
				if rapid.IntRange(0, 5).Draw(t, f) < 5 {
					ctx[f] = true
				}
			}
			c.Context = ctx
			before := c
			r := m.Step(c, e)
			want := o.step(e, ctx)

			// Differential: the machine and the oracle agree exactly.
			if r.Accepted() != want.accepted || !slices.Equal(r.EffectNames(), want.effects) || r.Next.State != o.state {
				t.Fatalf("step %d %s/%s/%s in %s: machine -> %s %v (accepted %v), oracle -> %s %v (accepted %v)",
					i, e.Type, e.ActorRole, e.Capability, before.State, r.Next.State, r.EffectNames(), r.Accepted(), o.state, want.effects, want.accepted)
			}
			if !slices.Equal(r.Next.Pending, o.pending) && !(len(r.Next.Pending) == 0 && len(o.pending) == 0) {
				t.Fatalf("pending %v, oracle %v", r.Next.Pending, o.pending)
			}

			if !r.Accepted() {
				// Reject-and-audit: nothing changes, one audit effect.
				if !reflect.DeepEqual(r.Next, before) || len(r.Effects) != 1 || r.Effects[0].Kind != KindAudit {
					t.Fatalf("rejection changed state or emitted %v", r.EffectNames())
				}
			} else if r.Next.Seq != before.Seq+1 {
				t.Fatalf("accepted event moved seq %d -> %d", before.Seq, r.Next.Seq)
			}

			// authority-is-external.
			if !legit && r.Accepted() {
				t.Fatalf("event %s from (%s, %s) moved the machine", e.Type, e.ActorRole, e.Capability)
			}
			if e.ActorRole == "model" && (r.Accepted() || r.Rejection.Reason != ReasonAuthority && r.Rejection.Reason != ReasonSchema) {
				t.Fatalf("model event not refused for authority: %+v", r.Rejection)
			}

			entered := r.Next.State != before.State
			// effect-intent-first.
			if entered && r.Next.State == StateExecute {
				if before.State != StateCommitIntent || e.Type != "INTENT_COMMITTED" || !ctx["intent_durable"] {
					t.Fatalf("EXECUTE entered from %s on %s with intent_durable=%v", before.State, e.Type, ctx["intent_durable"])
				}
			}
			// verified-success-only.
			if entered && r.Next.State == StateSucceeded {
				if before.State != StateVerifyCompletion || !ctx["independent_receipt_closed"] || !ctx["no_unknown_effects"] {
					t.Fatalf("SUCCEEDED entered from %s with closure %v", before.State, ctx)
				}
			}
			// unknown-is-not-success.
			if entered && r.Next.State == StateHumanReconcile {
				unknownOpen = true
			}
			if r.Accepted() && e.Type == EventHumanConfirmed {
				unknownOpen = false
			}
			if unknownOpen && r.Next.State == StateSucceeded {
				t.Fatal("an unknown effect outcome reached SUCCEEDED")
			}
			if before.State == StateOutcomeUnknown && entered {
				t.Fatal("EFFECT_OUTCOME_UNKNOWN was left")
			}
			// receipt-reingestion.
			if r.Accepted() && (e.Type == EventEffectConfirmed || e.Type == EventHumanConfirmed) {
				if r.Next.State != StateHonorInterrupt {
					t.Fatalf("confirmed receipt went to %s", r.Next.State)
				}
				awaitingReingest = true
			}
			if entered && r.Next.State == StateIngest {
				awaitingReingest = false
			}
			if awaitingReingest && entered && r.Next.State == StateVerifyCompletion {
				t.Fatal("completion verification reached before the receipt was re-ingested")
			}

			// Pending interrupts live only inside the deferral region.
			if len(r.Next.Pending) > 0 && !slices.Contains(refDeferred, r.Next.State) && !m.Final(r.Next.State) {
				t.Fatalf("pending %v outside the deferral states in %s", r.Next.Pending, r.Next.State)
			}
			// Final states absorb.
			if m.Final(before.State) && r.Accepted() {
				t.Fatalf("event accepted in final state %s", before.State)
			}
			reached[r.Next.State] = true
			c = r.Next
		}
	})
	// The generator must explore the machine, or the properties above hold
	// vacuously. (Exhaustive coverage is TestExhaustiveSafety's job.)
	if len(reached) < 8 {
		t.Errorf("random runs reached only %d states", len(reached))
	}
}

// product is a node of the exhaustive exploration: the machine's
// configuration plus the history flags the path properties need.
type product struct {
	c                Configuration
	awaitingReingest bool
	unknownOpen      bool
}

func (p product) key() string {
	return p.c.State + "|" + strings.Join(p.c.Pending, ",") + "|" + boolStr(p.awaitingReingest) + boolStr(p.unknownOpen)
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// TestExhaustiveSafety explores every reachable (state, pending interrupts,
// history) node under every event type, every authority variant (the
// table's pair, a model, another event's pair) and all 32 guard contexts,
// checking the oracle and the five safety properties on every edge. The
// reachable space is small, so this is a complete model check of the
// reduced machine rather than a sample.
func TestExhaustiveSafety(t *testing.T) {
	m := Default()
	start := product{c: m.Initial()}
	seen := map[string]bool{start.key(): true}
	queue := []product{start}
	reached := map[string]bool{}
	edges := 0
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		reached[p.c.State] = true
		checkAwaiting(t, m, p.c)
		for _, typ := range append(slices.Clone(allEvents), "LAUNCH") {
			pair := refAuthority[typ]
			for variant, auth := range [][2]string{pair, {"model", pair[1]}, refAuthority["START"]} {
				legit := variant == 0 || (variant == 2 && typ == "START")
				if typ == "LAUNCH" {
					auth, legit = [2]string{"runner", "control.start"}, false
				}
				for mask := 0; mask < 1<<len(contextFields); mask++ {
					ctx := map[string]bool{}
					for i, f := range contextFields {
						if mask&(1<<i) != 0 {
							ctx[f] = true
						}
					}
					c := p.c
					c.Context = ctx
					e := Event{Type: typ, ActorRole: auth[0], Capability: auth[1], EventID: "x:1"}
					r := m.Step(c, e)
					edges++
					o := &oracle{state: p.c.State, pending: slices.Clone(p.c.Pending)}
					want := o.step(e, ctx)
					if r.Accepted() != want.accepted || r.Next.State != o.state || !slices.Equal(r.EffectNames(), want.effects) {
						t.Fatalf("%s on %s/%s ctx %v: machine %s %v, oracle %s %v", p.c.State, typ, auth[0], ctx, r.Next.State, r.EffectNames(), o.state, want.effects)
					}
					if !legit && r.Accepted() {
						t.Fatalf("authority-is-external: %s from (%s, %s) accepted in %s", typ, auth[0], auth[1], p.c.State)
					}
					if !r.Accepted() {
						if !reflect.DeepEqual(r.Next, c) {
							t.Fatalf("rejection changed the configuration in %s on %s", p.c.State, typ)
						}
						continue
					}
					entered := r.Next.State != p.c.State
					if entered && r.Next.State == StateExecute && (p.c.State != StateCommitIntent || !ctx["intent_durable"]) {
						t.Fatalf("effect-intent-first: EXECUTE from %s, intent_durable=%v", p.c.State, ctx["intent_durable"])
					}
					if entered && r.Next.State == StateSucceeded && (p.c.State != StateVerifyCompletion || !ctx["independent_receipt_closed"] || !ctx["no_unknown_effects"]) {
						t.Fatalf("verified-success-only: SUCCEEDED from %s with %v", p.c.State, ctx)
					}
					n := product{c: r.Next, awaitingReingest: p.awaitingReingest, unknownOpen: p.unknownOpen}
					n.c.Context = nil
					if entered && r.Next.State == StateHumanReconcile {
						n.unknownOpen = true
					}
					if typ == EventHumanConfirmed {
						n.unknownOpen = false
					}
					if n.unknownOpen && r.Next.State == StateSucceeded {
						t.Fatal("unknown-is-not-success: an unknown outcome reached SUCCEEDED")
					}
					if p.c.State == StateOutcomeUnknown {
						t.Fatal("unknown-is-not-success: EFFECT_OUTCOME_UNKNOWN accepted an event")
					}
					if typ == EventEffectConfirmed || typ == EventHumanConfirmed {
						n.awaitingReingest = true
					}
					if entered && r.Next.State == StateIngest {
						n.awaitingReingest = false
					}
					if n.awaitingReingest && entered && r.Next.State == StateVerifyCompletion {
						t.Fatal("receipt-reingestion: completion verification before re-ingestion")
					}
					if k := n.key(); !seen[k] {
						seen[k] = true
						queue = append(queue, n)
					}
				}
			}
		}
	}
	for _, s := range m.States() {
		if !reached[s.ID] {
			t.Errorf("exploration never reached %s", s.ID)
		}
	}
	t.Logf("explored %d nodes, %d edges", len(seen), edges)
}

// TestPropertyRecordEncoding holds the hand-written record encoder to
// cjson.Marshal, byte for byte, over records with arbitrary ASCII content.
func TestPropertyRecordEncoding(t *testing.T) {
	ascii := rapid.StringMatching(`[ -~]{0,12}`)
	optional := func(t *rapid.T, label string) string {
		if rapid.Bool().Draw(t, label+"?") {
			return ""
		}
		return ascii.Draw(t, label)
	}
	list := func(t *rapid.T, label string) []string {
		switch rapid.IntRange(0, 2).Draw(t, label+"#") {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return rapid.SliceOfN(ascii, 1, 4).Draw(t, label)
	}
	rapid.Check(t, func(t *rapid.T) {
		r := Record{
			Format: ascii.Draw(t, "format"), Table: ascii.Draw(t, "table"), Seq: rapid.Int64().Draw(t, "seq"),
			Prev: optional(t, "prev"), Accepted: rapid.Bool().Draw(t, "accepted"), Reason: Reason(optional(t, "reason")),
			Pointer: optional(t, "pointer"), Detail: optional(t, "detail"), EventID: ascii.Draw(t, "id"),
			Event: ascii.Draw(t, "event"), ActorRole: ascii.Draw(t, "role"), Capability: ascii.Draw(t, "cap"),
			From: ascii.Draw(t, "from"), To: ascii.Draw(t, "to"), Transition: optional(t, "transition"),
			Guard: optional(t, "guard"), EvidenceRequired: list(t, "required"),
			Pending: list(t, "pending"), Effects: list(t, "effects"),
		}
		if rapid.Bool().Draw(t, "inputs") {
			r.GuardInputs = rapid.MapOf(ascii, rapid.Bool()).Draw(t, "guard_inputs")
		}
		if rapid.Bool().Draw(t, "evidence") {
			r.Evidence = rapid.MapOf(ascii, ascii).Draw(t, "evidence_map")
		}
		want, err := cjson.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRecord(nil, &r); string(got) != string(want) {
			t.Fatalf("hand encoder:\n%s\ncjson:\n%s", got, want)
		}
	})
}

// checkAwaiting: Awaiting(c) lists exactly the events the table's own
// authority can get accepted from c when every guard holds, each leading
// where Step leads.
func checkAwaiting(t *testing.T, m *Machine, c Configuration) {
	t.Helper()
	listed := map[string]Awaited{}
	for _, a := range m.Awaiting(c) {
		listed[a.Event] = a
	}
	all := map[string]bool{}
	for _, f := range contextFields {
		all[f] = true
	}
	for _, typ := range allEvents {
		pair := refAuthority[typ]
		cc := c
		cc.Context = all
		r := m.Step(cc, Event{Type: typ, ActorRole: pair[0], Capability: pair[1], EventID: "w:1"})
		a, ok := listed[typ]
		if r.Accepted() != ok {
			t.Fatalf("in %s %v: %s accepted=%v but listed=%v", c.State, c.Pending, typ, r.Accepted(), ok)
		}
		if ok && (a.To != r.Next.State || a.Transition != r.Record.Transition || a.Authority[0] != (AuthorityPair{pair[0], pair[1]})) {
			t.Fatalf("in %s: awaited %+v, step gave %s via %s", c.State, a, r.Next.State, r.Record.Transition)
		}
	}
}

// AppendCanonical agrees with cjson.Marshal for accepted and refused
// records alike.
func TestRecordAppendCanonical(t *testing.T) {
	m := Default()
	c := m.Initial()
	for _, ev := range []Event{
		{Type: "START", ActorRole: "runner", Capability: "control.start", EventID: "e:1", Payload: map[string]any{}},
		{Type: "START", ActorRole: "model", Capability: "control.start", EventID: "e:2", Payload: map[string]any{}},
	} {
		res := m.Step(c, ev)
		got, err := res.Record.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cjson.Marshal(res.Record)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("accepted=%v\n got %s\nwant %s", res.Record.Accepted, got, want)
		}
		c = res.Next
	}
}

// StepAppend steps exactly as Step does, and the bytes it appends are the
// record's AppendCanonical bytes; an accepted record's digest is the next
// configuration's Head. Random event sequences (accepted, refused,
// interrupts, evidence present or not) run through both from the same
// configurations, StepAppend's bytes appended after a prefix it must keep.
func TestPropertyStepAppendIsStep(t *testing.T) {
	m := Default()
	rapid.Check(t, func(t *rapid.T) {
		c := m.Initial()
		prefix := []byte(rapid.StringMatching(`[a-z]{0,40}`).Draw(t, "prefix"))
		n := rapid.IntRange(5, 60).Draw(t, "steps")
		for i := 0; i < n; i++ {
			e, _ := drawEvent(t, c.State, i)
			if rapid.Bool().Draw(t, "with_evidence") {
				ev := map[string]any{}
				for _, name := range rapid.SliceOfN(rapid.SampledFrom([]string{"a", "cursor", "attempt_id", "policy_verdict", "x_y"}), 0, 4).Draw(t, "names") {
					ev[name] = "sha256:" + strings.Repeat(rapid.SampledFrom([]string{"0", "a", "f"}).Draw(t, "hex"), 64)
				}
				e.Payload = map[string]any{"evidence": ev}
			}
			ctx := map[string]bool{}
			for _, f := range contextFields {
				if rapid.IntRange(0, 5).Draw(t, f) < 5 {
					ctx[f] = true
				}
			}
			c.Context = ctx
			want := m.Step(c, e)
			got, b, err := m.StepAppend(slices.Clone(prefix), c, e)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d %s: StepAppend\n%+v\nStep\n%+v", i, e.Type, got, want)
			}
			wantBytes, err := want.Record.AppendCanonical(slices.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(wantBytes) {
				t.Fatalf("step %d %s: StepAppend wrote\n%s\nAppendCanonical\n%s", i, e.Type, b, wantBytes)
			}
			if !got.Accepted() && len(ctx) > 0 {
				// The refused result holds the context, not the caller's map.
				for f := range ctx {
					ctx[f] = !ctx[f]
				}
				if reflect.DeepEqual(got.Next.Context, ctx) || !reflect.DeepEqual(got.Next.Context, want.Next.Context) {
					t.Fatalf("step %d: the refused configuration's context follows the caller's map", i)
				}
			}
			if got.Accepted() {
				d, err := cjson.DigestOf(want.Record)
				if err != nil {
					t.Fatal(err)
				}
				if sum := sha256.Sum256(b[len(prefix):]); got.Next.Head != d || d != "sha256:"+hex.EncodeToString(sum[:]) {
					t.Fatalf("step %d: head %s, record digest %s", i, got.Next.Head, d)
				}
				c = got.Next
			}
		}
	})
}

// StepEvidence is StepAppend with its evidence given by name: over random
// event sequences on the strict and the lenient machine, with evidence
// exactly the transition's, some of it, more, or with digests that are not
// digests, the result and the bytes are StepAppend's with that evidence as
// payload.evidence, an accepted step's effects left out.
func TestPropertyStepEvidenceIsStepAppend(t *testing.T) {
	lenient := Default()
	strict := lenient.WithStrictEvidence()
	var names []string
	for _, tr := range lenient.transitions {
		for _, n := range tr.Evidence {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	names = append(names, "not_required")
	digest := rapid.Custom(func(t *rapid.T) string {
		if rapid.IntRange(0, 9).Draw(t, "valid") == 9 {
			return rapid.SampledFrom([]string{"", "sha256:00", "md5:" + strings.Repeat("a", 64)}).Draw(t, "bad")
		}
		return "sha256:" + strings.Repeat(rapid.SampledFrom([]string{"0", "7", "e"}).Draw(t, "hex"), 64)
	})
	rapid.Check(t, func(t *rapid.T) {
		m := lenient
		if rapid.Bool().Draw(t, "strict") {
			m = strict
		}
		c := m.Initial()
		n := rapid.IntRange(5, 60).Draw(t, "steps")
		for i := 0; i < n; i++ {
			e, _ := drawEvent(t, c.State, i)
			evd := map[string]string{}
			if ti, ok := m.byEdge[edge{c.State, e.Type}]; ok && rapid.IntRange(0, 3).Draw(t, "exact") > 0 {
				for _, name := range m.transitions[ti].Evidence {
					evd[name] = digest.Draw(t, "digest")
				}
			}
			for _, name := range rapid.SliceOfN(rapid.SampledFrom(names), 0, 3).Draw(t, "more") {
				evd[name] = digest.Draw(t, "digest")
			}
			for _, name := range rapid.SliceOfN(rapid.SampledFrom(names), 0, 2).Draw(t, "less") {
				delete(evd, name)
			}
			ctx := map[string]bool{}
			for _, f := range contextFields {
				if rapid.IntRange(0, 5).Draw(t, f) < 5 {
					ctx[f] = true
				}
			}
			c.Context = ctx
			payload := map[string]any{}
			for k, v := range evd {
				payload[k] = v
			}
			pe := e
			pe.Payload = map[string]any{"evidence": payload}
			want, wantBytes, werr := m.StepAppend([]byte("x"), c, pe)
			e.Payload = map[string]any{"evidence": map[string]any{}} // not read
			got, b, err := m.StepEvidence([]byte("x"), c, e, evd)
			if err != nil || werr != nil {
				t.Fatal(err, werr)
			}
			if got.Accepted() {
				// An accepted step's effects are left out; their names are
				// the record's.
				if got.Effects != nil || !slices.Equal(want.EffectNames(), got.Record.Effects) {
					t.Fatalf("step %d %s: effects %v, record's %v, StepAppend's %v", i, e.Type, got.Effects, got.Record.Effects, want.EffectNames())
				}
				want.Effects = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d %s: StepEvidence\n%+v\nStepAppend\n%+v", i, e.Type, got, want)
			}
			if string(b) != string(wantBytes) {
				t.Fatalf("step %d %s: StepEvidence wrote\n%s\nStepAppend\n%s", i, e.Type, b, wantBytes)
			}
			// StepEvidenceDigested is StepEvidence, its digester handed
			// an accepted record's bytes (those it appended, where it
			// appended them) once, a refused one's never.
			var d recordingDigester
			dgot, db, err := m.StepEvidenceDigested([]byte("x"), c, e, evd, &d)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dgot, got) || string(db) != string(b) {
				t.Fatalf("step %d %s: StepEvidenceDigested\n%+v\n%s\nStepEvidence\n%+v\n%s", i, e.Type, dgot, db, got, b)
			}
			wantCalls := 0
			if got.Accepted() {
				wantCalls = 1
			}
			if d.calls != wantCalls || (wantCalls == 1 && (len(d.got) != len(db)-1 || &d.got[0] != &db[1] || cap(d.got) != len(d.got))) {
				t.Fatalf("step %d %s: the digester was called %d times, with %d bytes; want %d times, with the record's %d", i, e.Type, d.calls, len(d.got), wantCalls, len(db)-1)
			}
			if got.Accepted() {
				c = got.Next
			}
		}
	})
}

// recordingDigester takes the machine's digest and keeps what it was
// handed.
type recordingDigester struct {
	calls int
	got   []byte
}

func (d *recordingDigester) DigestRecord(canonical []byte) string {
	d.calls++
	d.got = canonical
	return recordDigest(canonical)
}

// A digester's text is the head: the machine takes it as given.
func TestStepEvidenceDigestedHeadIsTheDigesters(t *testing.T) {
	m := Default()
	c, e, evd := stableStep(m)
	r, b, err := m.StepEvidenceDigested(nil, c, e, evd, fixedDigester("sha256:"+strings.Repeat("0", 64)))
	if err != nil || !r.Accepted() {
		t.Fatal(r.Rejection, err)
	}
	if r.Next.Head != "sha256:"+strings.Repeat("0", 64) {
		t.Fatalf("head %s, not the digester's", r.Next.Head)
	}
	if r2, b2, _ := m.StepEvidence(nil, c, e, evd); r2.Next.Head != recordDigest(b2) || string(b2) != string(b) {
		t.Fatalf("StepEvidence's head %s, its record's digest %s", r2.Next.Head, recordDigest(b2))
	}
}

type fixedDigester string

func (d fixedDigester) DigestRecord([]byte) string { return string(d) }
