package tripwire

import "fmt"

// checkApprovals: every grant consumed is consumed exactly once, by one
// intent of this run, in the same transaction that commits the intent; an
// intent that rests on a grant names it and has it consumed. Other grants
// an intent consumes (a quorum's) concur: each marked so, with the intent
// resting on a grant of its own.
func checkApprovals(s *Set, b *Boundary, f *finder) {
	if b.Phase == PhaseCommit {
		byApproval, byIntent := map[string]int{}, map[string]int{}
		for i, a := range b.Approvals {
			where := at{"/approvals", i}
			if j, dup := byApproval[a.ApprovalID]; dup {
				f.tripAt(where, "", fmt.Sprintf("grant %s consumed twice in one tick (approvals/%d)", a.ApprovalID, j), evidenceDigest("approval", a.ApprovalID))
			}
			byApproval[a.ApprovalID] = i
			if !a.Concurs {
				if j, dup := byIntent[a.IntentID]; dup {
					f.tripAt(where, "", fmt.Sprintf("intent %s consumes two grants (approvals/%d)", a.IntentID, j), evidenceDigest("intent", a.IntentID))
				}
				byIntent[a.IntentID] = i
			}
			if a.GrantRunID != "" && a.GrantRunID != b.RunID {
				f.tripAt(where, "/grant_run_id", fmt.Sprintf("grant %s belongs to run %s, not %s", a.ApprovalID, a.GrantRunID, b.RunID), evidenceDigest("approval", a))
			}
			if a.GrantStatus != "" && a.GrantStatus != "granted" {
				f.tripAt(where, "/grant_status", fmt.Sprintf("grant %s is %s, not granted", a.ApprovalID, a.GrantStatus), evidenceDigest("approval", a))
			}
			k := -1
			for j, in := range b.Intents {
				if in.ID == a.IntentID {
					k = j
				}
			}
			switch {
			case k < 0:
				f.tripAt(where, "", fmt.Sprintf("grant %s consumed for %s, which this tick does not commit", a.ApprovalID, a.IntentID), evidenceDigest("approval", a))
			case a.Concurs && (b.Intents[k].ApprovalID == "" || b.Intents[k].ApprovalID == a.ApprovalID):
				f.tripAt(where, "", fmt.Sprintf("grant %s concurs for %s, which rests on %q", a.ApprovalID, a.IntentID, b.Intents[k].ApprovalID), evidenceDigest("approval", a), b.Intents[k].Digest)
			case a.Concurs:
			case b.Intents[k].ApprovalID != a.ApprovalID:
				f.tripAt(where, "", fmt.Sprintf("grant %s consumed for %s, which rests on %q", a.ApprovalID, a.IntentID, b.Intents[k].ApprovalID), evidenceDigest("approval", a), b.Intents[k].Digest)
			}
		}
		for i, in := range b.Intents {
			if in.ApprovalID == "" {
				continue
			}
			if j, ok := byIntent[in.ID]; !ok || b.Approvals[j].ApprovalID != in.ApprovalID {
				f.trip(ptr("/intents", i), fmt.Sprintf("intent %s rests on grant %s, which this tick does not consume", in.ID, in.ApprovalID), in.Digest)
			}
		}
	}
	l := b.Ledger
	if l == nil {
		return
	}
	grants := map[string]int{}
	for i, a := range l.Approvals {
		grants[a.ID] = i
		where := at{"/ledger/approvals", i}
		if a.RunID != b.RunID {
			f.tripAt(where, "", fmt.Sprintf("grant %s of run %s is in this run's ledger", a.ID, a.RunID), evidenceDigest("approval", a))
		}
		users, consumer := 0, false
		for _, in := range l.Intents {
			if in.ApprovalID == a.ID {
				users++
			}
			// A grant that concurs is consumed by an intent of the run
			// resting on another grant.
			consumer = consumer || in.ID == a.ConsumedBy && in.ApprovalID != ""
		}
		switch {
		case users > 1:
			f.tripAt(where, "", fmt.Sprintf("grant %s rests under %d intents", a.ID, users), evidenceDigest("approval", a))
		case a.Status == "consumed" && users == 0 && !consumer:
			f.tripAt(where, "", fmt.Sprintf("grant %s is consumed by %s, which is not an intent of this run", a.ID, a.ConsumedBy), evidenceDigest("approval", a))
		case users == 1 && a.Status != "consumed":
			f.tripAt(where, "", fmt.Sprintf("an intent rests on grant %s, which is %s, not consumed", a.ID, a.Status), evidenceDigest("approval", a))
		}
	}
	for i, in := range l.Intents {
		if in.ApprovalID == "" {
			continue
		}
		j, ok := grants[in.ApprovalID]
		if !ok {
			f.trip(ptr("/ledger/intents", i), fmt.Sprintf("intent %s rests on grant %s, which the ledger does not hold", in.ID, in.ApprovalID), evidenceDigest("intent", in))
		} else if l.Approvals[j].ConsumedBy != in.ID {
			f.trip(ptr("/ledger/intents", i), fmt.Sprintf("intent %s rests on grant %s, consumed by %q", in.ID, in.ApprovalID, l.Approvals[j].ConsumedBy), evidenceDigest("intent", in))
		}
	}
}
