package kernel

import "flrh.dev/flrh/protocol"

// StepEncoded is Step for a caller that keeps a run's snapshot with its
// canonical bytes from one step to the next, as a workflow does: every
// step writes the prior snapshot's canonical bytes (to digest them) and
// the next one's, and the caller then wrote the next one's again to keep
// them. Here each snapshot is written once.
//
// sBytes is nil, or the bytes a previous StepEncoded returned with s as
// its transition's NextSnapshot (unchanged since), or those s.Encoded()
// returned as known. next is the
// transition's NextSnapshot.MarshalJSON() when the step wrote them on its
// way (nil otherwise: the caller encodes the snapshot itself); the
// transition and the error are Step's.
func StepEncoded(d Domain, s Snapshot, sBytes []byte, e protocol.AcceptedEvent) (t *Transition, next []byte, err error) {
	t, next, _, err = stepTyped(d, s, sBytes, "", e, true)
	return t, next, err
}

// StepDigested is StepEncoded for a caller that keeps the snapshot's
// digest with its bytes as well: every step digests the prior snapshot's
// bytes (its transition's PriorSnapshotDigest) and the next one's (bound
// into its transition digest), so the next snapshot's digest is the next
// step's prior digest, taken once instead of twice.
//
// sDigest is "", or the digest a previous StepDigested returned with
// sBytes; it is used only with sBytes. nextDigest is the digest of next
// ("sha256:" and the hex SHA-256 of the bytes), "" when next is nil.
func StepDigested(d Domain, s Snapshot, sBytes []byte, sDigest string, e protocol.AcceptedEvent) (t *Transition, next []byte, nextDigest string, err error) {
	return stepTyped(d, s, sBytes, sDigest, e, true)
}

// StepUntraced is StepEncoded for a caller that records no transition
// and keeps nothing a digest binds (a replay, which compares the states
// and effects a run's inputs lead to): the transition's
// PriorSnapshotDigest and TransitionDigest are empty, where StepEncoded
// digests the prior snapshot, the next one, every fact and proposal and
// the transition. Everything else — the transition's other members, the
// next snapshot's bytes, every rejection — is StepEncoded's
// (TestStepUntracedIsStepEncoded).
func StepUntraced(d Domain, s Snapshot, sBytes []byte, e protocol.AcceptedEvent) (t *Transition, next []byte, err error) {
	t, next, _, err = stepTyped(d, s, sBytes, "", e, false)
	return t, next, err
}
