package protocol

// Identity classifies two objects that each carry an identity (an effect
// idempotency key, a derivation id) and a content digest.
type Identity int

const (
	// IdentityDistinct: different identities; the objects are unrelated.
	IdentityDistinct Identity = iota
	// IdentityDuplicate: same identity, same content — an idempotent
	// duplicate delivery that must converge to one logical object.
	IdentityDuplicate
	// IdentityConflict: same identity, different content — a reuse of an
	// identity for other bytes, which must be refused, never merged.
	IdentityConflict
)

func (i Identity) String() string {
	switch i {
	case IdentityDistinct:
		return "DISTINCT"
	case IdentityDuplicate:
		return "IDEMPOTENT_DUPLICATE"
	case IdentityConflict:
		return "IDENTITY_CONFLICT"
	}
	return "Identity(?)"
}

// ClassifyIdentity compares two (identity, content digest) pairs.
func ClassifyIdentity(leftID, leftDigest, rightID, rightDigest string) Identity {
	switch {
	case leftID != rightID:
		return IdentityDistinct
	case leftDigest == rightDigest:
		return IdentityDuplicate
	}
	return IdentityConflict
}
