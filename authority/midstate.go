package authority

import "flrh.dev/flrh/cjson"

// The usual openings of the preimages whose first blocks are the same
// for every decision of a kind: a control event's members before its
// payload's first name (its type's actor role and capability, the
// contract version and kind), the policy-verdict evidence's up to the
// authority digest (an assessed risk and the decision "allow", which is
// the only decision such evidence is written for), an input's up to its
// kind (an effect sequence of one digit), and a stable batch's
// up to its dataflow version (R's "dataflow/0"). A preimage that opens
// otherwise is hashed whole.
var (
	eventMidstates = func() map[string]*cjson.Midstate {
		m := make(map[string]*cjson.Midstate, len(eventAuthority))
		for _, e := range []string{EventEffectAuthorized, EventApprovalRequired, EventApprovalGranted} {
			auth := eventAuthority[e]
			m[e] = cjson.NewMidstate(`{"actor_role":"` + auth[0] + `","capability":"` + auth[1] +
				`","contract_version":"` + ContractVersion + `","kind":"M4AControlEventPreimage","payload":{"`)
		}
		return m
	}()
	effectAuthorizedMidstate = eventMidstates[EventEffectAuthorized]

	verdictMidstates = [...]*cjson.Midstate{
		verdictOpening(RiskReadOnly), verdictOpening(RiskReversible), verdictOpening(RiskHighRiskExternal),
	}

	// An input preimage's first block ends four bytes into its kind
	// member when the effect sequence has one digit: the first ten
	// effects of every run.
	inputMidstates = func() (ms [10]*cjson.Midstate) {
		for i := range ms {
			ms[i] = cjson.NewMidstate(`{"contract_version":"` + ContractVersion + `","effect_sequence":` + string(rune('0'+i)) + `,"kind":"AuthorizeInputPreimage","now":`)
		}
		return ms
	}()

	stableBatchMidstate = cjson.NewMidstate(`{"contract_version":"` + reactiveContract +
		`","dataflow_version":"dataflow/0","kind":"M3StableBatchPreimage","logical_time":`)
)

func verdictOpening(risk string) *cjson.Midstate {
	return cjson.NewMidstate(`{"assessed_risk":"` + risk + `","authority_decision":"allow","authority_digest":"sha256:`)
}

// eventMidstate is the midstate for a control event of type event, or
// nil for a type without one.
func eventMidstate(event string) *cjson.Midstate {
	if event == EventEffectAuthorized {
		return effectAuthorizedMidstate
	}
	return eventMidstates[event]
}

// verdictMidstate is the midstate for policy-verdict evidence of the
// assessed risk, or nil for another risk.
func verdictMidstate(risk string) *cjson.Midstate {
	switch risk {
	case RiskReadOnly:
		return verdictMidstates[0]
	case RiskReversible:
		return verdictMidstates[1]
	case RiskHighRiskExternal:
		return verdictMidstates[2]
	}
	return nil
}

// snapshotOpenings keeps the midstates of the authority snapshots'
// openings, which are not known before the first decision under them:
// the first blocks hold the adapter's version, the assessed risk, the
// policy's version and the capability's id (three of its eight blocks for
// the usual ids), the same for every decision under one capability for
// one adapter, risk and policy version. It is process-wide, as
// cjson.Prefix's kept blocks are (decision 0511), and not a member of the
// policy or the capability, which a decision must leave as it found them.
var snapshotOpenings cjson.Openings

// actionOpenings keeps the midstates of action digests' openings: an
// action and its destination, the same for every decision of one action
// (one block of about four for the usual names). Process-wide, as
// snapshotOpenings is, and apart from it, so that neither evicts the
// other's openings.
var actionOpenings cjson.Openings
