package authority

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"flrh.dev/flrh/cjson"
)

// The conformance corpus in testdata/m4a_conformance.json is transcribed
// from the FLR-H reference corpus (its m4a success and rejection cases,
// built on its m3 frontier-stable published batch). The commands below are
// assembled the way that corpus assembles them, so the expected projections
// must match byte for byte.

type corpus struct {
	profile   string
	published object
	expected  map[string]any
}

func loadCorpus(t testing.TB) corpus {
	t.Helper()
	raw, err := os.ReadFile("testdata/m4a_conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := cjson.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(object)
	return corpus{profile: m["r_profile_digest"].(string), published: m["published_batch"].(object), expected: m["expected"].(object)}
}

// deepCopy clones a decoded JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case object:
		out := make(object, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func redigest(m object, key string) {
	delete(m, key)
	d, r := selfDigest(m, key)
	if r != nil {
		panic(r)
	}
	m[key] = d
}

func proposalOf(pub object) object {
	return pub["effect_proposals"].([]any)[0].(object)
}

func fixtureSnapshot(pub object, risk, decision string) object {
	p := proposalOf(pub)
	s := object{
		"kind": "HAuthoritySnapshot", "authority_version": "authority/1",
		"proposal_id": p["proposal_id"], "effect_type": p["effect_type"],
		"capability": "capability:artifact.publish", "decision": decision,
		"assessed_risk": risk, "adapter_version": p["versions"].(object)["tool"],
		"destination_digest": p["destination_digest"], "valid_from": int64(0),
		"valid_until": int64(200), "revoked": false,
	}
	redigest(s, "authority_digest")
	return s
}

func fixtureContext(pub object) object {
	p := proposalOf(pub)
	c := object{
		"kind": "HApprovalContext", "policy_version": "approval-policy/1",
		"approver_scope": "scope:artifact-publishers", "requested_at": int64(100),
		"run_id": p["correlation_id"], "workflow_version": p["versions"].(object)["workflow"],
		"action_digest": p["action_digest"], "artifact_digest": "sha256:" + strings.Repeat("a", 64),
		"destination_digest": p["destination_digest"], "visibility": "visibility:external",
		"scope": "scope:artifact-publishers", "actor": "actor:fixture-approver",
		"expires_at": int64(150), "nonce": "nonce:m4a:1", "rationale": "rationale:fixture",
	}
	redigest(c, "context_digest")
	return c
}

var contextCopyKeys = append([]string{"context_digest", "policy_version", "approver_scope"}, loopBindingKeys...)

func fixtureRequest(pub, snap, ctx object) object {
	q := object{
		"kind": "HApprovalRequest", "proposal_id": proposalOf(pub)["proposal_id"],
		"capability": snap["capability"], "authority_digest": snap["authority_digest"],
		"adapter_version": snap["adapter_version"], "requested_at": ctx["requested_at"],
	}
	for _, k := range contextCopyKeys {
		q[k] = ctx[k]
	}
	redigest(q, "request_digest")
	q["request_id"] = "approval-request:" + hexOf(q["request_digest"].(string))
	return q
}

func fixtureApproval(snap, req, ctx object) object {
	a := object{
		"kind": "HApproval", "request_digest": req["request_digest"], "decision": "grant",
		"capability": snap["capability"], "authority_digest": snap["authority_digest"],
		"adapter_version": snap["adapter_version"], "issued_at": int64(110),
		"revoked": false, "consumed": false,
	}
	for _, k := range contextCopyKeys {
		a[k] = ctx[k]
	}
	redigest(a, "approval_digest")
	return a
}

func fixtureCommand(state, profile string, pub, snap, ctx, req, appr any, observed int64) object {
	c := object{
		"kind": "HProjectIntentCommand", "schema_version": CommandSchema, "contract_version": ContractVersion,
		"control_state": state, "r_profile_digest": profile, "published_batch": pub,
		"authority_snapshot": snap, "approval_context": ctx, "approval_request": req,
		"approval": appr, "observed_at": observed, "effect_sequence": int64(1),
	}
	redigest(c, "command_digest")
	return c
}

func fixtureCommands(c corpus) map[string]object {
	pub := c.published
	low := fixtureCommand(StatePlanEffects, c.profile, deepCopy(pub), fixtureSnapshot(pub, RiskReversible, "allow"), nil, nil, nil, 100)
	ctx := fixtureContext(pub)
	high := fixtureSnapshot(pub, RiskHighRiskExternal, "allow")
	req := fixtureRequest(pub, high, ctx)
	ask := fixtureCommand(StatePlanEffects, c.profile, deepCopy(pub), deepCopy(high), deepCopy(ctx), nil, nil, 100)
	granted := fixtureCommand(StateWaitApproval, c.profile, deepCopy(pub), deepCopy(high), deepCopy(ctx), deepCopy(req), fixtureApproval(high, req, ctx), 120)
	return map[string]object{"low-risk": low, "approval-request": ask, "approval-granted": granted}
}

func TestProjectIntentConformance(t *testing.T) {
	c := loadCorpus(t)
	cmds := fixtureCommands(c)
	for _, name := range []string{"low-risk", "approval-request", "approval-granted"} {
		t.Run(name, func(t *testing.T) {
			before, _ := cjson.Encode(cmds[name])
			proj, rej := ProjectIntent(cmds[name])
			if rej != nil {
				t.Fatalf("rejected: %v", rej)
			}
			got, err := cjson.Marshal(proj)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cjson.Encode(c.expected[name])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("projection differs from the reference\n got: %s\nwant: %s", got, want)
			}
			after, _ := cjson.Encode(cmds[name])
			if !bytes.Equal(before, after) {
				t.Error("ProjectIntent mutated its command")
			}
			// The JSON entry point agrees with the value entry point.
			proj2, rej2 := ProjectIntentJSON(before)
			if rej2 != nil || proj2.ProjectionDigest != proj.ProjectionDigest {
				t.Errorf("ProjectIntentJSON disagrees: %v %v", rej2, proj2)
			}
		})
	}
}

func TestProjectIntentRejections(t *testing.T) {
	c := loadCorpus(t)
	base := fixtureCommands(c)
	pubOf := func(cmd object) object { return cmd["published_batch"].(object) }
	repub := func(cmd object) {
		pub := pubOf(cmd)
		pub["published_batch_digest"] = mustDigest(object{
			"kind": "M3PublishedBatchPreimage", "contract_version": reactiveContract,
			"batch": pub["batch"], "ordered_effect_proposals": pub["effect_proposals"],
			"ordered_eligibility_verdicts": pub["eligibility_verdicts"],
		})
	}
	snapOf := func(cmd object) object { return cmd["authority_snapshot"].(object) }
	apprOf := func(cmd object) object { return cmd["approval"].(object) }
	// Transcribed from the reference's rejection cases: base case, the
	// mutation, the expected code.
	cases := []struct {
		id, base, code string
		mutate         func(object)
	}{
		{"multi-item", "low-risk", "NON_SINGLETON_BATCH", func(cmd object) {
			pub := pubOf(cmd)
			pub["effect_proposals"] = append(pub["effect_proposals"].([]any), deepCopy(proposalOf(pub)))
			vs := pub["eligibility_verdicts"].([]any)
			pub["eligibility_verdicts"] = append(vs, deepCopy(vs[0]))
			repub(cmd)
		}},
		{"ineligible", "low-risk", "PROPOSAL_INELIGIBLE", func(cmd object) {
			pubOf(cmd)["eligibility_verdicts"].([]any)[0].(object)["status"] = "ineligible"
			repub(cmd)
		}},
		{"conflicted", "low-risk", "PROPOSAL_CONFLICTED", func(cmd object) {
			pubOf(cmd)["eligibility_verdicts"].([]any)[0].(object)["status"] = "conflicted"
			repub(cmd)
		}},
		{"deny", "low-risk", "AUTHORITY_DENIED", func(cmd object) {
			snapOf(cmd)["decision"] = "deny"
			redigest(snapOf(cmd), "authority_digest")
		}},
		{"ambiguous", "low-risk", "AUTHORITY_AMBIGUOUS", func(cmd object) {
			snapOf(cmd)["decision"] = "ambiguous"
			redigest(snapOf(cmd), "authority_digest")
		}},
		{"adapter", "low-risk", "ADAPTER_VERSION_MISMATCH", func(cmd object) {
			snapOf(cmd)["adapter_version"] = "publisher/2"
			redigest(snapOf(cmd), "authority_digest")
		}},
		{"authority-expired", "low-risk", "AUTHORITY_EXPIRED", func(cmd object) {
			snapOf(cmd)["valid_until"] = cmd["observed_at"]
			redigest(snapOf(cmd), "authority_digest")
		}},
		{"request-drift", "approval-granted", "APPROVAL_REQUEST_DRIFT", func(cmd object) {
			cmd["approval_request"].(object)["nonce"] = "nonce:m4a:drift"
		}},
		{"binding-drift", "approval-granted", "APPROVAL_BINDING_MISMATCH", func(cmd object) {
			apprOf(cmd)["action_digest"] = "sha256:" + strings.Repeat("a", 64)
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"expired", "approval-granted", "APPROVAL_EXPIRED", func(cmd object) {
			apprOf(cmd)["issued_at"] = cmd["observed_at"].(int64) + 1
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"revoked", "approval-granted", "APPROVAL_REVOKED", func(cmd object) {
			apprOf(cmd)["revoked"] = true
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"consumed", "approval-granted", "APPROVAL_ALREADY_CONSUMED", func(cmd object) {
			apprOf(cmd)["consumed"] = true
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"denied", "approval-granted", "APPROVAL_DENIED", func(cmd object) {
			apprOf(cmd)["decision"] = "deny"
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"field-drift", "low-risk", "APPROVAL_FIELD_DRIFT", func(cmd object) {
			cmd["approval_context"] = fixtureContext(c.published)
		}},
		{"command-digest", "low-risk", "COMMAND_DIGEST_MISMATCH", func(cmd object) {
			cmd["effect_sequence"] = int64(2)
		}},
		{"approval-kind", "approval-granted", "MALFORMED_APPROVAL", func(cmd object) {
			apprOf(cmd)["kind"] = "NotHApproval"
			redigest(apprOf(cmd), "approval_digest")
		}},
		{"authority-version-length", "low-risk", "MALFORMED_AUTHORITY_SNAPSHOT", func(cmd object) {
			snapOf(cmd)["authority_version"] = strings.Repeat("a", 129)
			redigest(snapOf(cmd), "authority_digest")
		}},
		{"precondition-id-length", "low-risk", "MALFORMED_PROPOSAL", func(cmd object) {
			proposalOf(pubOf(cmd))["preconditions"] = []any{strings.Repeat("p", 129)}
			repub(cmd)
		}},
		{"support-id-length", "low-risk", "MALFORMED_VERDICT", func(cmd object) {
			pubOf(cmd)["eligibility_verdicts"].([]any)[0].(object)["support_derivation_ids"] = []any{strings.Repeat("s", 129)}
			repub(cmd)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			cmd := deepCopy(base[tc.base]).(object)
			tc.mutate(cmd)
			if tc.id != "command-digest" {
				redigest(cmd, "command_digest")
			}
			proj, rej := ProjectIntent(cmd)
			if rej == nil {
				t.Fatalf("accepted: %+v", proj)
			}
			if rej.Code != tc.code {
				t.Fatalf("code %s at %s, want %s", rej.Code, rej.Path, tc.code)
			}
			if !strings.HasPrefix(rej.Path, "/") {
				t.Errorf("path %q is not a JSON pointer", rej.Path)
			}
			if tc.code != "COMMAND_DIGEST_MISMATCH" && rej.CommandDigest != cmd["command_digest"] {
				t.Errorf("rejection carries command digest %q, want %q", rej.CommandDigest, cmd["command_digest"])
			}
		})
	}
}

// Every bound member of a supplied approval, changed and re-digested,
// fails closed with APPROVAL_BINDING_MISMATCH at that member.
func TestProjectIntentApprovalBindingTamper(t *testing.T) {
	c := loadCorpus(t)
	base := fixtureCommands(c)["approval-granted"]
	fields := append([]string{"request_digest", "capability", "authority_digest", "adapter_version", "context_digest", "policy_version", "approver_scope"}, loopBindingKeys...)
	for _, f := range fields {
		cmd := deepCopy(base).(object)
		a := cmd["approval"].(object)
		switch v := a[f].(type) {
		case int64:
			a[f] = v + 1
		case string:
			if strings.HasPrefix(v, "sha256:") {
				a[f] = "sha256:" + strings.Repeat("d", 64)
			} else {
				a[f] = v + "x"
			}
		}
		redigest(a, "approval_digest")
		redigest(cmd, "command_digest")
		_, r := ProjectIntent(cmd)
		if r == nil || r.Code != "APPROVAL_BINDING_MISMATCH" || r.Path != "/approval/"+f {
			t.Errorf("%s: %v", f, r)
		}
	}
}
