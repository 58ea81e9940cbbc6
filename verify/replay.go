package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/jsonread"
	"flrh.dev/flrh/panel"
	"flrh.dev/flrh/protocol"
	"flrh.dev/flrh/runner"
	"flrh.dev/flrh/store"
)

// ReplayReport is the result of replaying a run's pure steps.
type ReplayReport struct {
	RunID    string    `json:"run_id"`
	Inputs   int       `json:"inputs_replayed"`
	Effects  int       `json:"effects_replayed"`
	State    string    `json:"state_digest"` // digest of the replayed workflow state
	Findings []Finding `json:"findings"`
	// Pruned says the store no longer holds the run's record (Report.Pruned):
	// nothing was replayed.
	Pruned bool `json:"pruned,omitempty"`
}

// OK reports whether the replay reproduced the record exactly.
func (r *ReplayReport) OK() bool { return len(r.Findings) == 0 }

// Replay re-executes the workflow's pure Decide over the run's accepted
// inputs, from its initial state, and compares: every planned effect must
// be the committed intent (same id, action, key, content), and the final
// state must equal the checkpoint's byte for byte. Control records are
// re-stepped by Run; together they re-execute every pure step of the run.
func Replay(ctx context.Context, st store.Store, wf runner.Workflow, runID string) (*ReplayReport, error) {
	state, err := wf.Init(runID)
	if err != nil {
		return nil, fmt.Errorf("workflow init: %w", err)
	}
	rec, err := load(ctx, st, runID, 0)
	if err != nil {
		return nil, err
	}
	return replayRecord(ctx, rec, wf, runID, state)
}

// replayRecord replays a run read by load from the workflow's initial
// state. Its error is the store's, reading a grant the replay asks about.
func replayRecord(ctx context.Context, rec *record, wf runner.Workflow, runID string, state []byte) (*ReplayReport, error) {
	rep := &ReplayReport{RunID: runID, Findings: []Finding{}}
	fail := func(check, where, format string, args ...any) {
		rep.Findings = append(rep.Findings, Finding{Check: check, Where: where, Detail: fmt.Sprintf(format, args...)})
	}
	evs, ins := rec.events, rec.intents
	// A run's few intents are found by a scan (see fewEffects); more are
	// filed by id. plannedFew marks, intent by intent, those planned.
	few := len(ins) <= fewEffects && fewEffectsScanned
	var committed map[string]int // an intent's index in ins; nil when few
	var planned map[string]bool  // nil when few
	var plannedBuf [fewEffects]bool
	var plannedFew []bool
	if few {
		plannedFew = plannedBuf[:len(ins)]
	} else {
		committed = make(map[string]int, len(ins))
		for i, in := range ins {
			committed[in.ID] = i
		}
		planned = map[string]bool{}
	}
	// plan marks the intents with id planned and returns the last one's
	// index, as the map keeps it.
	plan := func(id string) (int, bool) {
		if !few {
			planned[id] = true
			k, ok := committed[id]
			return k, ok
		}
		last := -1
		for k := len(ins) - 1; k >= 0; k-- {
			if ins[k].ID == id {
				plannedFew[k] = true
				if last < 0 {
					last = k
				}
			}
		}
		return last, last >= 0
	}
	// canonical is whether state is vouched to be cjson's own encoding
	// (Decision.StateCanonical): then a checkpoint holding the same bytes
	// canonicalizes to them, and needs no decoding to be compared.
	canonical := false
	// Replay compares states and effects, never the trace (which is not
	// authoritative): a workflow that can decide without writing one
	// (bundle.Workflow.DecideUntraced) is asked to.
	decide := wf.Decide
	if u, ok := wf.(untracedWorkflow); ok {
		decide = u.DecideUntraced
	}
	// Who handed the run its inputs so far, where the workflow keeps them
	// from approving (runner.DutySeparator).
	ds, separated := wf.(runner.DutySeparator)
	separated = separated && ds.SeparatesDuties()
	var makers []string
	for i, e := range evs {
		if e.Kind != runner.EventAccepted {
			continue
		}
		// Named only when a check fails: most inputs pass every check.
		where := func() string { return "event " + strconv.FormatInt(e.Seq, 10) }
		in, err := rec.acceptedInput(i, e.Body)
		if err != nil && !errors.Is(err, runner.ErrInputNotCanonical) {
			fail("accepted-record", where(), "unreadable: %v", err)
			continue
		}
		if err != nil || !rec.digestMatches(in.Body, in.Digest) {
			fail("accepted-record", where(), "input bytes do not match their recorded digest")
			continue
		}
		rep.Inputs++
		if in.Kind == runner.KindInput && separated && !slices.Contains(makers, in.Actor) {
			makers = append(makers, in.Actor)
		}
		d, err := decide(state, in)
		if err != nil {
			fail("decide", where(), "the workflow failed on replay: %v", err)
			return rep, nil
		}
		if d.Refusal != "" {
			continue
		}
		state, canonical = d.State, d.StateCanonical
		for _, p := range d.Effects {
			rep.Effects++
			id := p.Intent.IntentID
			k, ok := plan(id)
			if !ok {
				continue // planned but not (yet) committed: waiting, or refused later
			}
			in := ins[k]
			// An effect a person had to approve consumed a grant for the
			// very request replay asks them about: the request's digest
			// binds the exact amount and payee they were shown.
			if p.Approval != nil && in.ApprovalID != "" {
				a, found, err := rec.grantIfAny(ctx, in.ApprovalID)
				if err != nil {
					return nil, err
				}
				if found && a.RequestDigest != p.Approval.RequestDigest {
					fail("replay-approval", "intent "+id, "consumed grant %s answers request %s; replay asks approval of %s", a.ID, a.RequestDigest, p.Approval.RequestDigest)
				}
				// Its giver may answer the request replay plans (the
				// approver or group it names); expiry is the commit's to
				// judge, at the store's clock.
				mayAnswer := func(g store.Approval) {
					if err := wf.CheckApproval(*p.Approval, g, g.ExpiresAt.Add(-time.Nanosecond)); err != nil {
						fail("replay-approval", "intent "+id, "consumed grant %s: %v", g.ID, err)
					}
				}
				if found && a.RequestDigest == p.Approval.RequestDigest {
					mayAnswer(a)
				}
				quorum := runner.QuorumOf(wf, *p.Approval)
				if separated && found || quorum > 1 {
					others, err := rec.concurringFor(ctx, runID, in)
					if err != nil {
						return nil, err
					}
					for _, g := range others {
						mayAnswer(g)
					}
					// No one who handed the run an input by then approved.
					if separated && found {
						for _, g := range append([]store.Approval{a}, others...) {
							if who := runner.GrantActor(g); slices.Contains(makers, who) {
								fail("replay-approval", "intent "+id, "grant %s was given by %q, who handed the run an input; the workflow's approval policy separates duties", g.ID, who)
							}
						}
					}
					// As many people approved as the workflow asks of the request.
					if n := 1 + len(others); n < quorum {
						fail("replay-approval", "intent "+id, "consumed %d approval(s); the workflow asks %d people's approvals of this request (its approval policy, or its gates)", n, quorum)
					}
					// And, where it names a panel, one of each of its groups
					// answered for by a different person.
					if groups := runner.PanelOf(wf, *p.Approval); groups != nil && found {
						var people []string
						for _, g := range append([]store.Approval{a}, others...) {
							if who := runner.GrantActor(g); !slices.Contains(people, who) {
								people = append(people, who)
							}
						}
						if waits := panel.Unanswered(groups, people); len(waits) > 0 {
							fail("replay-approval", "intent "+id, "the approvals consumed are %s's; the request names a panel, and they leave it short of %s", strings.Join(people, "'s, "), panel.Awaited(waits))
						}
					}
				}
			}
			// The committed intent is the planned one, except that an
			// approved intent names the grant it consumed. The digest
			// the verifier read from it, when it read one, is tried
			// first: the byte comparison decides either way.
			if k < len(rec.approvalRead) && rec.approvalRead[k].ok && sameIntentAs(p.Intent, in.Body, rec.approvalRead[k].digest) {
				continue
			}
			if sameIntent(p.Intent, in.Body) {
				continue
			}
			want, err := intentWithoutApproval(p.Intent)
			if err != nil {
				fail("replay-effect", "intent "+id, "cannot encode the replayed intent: %v", err)
				continue
			}
			got, err := intentWithoutApproval(json.RawMessage(in.Body))
			if err != nil {
				fail("replay-effect", "intent "+id, "unreadable committed intent: %v", err)
				continue
			}
			if !bytes.Equal(want, got) {
				fail("replay-effect", "intent "+id, "the replayed intent differs from the committed one at byte %d", firstDiff(want, got))
			}
		}
	}
	for k, in := range ins { // in commit order, so that reports compare
		if few && !plannedFew[k] || !few && !planned[in.ID] {
			fail("replay-effect", "intent "+in.ID, "committed, but replay never plans it")
		}
	}
	rep.State = store.BodyDigest(state)
	if !rec.hasCP {
		return rep, nil
	}
	cp := rec.cp
	// A body whose members the verifier's scan read (five of them, none
	// given twice or in another case) gives "state" as the scan for it
	// alone would; any other body is scanned for it alone, and one the
	// scan gives up on is decoded (into a variable of its own, so that
	// the common case allocates none).
	var stored json.RawMessage
	if c := rec.checkpointOf(); c.read {
		stored = c.state // what encoding/json would have copied
	} else if m, ok := jsonread.Members(cp.Body, "state"); ok {
		stored = m[0]
	} else {
		var body struct {
			State json.RawMessage `json:"state"`
		}
		if err := json.Unmarshal(cp.Body, &body); err != nil {
			fail("replay-state", "checkpoint", "unreadable: %v", err)
			return rep, nil
		}
		stored = body.State
	}
	if canonical && bytes.Equal(stored, state) {
		return rep, nil
	}
	recorded, err := cjson.Canonicalize(stored)
	if err != nil {
		fail("replay-state", "checkpoint", "state is not canonical: %v", err)
		return rep, nil
	}
	if !bytes.Equal(recorded, state) {
		fail("replay-state", "checkpoint", "replayed state differs from the checkpoint at byte %d", firstDiff(recorded, state))
	}
	return rep, nil
}

// acceptedInput decodes event i's accepted input as decodeAcceptedAs
// does, from the members the verifier read when it read them (Check): a
// record whose members it read holds no member but acceptedRecordMembers,
// so without a usage report it holds no member but acceptedMembers, read
// as OnlyMembers reads them; with one, OnlyMembers of acceptedMembers
// gives up, and so does this.
func (r *record) acceptedInput(i int, event []byte) (runner.Accepted, error) {
	if r.known == nil {
		return decodeAcceptedAs(event, false)
	}
	v := &r.known[i]
	if v.members == nil {
		return decodeAcceptedAs(event, v.canonical)
	}
	m := v.members
	return decodeAcceptedMembers(event, m[:len(acceptedMembers)], m[len(acceptedMembers)] == nil, v.canonical, &v.input)
}

// sameIntent reports whether a committed intent's bytes are exactly the
// planned intent's canonical bytes naming the grant the committed one
// names. Then clearing that digest on both sides, as the full comparison
// does, leaves them equal too; anything else is left to that comparison.
func sameIntent(planned protocol.EffectIntent, committed []byte) bool {
	d, ok := approvalDigest(committed)
	if !ok {
		return false
	}
	return sameIntentAs(planned, committed, d)
}

// sameIntentAs reports whether committed is exactly the planned intent's
// canonical bytes naming the grant digest d. It holds for any d: bytes
// equal to that encoding name d and nothing else, whoever said d.
//
// The planned intent is written by the runner's own intent writer
// (runner.AppendIntent, which writes cjson.Marshal's bytes) into a buffer
// on the stack where it can, and by cjson.Marshal otherwise
// (TestSameIntentAsWritesAsMarshal).
func sameIntentAs(planned protocol.EffectIntent, committed []byte, d *string) bool {
	planned.ApprovalDigest = d
	if intentWriter {
		var buf [2048]byte
		if b, ok := runner.AppendIntent(buf[:0], &planned); ok {
			return bytes.Equal(b, committed)
		}
	}
	b, err := cjson.Marshal(planned)
	return err == nil && bytes.Equal(b, committed)
}

// intentWriter is whether sameIntentAs writes an intent with
// runner.AppendIntent; tests turn it off to hold the two to each other.
var intentWriter = true

// intentWithoutApproval returns an intent's canonical bytes with its
// approval digest cleared.
func intentWithoutApproval(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	val, err := cjson.Decode(b)
	if err != nil {
		return nil, err
	}
	m, ok := val.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("intent is not an object")
	}
	m["approval_digest"] = nil
	return cjson.Encode(m)
}

// untracedWorkflow is a workflow that can decide without its trace: the
// same State, StateCanonical, Effects, Completion and Refusal as Decide,
// or the same error, with no Trace.
type untracedWorkflow interface {
	DecideUntraced(state []byte, in runner.Accepted) (runner.Decision, error)
}
